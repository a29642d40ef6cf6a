"""Stop 72's attacks on masking what a script wrote, where it is kept and read back: the
run log's rows (arguments and error), an approval's call (its prompt, the stop's error the
script reads, ``runs show``), trimmed arguments and get-types' examples masked each run of 8
characters of a configured secret, so a script (or its agent, reading ``runs show`` or
get-types) learnt which of its guesses were runs of a token (performed on a real gateway:
test_attacks_stop72.py). Now a run of a secret in what the script wrote is left as written;
a whole secret, in any spelling, is still masked: a token cannot be guessed whole, and none
lands in the run log, a prompt or a file.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from toolscript.gateway.recentcalls import RecentCalls
from toolscript.gateway.runbook import _call_row, _kept, _trimmed
from toolscript.plumbing.redact import MASK, may_hold_secret, redact, redact_value, sent_text

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
GUESSES = ("ghp_AAAA", "ghp_Zq8x", "R2mK9vT4pL7n", "zq8xr2mk", "Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2e")


def test_a_guess_written_comes_back_as_written_right_or_wrong() -> None:
    for guess in GUESSES:
        arguments = {"text": guess, "list": [f"in:{guess}"]}
        assert redact_value(arguments, [SECRET], written=sent_text(arguments)) == arguments


def test_a_whole_secret_written_is_masked_in_every_spelling() -> None:
    for spelling in (SECRET, base64.b64encode(SECRET.encode()).decode(), SECRET.encode().hex()):
        arguments = {"text": f"use {spelling} now"}
        shown = redact_value(arguments, [SECRET], written=sent_text(arguments))
        assert shown == {"text": f"use {MASK} now"}, shown


def test_what_held_a_run_not_written_is_masked() -> None:
    said = f"no such file: ghp_Zq8x (key {SECRET[10:22]})"
    assert redact(said, [SECRET], written="ghp_Zq8x") == f"no such file: ghp_Zq8x (key {MASK})"


def test_the_run_log_row_gives_back_the_guesses_as_written() -> None:
    guesses = " ".join(GUESSES[:4])
    error = json.dumps({"message": f"no such file: {guesses}"}).encode()
    row = _call_row({"arguments": {"path": guesses}, "error": error}, (SECRET,))
    assert json.loads(row["arguments"]) == {"path": guesses}
    assert row["error"] == f"no such file: {guesses}"
    whole = _call_row({"arguments": {"path": SECRET}, "error": b""}, (SECRET,))
    assert SECRET not in whole["arguments"] and MASK in whole["arguments"]


def test_trimmed_arguments_keep_the_guesses_as_written() -> None:
    arguments = {"guesses": [*GUESSES[:4], "x" * 40_000], "whole": SECRET}
    kept = _trimmed(arguments, (SECRET,))
    assert kept["guesses"][:4] == list(GUESSES[:4]) and kept["whole"] == MASK


def test_get_types_examples_mask_a_whole_secret_but_not_a_guess(tmp_path: Path) -> None:
    calls = RecentCalls(tmp_path, lambda: [SECRET])
    calls.note("fx__echo", {"text": SECRET, "guess": "ghp_Zq8x"}, f"said {SECRET}", agents=True)
    calls.save()
    call = calls.of("fx__echo", agents=True)
    assert call is not None
    assert json.loads(call.arguments) == {"text": MASK, "guess": "ghp_Zq8x"}
    assert json.loads(call.result) == f"said {MASK}"
    assert SECRET not in (tmp_path / "recent-calls.json").read_text()


def test_a_script_kept_or_not_by_its_whole_secrets_only() -> None:
    script = f'// {" ".join(GUESSES[:4])}\nawait tools.fx.plainText({{ text: "x" }});\n'
    assert not may_hold_secret(script, [SECRET], runs=False)
    assert may_hold_secret(script + f"// {SECRET}\n", [SECRET], runs=False)
    assert may_hold_secret(script, [SECRET])  # what held: log bodies still masked of runs


def test_an_answer_kept_for_a_resume_keeps_the_guesses_it_quotes_as_written() -> None:
    """A resume by another gateway (each exec's own, when none runs) replays the answers the
    log keeps: one quoting the guesses came back with the right ones masked."""
    guesses = " ".join(GUESSES[:4])
    entry = {
        "tool": "fx__plain_text",
        "arguments": {"text": guesses},
        "digest": "d",
        "body": json.dumps(f"said {guesses}, as {SECRET}").encode(),
    }
    kept = _kept(entry, "run", (SECRET,))
    assert json.loads(kept["body"]) == f"said {guesses}, as {MASK}"
