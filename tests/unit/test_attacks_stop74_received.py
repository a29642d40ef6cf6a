"""Stop 74: pieces of a secret a run was handed, and pieces of an encoded secret.

A script handed a token by a result sent it on in two halves: stop 72's ``written`` rule
showed each half as written (a run of a secret the script wrote was its guess), so the run
log held the whole token in two pieces. ``received`` masks the runs of a secret the run was
handed whole. And a run of a secret's hex or base64 spelling (half of one cut at a limit)
showed: those runs are masked too, once they spell 8 characters of the secret.
"""

from __future__ import annotations

import base64

from toolscript.gateway.recentcalls import RecentCalls
from toolscript.plumbing.redact import held_secrets, redact, redact_value, sent_text

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
HALF = len(SECRET) // 2


def test_halves_of_a_secret_the_run_was_handed_are_masked() -> None:
    for piece in (SECRET[:HALF], SECRET[HALF:]):
        arguments = {"text": f"a {piece} b"}
        written = sent_text(arguments)
        shown = redact_value(arguments, [SECRET], written=written, received={SECRET})
        assert shown == {"text": "a *** b"}
        assert redact(f"echo: a {piece} b", [SECRET], written=written, received=[SECRET]) == (
            "echo: a *** b"
        )


def test_a_run_never_handed_it_sees_its_guesses_as_written() -> None:
    """The oracle stays closed: right guess or wrong, what a script wrote comes back as
    written when no result handed it the secret."""
    for guess in (SECRET[:HALF], "ghp_AAAAAAAA", SECRET[4:12]):
        arguments = {"text": guess}
        assert redact_value(arguments, [SECRET], written=sent_text(arguments)) == arguments


def test_which_secrets_a_result_holds_whole_in_any_spelling() -> None:
    other = "sk-live-0123456789abcdefXYZ"
    assert held_secrets(f'{{"env":"{SECRET}"}}', [SECRET, other]) == {SECRET}
    assert held_secrets(base64.b64encode(SECRET.encode()), [SECRET, other]) == {SECRET}
    assert held_secrets(other.encode().hex(), [SECRET, other]) == {other}
    assert held_secrets(f"only a run {SECRET[:HALF]}", [SECRET, other]) == set()
    assert held_secrets("nothing", []) == set()


def test_half_of_an_encoded_secret_is_masked() -> None:
    encoded = base64.b64encode(SECRET.encode()).decode()
    hexed = SECRET.encode().hex()
    for piece in (encoded[:30], encoded[-30:], hexed[:40], hexed[-40:], hexed.upper()[10:50]):
        assert redact(f"Basic {piece}…", [SECRET]) == "Basic ***…", piece
    # behind a user name: what "user:" and the alignment decide stays
    basic = base64.b64encode(f"user:{SECRET}".encode()).decode()
    assert redact(f"Basic {basic[:30]}…", [SECRET]) == "Basic dXNlcjp***…"


def test_a_short_piece_of_an_encoded_secret_is_other_text() -> None:
    """8 hex digits are 4 bytes: "ghp_" of every GitHub token, not this one's."""
    other_token = "ghp_" + "A" * 36
    hexed = other_token.encode().hex()
    assert redact(hexed, [SECRET]) == hexed
    assert redact("deadbeef cafebabe 0123456789", [SECRET]) == "deadbeef cafebabe 0123456789"


def test_get_types_example_of_a_run_handed_the_secret() -> None:
    recent = RecentCalls(None, lambda: [SECRET])
    arguments = {"text": f"c {SECRET[HALF:]} d"}
    recent.note("fx__plain_text", arguments, arguments["text"], received={SECRET})
    recent.note("fx__other", arguments, arguments["text"])
    handed = recent.of("fx__plain_text")
    assert handed is not None
    assert SECRET[HALF:] not in handed.arguments + handed.result, handed
    guessed = recent.of("fx__other")
    assert guessed is not None and SECRET[HALF:] in guessed.arguments, guessed
