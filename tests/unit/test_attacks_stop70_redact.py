"""Stop 70's attack on masking by a script: a server's error quoting what the call sent
(``no such file: <path>``) came back with each run of 8 characters of a configured secret
masked, so the script learnt which of its guesses were runs of the secret: ``ghp_`` and 4
more characters (batched, thousands a call), then one more at a time, read the whole token
(performed on a real gateway: test_attacks_stop70.py). Now what the script sent is left as it
sent it, in any case; what the server adds is masked as before.
"""

from __future__ import annotations

from toolscript.plumbing.redact import MASK, redact, redact_value

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"


def test_a_guess_the_script_sent_comes_back_as_sent_right_or_wrong() -> None:
    for guess in ("ghp_AAAA", "ghp_Zq8x", "R2mK9vT4pL7n", "zq8xr2mk"):
        sent = f'{{"path": "/data/{guess}"}}'
        said = f"ENOENT: open '/data/{guess}'"
        assert redact(said, [SECRET], sent=sent) == said
        assert redact_value({"text": said}, [SECRET], sent=sent) == {"text": said}


def test_a_short_secret_guessed_whole_comes_back_as_sent() -> None:
    assert redact("bad pin 4821", ["4821"], sent='{"pin_guess": "4821"}') == "bad pin 4821"


def test_what_held_what_the_server_adds_is_masked() -> None:
    sent = '{"path": "/data/ghp_Zq8x"}'
    said = f"ENOENT: open '/data/ghp_Zq8x' (as {SECRET}, key {SECRET[10:22]})"
    shown = redact(said, [SECRET], sent=sent)
    assert SECRET not in shown and SECRET[10:22] not in shown
    assert shown == f"ENOENT: open '/data/ghp_Zq8x' (as {MASK}, key {MASK})"


def test_what_held_without_what_was_sent_every_run_is_masked() -> None:
    assert redact("open '/data/ghp_Zq8x'", [SECRET]) == f"open '/data/{MASK}'"
