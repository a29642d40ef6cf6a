"""Repairs of tool lists and call results from servers that bend the MCP spec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp_types import methods

from tests.helpers import CORPUS, corpus_files
from toolscript.upstream.tolerant import (
    ANY_ARGUMENTS,
    repair_call_result,
    repair_listing,
    repair_tool_list,
)

VERSION = "2025-11-25"


def _accepted(method: str, result: dict[str, Any]) -> None:
    methods.validate_server_result(method, VERSION, result)


def test_the_sdk_rejects_a_whole_list_for_one_empty_schema() -> None:
    """The failure the repair exists for: without it, one tool costs all of them."""
    listing = {
        "tools": [
            {"name": "ok", "inputSchema": {"type": "object"}},
            {"name": "whoami", "inputSchema": {}},
        ]
    }
    with pytest.raises(Exception, match="inputSchema"):
        _accepted("tools/list", listing)
    repaired, warnings = repair_tool_list(listing)
    _accepted("tools/list", repaired)
    assert [tool["name"] for tool in repaired["tools"]] == ["ok", "whoami"]
    assert repaired["tools"][1]["inputSchema"] == ANY_ARGUMENTS
    assert warnings == [
        "tool 'whoami': inputSchema is empty ({}); served as an object that takes any arguments"
    ]


@pytest.mark.parametrize(
    ("schema", "served"),
    [
        (None, ANY_ARGUMENTS),
        ({}, ANY_ARGUMENTS),
        ({"type": "string"}, ANY_ARGUMENTS),
        ("object", ANY_ARGUMENTS),
        ({"type": "object", "properties": ["a"]}, ANY_ARGUMENTS),
        (
            {"properties": {"a": {"type": "string"}}},
            {"type": "object", "properties": {"a": {"type": "string"}}},
        ),
    ],
)
def test_unusable_input_schemas_become_object_schemas(schema: Any, served: dict[str, Any]) -> None:
    tool: dict[str, Any] = {"name": "t"}
    if schema is not None:
        tool["inputSchema"] = schema
    repaired, warnings = repair_tool_list({"tools": [tool]})
    _accepted("tools/list", repaired)
    assert repaired["tools"][0]["inputSchema"] == served
    assert len(warnings) == 1 and warnings[0].startswith("tool 't': inputSchema")


def test_nameless_and_duplicate_tools_are_skipped_with_a_warning() -> None:
    listing = {
        "tools": [
            {"name": "a", "inputSchema": {"type": "object"}},
            {"inputSchema": {"type": "object"}},
            {"name": "", "inputSchema": {"type": "object"}},
            "not a tool",
            {"name": "a", "description": "again", "inputSchema": {"type": "object"}},
        ]
    }
    repaired, warnings = repair_tool_list(listing)
    _accepted("tools/list", repaired)
    assert [tool["name"] for tool in repaired["tools"]] == ["a"]
    assert "description" not in repaired["tools"][0]
    assert warnings == [
        "tool #2 has no name; skipped",
        "tool #3 has no name; skipped",
        "tool #4 has no name; skipped",
        "tool 'a' is listed twice; the second one is skipped",
    ]


def test_bad_optional_fields_are_dropped_and_good_ones_kept() -> None:
    tool = {
        "name": "t",
        "description": 5,
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": "q"},
        "outputSchema": {},
        "annotations": {"readOnlyHint": True},
        "icons": "nope",
        "x-vendor": {"kept": True},
    }
    repaired, warnings = repair_tool_list({"tools": [tool]})
    _accepted("tools/list", repaired)
    served = repaired["tools"][0]
    assert served["inputSchema"] == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert "description" not in served and "outputSchema" not in served and "icons" not in served
    assert served["annotations"] == {"readOnlyHint": True}
    assert served["x-vendor"] == {"kept": True}
    assert len(warnings) == 1, "one warning per tool"
    for problem in (
        '"required" is not a list',
        "outputSchema is empty",
        "description is not a string",
        "icons",
    ):
        assert problem in warnings[0]


def test_a_good_list_is_left_alone() -> None:
    listing = {
        "tools": [
            {"name": "t", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
        ],
        "nextCursor": "2",
    }
    repaired, warnings = repair_tool_list(listing)
    assert repaired == listing and warnings == []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/toolcorpus is not beside the repository")
def test_every_corpus_tool_survives() -> None:
    """Every tool of every file of the public corpus, as it is, is served after repair."""
    files = corpus_files()
    assert len(files) > 100
    for path in files:
        _corpus_file_survives(path)


def _corpus_file_survives(path: Path) -> None:
    tools = json.loads(path.read_text())
    repaired, _ = repair_tool_list({"tools": tools})
    _accepted("tools/list", repaired)
    names = {
        tool["name"]
        for tool in tools
        if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"].strip()
    }
    assert {tool["name"] for tool in repaired["tools"]} == names


@pytest.mark.parametrize(
    ("result", "content", "problems"),
    [
        ({}, [], 1),
        ({"content": "plain"}, [{"type": "text", "text": "plain"}], 1),
        ({"content": [{"type": "text"}]}, [{"type": "text", "text": '{"type": "text"}'}], 1),
        (
            {"content": [{"type": "text", "text": "x", "annotations": 5}]},
            [{"type": "text", "text": "x"}],
            1,
        ),
        (
            {"content": [{"type": "weird", "value": 1}]},
            [{"type": "text", "text": '{"type": "weird", "value": 1}'}],
            1,
        ),
        (
            {"content": [{"type": "text", "text": "ok"}], "extra": 1},
            [{"type": "text", "text": "ok"}],
            0,
        ),
    ],
)
def test_call_results_keep_what_can_be_read(result: Any, content: list[Any], problems: int) -> None:
    repaired, warnings = repair_call_result(result)
    _accepted("tools/call", repaired)
    assert repaired["content"] == content
    assert len(warnings) == problems, warnings


def test_call_result_fields_are_repaired_not_refused() -> None:
    repaired, _ = repair_call_result(
        {"content": [], "structuredContent": [1, 2], "isError": 1, "_meta": 4}
    )
    _accepted("tools/call", repaired)
    assert repaired["structuredContent"] == {"result": [1, 2]}
    assert repaired["isError"] is True
    assert "_meta" not in repaired
    assert mcp_types.CallToolResult.model_validate(repaired, by_name=False).is_error


def test_a_property_that_is_no_schema_costs_only_that_property() -> None:
    """``mcp_types.Tool`` takes any dict as ``inputSchema``, but the SDK checks a listing
    against its protocol version's model, whose properties are schemas: one ``"y": 5``
    cost a server every tool (a pydantic dump as its reason)."""
    listing = {
        "tools": [
            {"name": "ok", "inputSchema": {"type": "object"}},
            {
                "name": "bad",
                "inputSchema": {
                    "$schema": 7,
                    "type": "object",
                    "properties": {"x": {"type": "string"}, "y": 5, "z": "number"},
                },
                "outputSchema": {"type": "object", "properties": {"r": None}},
            },
        ]
    }
    for version in ("2024-11-05", "2025-11-25"):
        with pytest.raises(Exception, match="properties"):
            methods.validate_server_result("tools/list", version, listing)
    repaired, warnings = repair_tool_list(listing)
    for version in ("2024-11-05", "2025-11-25"):
        methods.validate_server_result("tools/list", version, repaired)
    served = repaired["tools"][1]
    assert served["inputSchema"] == {
        "type": "object",
        "properties": {"x": {"type": "string"}, "y": {}, "z": {}},
    }
    assert served["outputSchema"] == {"type": "object", "properties": {"r": {}}}
    assert warnings == [
        'tool \'bad\': inputSchema: not a schema: property "y" (5), "z" ("number"); it'
        ' takes any value; its "$schema" is not a string; ignored; outputSchema: not a'
        ' schema: property "r" (null); it takes any value'
    ]


def test_properties_that_are_no_object_are_named_as_the_reason() -> None:
    """A schema of type object whose "properties" is a list was said to be "of type
    "object", not an object"."""
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": ["a"]}}
    _, warnings = repair_tool_list({"tools": [tool]})
    assert warnings == [
        "tool 't': inputSchema is of \"properties\" that are not an object (list); served as"
        " an object that takes any arguments"
    ]


def test_a_bad_prompt_resource_or_template_costs_only_itself() -> None:
    """One prompt whose arguments are a string, one resource without a uri: the SDK refused
    the whole list (a pydantic dump in `list-prompts`' error and the gateway's warnings)."""
    prompts = {
        "prompts": [
            {"name": "good", "arguments": [{"name": "topic"}]},
            {"name": "bad", "arguments": "topic"},
        ]
    }
    resources = {"resources": [{"uri": "file:///a", "name": "a"}, {"name": "c"}, {"uri": "x://y"}]}
    templates = {"resourceTemplates": [{"uriTemplate": "x://{id}", "name": "t"}, {"name": "bad"}]}
    for method, listing in (
        ("prompts/list", prompts),
        ("resources/list", resources),
        ("resources/templates/list", templates),
    ):
        with pytest.raises(Exception, match="validation error"):
            _accepted(method, listing)
    repaired, warnings = repair_listing("prompts/list", prompts)
    _accepted("prompts/list", repaired)
    assert repaired["prompts"] == [prompts["prompts"][0], {"name": "bad"}]
    assert warnings == ["prompt 'bad': arguments is not valid MCP; ignored"]
    repaired, warnings = repair_listing("resources/list", resources)
    _accepted("resources/list", repaired)
    assert repaired["resources"] == [{"uri": "file:///a", "name": "a"}]
    assert warnings == [
        "resource #2 has no uri; skipped",
        "resource 'x://y' is not valid MCP; skipped",
    ]
    repaired, warnings = repair_listing("resources/templates/list", templates)
    _accepted("resources/templates/list", repaired)
    assert warnings == ["resource template #2 has no uriTemplate; skipped"]
    assert repair_listing("initialize", {"x": 1}) == ({"x": 1}, [])


def test_an_initialize_result_without_capabilities_or_a_version_is_filled_in() -> None:
    """Servers Claude Code runs answer initialize without capabilities, or with a serverInfo
    that has no version: the SDK refused them (the server failed with a pydantic dump)."""
    sent = {"protocolVersion": VERSION, "serverInfo": {"name": "p"}}
    with pytest.raises(Exception, match="validation error"):
        _accepted("initialize", sent)
    repaired, warnings = repair_listing("initialize", sent)
    _accepted("initialize", repaired)
    assert repaired["capabilities"] == {} and repaired["serverInfo"]["version"] == "unknown"
    assert warnings == [
        "initialize: capabilities missing; its prompts and resources are asked for, and"
        " served where it answers",
        "initialize: serverInfo.version missing; served as 'unknown'",
    ]
    whole = {
        "protocolVersion": VERSION,
        "capabilities": {},
        "serverInfo": {"name": "p", "version": "1"},
    }
    assert repair_listing("initialize", whole) == (whole, [])
