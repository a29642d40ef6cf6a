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


def test_a_null_optional_argument_is_the_default_and_a_null_required_one_is_not() -> None:
    # clients that turn tool schemas into OpenAI's strict mode send null for each optional
    # argument the model leaves out: that was refused ("must be a number, got null")
    from toolscript.mcpface.server import without_null_options

    given = without_null_options("execute", {"code": "return 1", "timeout": None})
    assert given == {"code": "return 1"}
    assert _argument_problem("execute", given) is None
    kept = without_null_options("execute", {"code": None, "nope": None})
    assert _argument_problem("execute", kept) is not None


def test_a_value_in_quotes_or_one_string_for_a_list_is_told_how_to_write_it() -> None:
    assert _argument_problem("execute", {"code": "return 1", "timeout": "30"}) == (
        "invalid timeout: must be a number, got a string (write 30, without the quotes)"
    )
    assert _argument_problem("get_types", {"tools": "time.convert_time"}) == (
        'invalid tools: must be an array, got a string (a list: ["time.convert_time"])'
    )
    assert _argument_problem("get_types", {"tools": '["time.convert_time"]'}) == (
        'invalid tools: must be an array, got a string (write ["time.convert_time"], '
        "without the quotes)"
    )
    # words in quotes are no number: nothing to suggest
    assert _argument_problem("execute", {"code": "return 1", "timeout": "soon"}) == (
        "invalid timeout: must be a number, got a string"
    )
