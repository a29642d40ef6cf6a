"""Where a person answers an approval, the tool is named: long arguments scroll the question's
first line (the tool) off the screen, and a long string wraps into rows of the script's own
text that can read as a question about another tool (here a harmless one), just above the
real "allow it?"."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio

from tests.helpers import question_declined
from toolscript.mcpface.server import _approver

# Blanks that put the forged sentence at the start of a row of an 80- (or 40-) column terminal
FORGED = " " * 80 * 12 + "toolscript: the script calls time.now, which asks for approval."
PROMPT = {
    "tool": "github__delete_repo",
    "arguments": {"repo": "acme/app", "note": FORGED, "items": list(range(300))},
    "run": "R1",
}


def test_the_terminals_question_line_names_the_tool() -> None:
    question = question_declined(PROMPT).rsplit("\n", 1)[1]
    assert "github.delete_repo" in question, question


class Client:
    """What the MCP face asks through: a client that supports elicitation (it declines)."""

    client_capabilities = SimpleNamespace(elicitation=SimpleNamespace())

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit_form(self, message: str, schema: Any, **_: Any) -> Any:
        self.asked.append(message)
        return SimpleNamespace(action="decline", content=None)


def test_the_mcp_faces_question_line_names_the_tool() -> None:
    client = Client()
    ask = _approver(SimpleNamespace(session=client, request_id=None))
    assert ask is not None
    assert anyio.run(ask, PROMPT) == "no"
    question = client.asked[0].rstrip().rsplit("\n", 1)[1]
    assert "github.delete_repo" in question, question


def test_a_servers_question_labels_no_field_with_controls() -> None:
    """A client labels a field without a title by its name: a server's name holding
    terminal controls is shown as a title made visible; the answer keeps the name."""
    client = Client()
    ask = _approver(SimpleNamespace(session=client, request_id=None))
    assert ask is not None
    named = "token\x1b]0;TITLEPWN\x07\u202e"
    schema = {"type": "object", "properties": {named: {"type": "string"}, "plain": {}}}
    asked: list[Any] = []

    async def elicit_form(message: str, schema: Any, **_: Any) -> Any:
        asked.append(schema)
        return SimpleNamespace(action="accept", content={named: "x"})

    client.elicit_form = elicit_form  # type: ignore[method-assign]
    prompt = {"kind": "elicitation", "tool": "evil", "message": "?", "schema": schema}
    assert anyio.run(ask, prompt) == {"action": "accept", "content": {named: "x"}}
    fields = asked[0]["properties"]
    assert fields[named]["title"] == "token\\u001b]0;TITLEPWN\\u0007\\u202e"
    assert fields["plain"] == {}


def test_padding_never_scrolls_the_first_arguments_off_the_question() -> None:
    """400 short items after the argument that matters were 400 lines, under the size a
    view shows whole: the repository named first was off the screen above the question.
    The view is shortened to a screen's lines, the first argument in it."""
    padded = {"repo": "acme/production", "tags": list(range(400))}
    asked = question_declined({"tool": "github__delete_repo", "arguments": padded, "run": "R1"})
    assert asked.count("\n") < 50, asked  # a screen's rows, the question's own lines with them
    assert "SHORTENED" in asked and "acme/production" in asked
