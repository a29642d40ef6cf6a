"""Stop 73's attacks on ``redact``'s ``sent`` (what a script sent is given back as sent).

A run of a secret was left as it was when its first 8 characters were in what the script
sent, and masked from the first place whose 8 characters were not: a server's error holding
a run of its token the server added (``token ghp_Zq8xR2mK9vT4... rejected``) came back
``g***`` for a right guess of its first 8 characters, ``***`` for a wrong one, then ``gh***``
for the next character guessed right: the script read the run one character a call (a
binary search of a batch of guesses: a few calls a character). Now a run is given back only
when the script sent all of it, as far as the text holds it.

A value holding a quote or a backslash was in ``sent`` only JSON-escaped, so a server quoting
it as it is had a guess of it masked by whether it was a run of a secret (a password's run
holding a quote); ``sent_text`` holds each string as it is too.
"""

from __future__ import annotations

import json

from toolscript.plumbing.redact import MASK, redact, redact_value, sent_text

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
ADDED = SECRET[:20]  # what the server shows of its token: "ghp_Zq8xR2mK9vT4pL7n"


def _error(guess: str) -> str:
    return f"ENOENT: open '/data/{guess}' (token {ADDED}... rejected)"


def _shown(guesses: list[str]) -> str:
    sent = sent_text({"paths": [f"/data/{guess}" for guess in guesses]})
    return redact(_error(guesses[0]), [SECRET], sent=sent)


def test_a_right_guess_of_a_run_the_server_added_shows_the_same_as_a_wrong_one() -> None:
    for right, wrong in [
        ("ghp_Zq8x", "ghp_AAAA"),  # its first 8 characters
        ("ghp_Zq8xR", "ghp_Zq8xQ"),  # and one more
        ("GHP_ZQ8XR2MK", "GHP_ZQ8XR2MJ"),  # in another case
        ("R2mK9vT4", "R2mK9vT5"),  # from its middle
        ("T4pL7n", "T4pL7m"),  # its end, shorter than a run
    ]:
        shown_right = _shown([right]).replace(right, "GUESS")
        shown_wrong = _shown([wrong]).replace(wrong, "GUESS")
        assert shown_right == shown_wrong, (right, shown_right, shown_wrong)
        assert f"(token {MASK}... rejected)" in shown_right, shown_right


def test_a_batch_of_guesses_tells_nothing_either() -> None:
    right = [SECRET[:8], SECRET[1:9], SECRET[2:10], SECRET[4:16], SECRET[8:20]]
    shown = redact(_error("x"), [SECRET], sent=sent_text({"guesses": right}))
    assert shown == _error("x").replace(ADDED, MASK)


def test_the_same_run_twice_once_echoed_once_added() -> None:
    guess = SECRET[:12]
    said = f"no such file: {guess} (token {guess}... rejected)"
    # the text cannot tell the echo from the server's: both are what the script sent
    assert redact(said, [SECRET], sent=sent_text({"path": guess})) == said
    # but the server's longer run is masked whole
    said = f"no such file: {guess} (token {ADDED}... rejected)"
    assert redact(said, [SECRET], sent=sent_text({"path": guess})) == (
        f"no such file: {guess} (token {MASK}... rejected)"
    )


def test_what_held_a_guess_echoed_comes_back_as_sent_right_or_wrong() -> None:
    for guess in ("ghp_AAAA", "ghp_Zq8x", "R2mK9vT4pL7n", "zq8xr2mk", SECRET):
        said = f"ENOENT: open '/data/{guess}'"
        sent = sent_text({"path": f"/data/{guess}"})
        assert redact(said, [SECRET], sent=sent) == said
        assert redact_value({"text": said}, [SECRET], sent=sent) == {"text": said}


PASSWORD = 'hunter"2\\xyzzy-plugh'  # a password holding a quote and a backslash


def test_a_value_quoted_as_it_is_comes_back_as_sent() -> None:
    for guess in ('er"2\\xyzz', 'er"2\\xyzw'):  # right, wrong
        said = f"bad value: {guess}"
        sent = sent_text({"value": guess})
        assert json.dumps({"value": guess}) in sent
        assert redact(said, [PASSWORD], sent=sent) == said


def test_sent_text_holds_keys_and_nested_strings() -> None:
    sent = sent_text({'we"ird': ["a\\b", {"c": 'd"e'}]})
    for piece in ('we"ird', "a\\b", 'd"e'):
        assert piece in sent
