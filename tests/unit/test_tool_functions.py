"""What a Python tool file's writer is told about a function: one that is not a tool, and a
result that JSON cannot hold (upstream/worker.py, pure logic on a module made here)."""

from __future__ import annotations

import types

import pytest

from toolscript.upstream.worker import ToolContext, call_function, describe_module


class Thing:
    pass


def module_of(**functions: object) -> types.ModuleType:
    module = types.ModuleType("tool_file")
    for name, function in functions.items():
        function.__module__ = "tool_file"
        setattr(module, name, function)
    return module


def test_a_public_function_without_type_hints_is_noted_not_silently_left_out() -> None:
    def shout(text: str) -> str:
        return text.upper()

    def whisper(text):  # type: ignore[no-untyped-def]
        return text.lower()

    def _helper(text):  # type: ignore[no-untyped-def]
        return text

    notes: list[str] = []
    tools = describe_module(module_of(shout=shout, whisper=whisper, _helper=_helper), notes)
    assert [tool["name"] for tool in tools] == ["shout"]
    assert len(notes) == 1
    assert notes[0].startswith("whisper() is not a tool: it has no type hints")
    assert "_whisper" in notes[0]


def test_a_result_json_cannot_hold_names_its_class_not_the_gateways_module() -> None:
    def make(x: int) -> object:
        return {"thing": Thing()}

    with pytest.raises(TypeError) as raised:
        call_function(make, {"x": 1}, ToolContext())
    message = str(raised.value)
    assert message.startswith("make() returned a value JSON cannot hold (a Thing)")
    assert "PydanticSerializationError" not in message and "test_tool_functions" not in message


def test_bytes_that_are_not_text_say_how_to_return_them() -> None:
    # The script saw "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position
    # 0": pydantic writes bytes as UTF-8 text, which a PNG's or a zip's are not.
    def thumbnail(size: int) -> bytes:
        return b"\x89PNG\xff" * size

    def greeting() -> bytes:
        return b"hello"

    with pytest.raises(TypeError) as raised:
        call_function(thumbnail, {"size": 1}, ToolContext())
    message = str(raised.value)
    assert message.startswith("thumbnail() returned bytes that are not UTF-8 text")
    assert "base64.b64encode(data).decode()" in message and "codec" not in message
    assert call_function(greeting, {}, ToolContext()) == "hello"  # text is written as text


def test_a_type_hint_naming_nothing_the_file_has_is_named() -> None:
    # pydantic said "`f_arguments` is not fully defined; you should define `Frame`, then
    # call `f_arguments.model_rebuild()`".
    def table(rows: Frame) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 0

    notes: list[str] = []
    assert describe_module(module_of(table=table), notes) == []
    assert notes == [
        "table() is not a tool: its type hints name 'Frame', which the file neither defines "
        "nor imports"
    ]


def test_a_type_hint_json_cannot_carry_is_named_with_what_to_use() -> None:
    # pydantic said "Unable to generate pydantic-core schema for <class 'tool_file.Thing'>.
    # Set `arbitrary_types_allowed=True` in the model_config ...": a tool file has none.
    def weird(t: Thing) -> str:
        return "x"

    notes: list[str] = []
    assert describe_module(module_of(weird=weird), notes) == []
    assert len(notes) == 1
    assert notes[0].startswith(
        "weird() is not a tool: its type hints use Thing, a class JSON cannot carry (type its "
        "parameters and result with str, int, float, bool, list, dict"
    )
    assert "_weird" in notes[0]
    assert "arbitrary_types_allowed" not in notes[0] and "test_tool_functions" not in notes[0]


def test_a_tool_taking_star_args_is_noted_they_receive_nothing() -> None:
    # `def total(*numbers: int)` became a tool whose numbers were dropped without a word:
    # a call's arguments are named, and pydantic's model of it has none for *numbers.
    def total(*numbers: int, **options: str) -> int:
        return sum(numbers)

    notes: list[str] = []
    tools = describe_module(module_of(total=total), notes)
    assert [tool["name"] for tool in tools] == ["total"]
    assert notes == [
        "total() is a tool without its *numbers and **options: a tool's arguments are "
        "named, so they receive none; give each a parameter of its own (as in "
        "`def total(items: list[str])`)"
    ]
