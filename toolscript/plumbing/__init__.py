"""Plumbing every layer uses: paths, private files, cache files, processes, JSON positions,
redaction, the Deno binary."""
