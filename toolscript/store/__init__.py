"""What is kept on disk for the user: the run log, tokens, trust, saved scripts, kept output."""
