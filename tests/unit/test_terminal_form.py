"""A server's question (MCP elicitation) asked on exec's terminal: a line per field, typed
as the schema says, what the server sent shown with its control characters visible."""

from __future__ import annotations

import io
import os
from typing import Any

from toolscript.execution.runhandle import terminal_answer, terminal_form

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name\x1b]0;pwned\x07"},
        "count": {"type": "integer", "default": 3},
        "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
    },
    "required": ["name"],
}


def ask(typed: bytes, schema: Any = SCHEMA) -> tuple[dict[str, Any], str]:
    """``terminal_form`` reading ``typed`` from a pipe (as from a terminal's descriptor)."""
    reading, writing = os.pipe()
    os.write(writing, typed)
    os.close(writing)
    out = io.StringIO()
    prompt = {"kind": "elicitation", "tool": "srv", "message": "Who?\x1b[2J", "schema": schema}
    with os.fdopen(reading) as source:
        answer = terminal_form(prompt, source, out, timeout=5)
    return answer, out.getvalue()


def test_each_field_is_typed_as_its_schema_says() -> None:
    answer, shown = ask(b"y\nAda\n\nyes\na, b\n")
    assert answer == {
        "action": "accept",
        "content": {"name": "Ada", "count": 3, "ok": True, "tags": ["a", "b"]},
    }
    assert "one of a, b" in shown and "default 3" in shown and "required" in shown


def test_a_required_field_left_empty_is_asked_again_and_a_wrong_value_too() -> None:
    answer, shown = ask(b"y\n\nAda\nlots\n7\nmaybe\nno\n\n")
    assert answer["content"] == {"name": "Ada", "count": 7, "ok": False}
    assert "(required)" in shown and "answer yes or no" in shown


def test_declined_or_unanswered_questions() -> None:
    assert ask(b"n\n")[0] == {"action": "decline"}
    assert ask(b"")[0]["action"] in ("decline", "cancel")  # the terminal closed


def test_what_the_server_sent_is_shown_not_obeyed() -> None:
    _, shown = ask(b"n\n")
    assert "\x1b" not in shown and "\\u001b[2J" in shown


def test_terminal_answer_takes_questions_to_the_form() -> None:
    reading, writing = os.pipe()
    os.write(writing, b"n\n")
    os.close(writing)
    with os.fdopen(reading) as source:
        prompt = {"kind": "elicitation", "tool": "srv", "message": "?", "schema": SCHEMA}
        assert terminal_answer(prompt, stdin=source, stderr=io.StringIO()) == {"action": "decline"}
