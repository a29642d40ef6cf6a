"""The MCP face's answer to a call with wrong argument names.

A model that called ``execute`` with ``{"script": ...}`` was told only ``missing required
property "code"``: not that ``script`` is no argument, nor which ones are. The answer names
the missing property, the unknown ones and those allowed.
"""

from __future__ import annotations

from toolscript.mcpface.server import _argument_problem


def test_a_wrong_name_is_said_with_the_missing_one_and_those_allowed() -> None:
    assert _argument_problem("execute", {"script": "return 1"}) == (
        'invalid arguments: missing required property "code"; unknown property "script" '
        "(allowed: code, timeout)"
    )
    said = _argument_problem("get_types", {"server": "time", "tool": "convert_time"})
    assert said is not None
    assert 'missing required property "tools"' in said
    assert 'unknown properties "server", "tool" (allowed: tools, example)' in said


def test_right_names_and_one_wrong_value_are_said_as_before() -> None:
    assert _argument_problem("execute", {"code": "return 1"}) is None
    assert (
        _argument_problem("execute", {"code": 1})
        == "invalid code: must be a string, got an integer"
    )
    assert _argument_problem("execute", {}) == 'invalid arguments: missing required property "code"'
