"""A resource read is asked about as ``server.resource:URI``, the URI the script's: line
breaks in it (``files://secrets/key#`` then a hundred of them, then ``pub/readme``) pushed
the URI's start off the screen, leaving a harmless one as the first line of the question.
Every line of the question is toolscript's own: the URI's breaks and tabs are escapes."""

from __future__ import annotations

from tests.helpers import question_declined
from toolscript.store.approvalview import visible_text

URI = "files://secrets/key#" + "\n" * 100 + "\tfiles://pub/readme"


def test_a_uri_s_line_breaks_stay_on_the_question_s_first_line() -> None:
    prompt = {"tool": f"docs__resource:{URI}", "arguments": {"uri": URI}, "run": "R1"}
    shown = question_declined(prompt)
    first = shown.strip("\n").split("\n")[0]
    assert first.startswith("toolscript: the script calls docs.resource:files://secrets/key#")
    assert first.endswith("files://pub/readme, which asks for approval.")
    assert "\\u000a" * 100 + "\\u0009" in first
    assert "\t" not in shown


def test_the_escapes_are_only_for_what_a_line_cannot_hold() -> None:
    assert visible_text("github__merge_pull_request") == "github__merge_pull_request"
