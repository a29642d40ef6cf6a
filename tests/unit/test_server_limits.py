"""Bounds on the size of what a server lists (upstream/limits.py): texts cut with a marker,
schemas too large to type left open with a note, outsized names skipped, and nothing that
a real server sends touched."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import corpus_files
from toolscript.upstream.limits import (
    BRIEF_LIMIT,
    ENUM_LIMIT,
    LISTING_LIMIT,
    NAME_LIMIT,
    SCHEMA_LIMIT,
    TEXT_LIMIT,
    bound_listing,
    cut_text,
)
from toolscript.upstream.tolerant import ANY_ARGUMENTS

HUGE = 20_000_000


def _tool(name: str = "t", **fields: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}} | fields


def _one(method: str, key: str, entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    bounded, cuts = bound_listing(method, {key: [entry]})
    [kept] = bounded[key]
    return kept, cuts.warnings()


def test_a_huge_tool_description_is_cut_with_a_marker_and_one_warning() -> None:
    listing = {"tools": [_tool("a", description="x" * HUGE), _tool("b", description="short")]}
    bounded, cuts = bound_listing("tools/list", listing)
    cut = bounded["tools"][0]["description"]
    assert cut == "x" * TEXT_LIMIT + f"… [cut: {HUGE - TEXT_LIMIT:,} more characters]"
    assert bounded["tools"][1] == listing["tools"][1]
    assert cuts.warnings() == {
        "tool descriptions": "tool descriptions: 1 over 32,768 characters cut; "
        "the largest had 20,000,000 characters"
    }


def test_many_cuts_of_one_kind_are_one_warning() -> None:
    listing = {"tools": [_tool(str(i), description="x" * (TEXT_LIMIT + i + 1)) for i in range(50)]}
    _, cuts = bound_listing("tools/list", listing)
    assert list(cuts.warnings().values()) == [
        "tool descriptions: 50 over 32,768 characters cut; the largest had 32,818 characters"
    ]


def test_a_text_within_its_bound_is_kept_whole() -> None:
    assert cut_text("x" * TEXT_LIMIT) == "x" * TEXT_LIMIT


def test_parameter_descriptions_deep_in_a_schema_are_cut_and_the_types_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "d" * HUGE},
            "nested": {
                "type": "object",
                "properties": {"deep": {"type": "integer", "title": "t" * HUGE}},
                "required": ["deep"],
            },
            # a property named as a keyword is a schema, never a text
            "description": {"type": "string", "description": "a property"},
        },
        "required": ["q"],
    }
    kept, warnings = _one("tools/list", "tools", _tool(inputSchema=schema))
    bounded = kept["inputSchema"]
    assert bounded["properties"]["q"]["type"] == "string"
    assert bounded["properties"]["q"]["description"].endswith(
        f"… [cut: {HUGE - TEXT_LIMIT:,} more characters]"
    )
    assert bounded["properties"]["nested"]["properties"]["deep"]["type"] == "integer"
    assert len(bounded["properties"]["nested"]["properties"]["deep"]["title"]) < TEXT_LIMIT + 50
    assert bounded["properties"]["description"] == schema["properties"]["description"]
    assert bounded["required"] == ["q"]
    assert list(warnings) == ["parameter descriptions"]


def test_an_absurdly_large_input_schema_is_served_open_with_a_note() -> None:
    wide = {f"p{i}": {"type": "string", "enum": ["v" * 40] * 10} for i in range(12_000)}
    tool = _tool(description="Finds.", inputSchema={"type": "object", "properties": wide})
    assert len(json.dumps(tool)) > 5_000_000
    kept, warnings = _one("tools/list", "tools", tool)
    assert kept["inputSchema"] == ANY_ARGUMENTS
    assert kept["description"].startswith("Finds.\n\n[arguments not typed: the server's input")
    assert "tool input schemas" in warnings


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (
            {"type": "object", "properties": {"s": {"type": "string", "const": "c" * 300_000}}},
            "characters",
        ),
        (
            {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(25_000)}},
            "objects and arrays",
        ),
    ],
)
def test_a_schema_past_a_bound_is_left_open_saying_which(schema: dict[str, Any], why: str) -> None:
    kept, _ = _one("tools/list", "tools", _tool(inputSchema=schema))
    assert kept["inputSchema"] == ANY_ARGUMENTS
    assert why in kept["description"]


def test_a_deeply_nested_schema_is_left_open() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(400):
        schema = {"type": "object", "properties": {"a": schema}}
    kept, _ = _one("tools/list", "tools", _tool(inputSchema=schema))
    assert kept["inputSchema"] == ANY_ARGUMENTS
    assert "levels deep" in kept["description"]


def test_an_outsized_output_schema_is_dropped_with_a_note() -> None:
    output = {"type": "object", "properties": {"r": {"type": "string", "const": "c" * 300_000}}}
    kept, warnings = _one("tools/list", "tools", _tool(outputSchema=output))
    assert "outputSchema" not in kept
    assert "[result not typed" in kept["description"]
    assert "tool output schemas" in warnings


def test_an_enum_of_too_many_values_widens_to_its_type() -> None:
    values = [f"v{i}" for i in range(ENUM_LIMIT + 1)]
    schema = {"type": "object", "properties": {"e": {"type": "string", "enum": values}}}
    kept, warnings = _one("tools/list", "tools", _tool(inputSchema=schema))
    widened = kept["inputSchema"]["properties"]["e"]
    assert widened["type"] == "string" and "enum" not in widened
    assert f"one of {ENUM_LIMIT + 1:,} values" in widened["description"]
    assert "enums" in warnings


def test_outsized_defaults_and_examples_are_dropped_the_rest_kept() -> None:
    prop = {"type": "string", "default": "d" * 10_000, "examples": ["ok", "e" * 10_000]}
    schema = {"type": "object", "properties": {"s": prop}}
    kept, warnings = _one("tools/list", "tools", _tool(inputSchema=schema))
    assert kept["inputSchema"]["properties"]["s"] == {"type": "string", "examples": ["ok"]}
    assert list(warnings) == ["defaults and examples"]


def test_a_tool_with_an_outsized_name_is_skipped_the_others_kept() -> None:
    listing = {"tools": [_tool("n" * (NAME_LIMIT + 1)), _tool("fine")]}
    bounded, cuts = bound_listing("tools/list", listing)
    assert [tool["name"] for tool in bounded["tools"]] == ["fine"]
    assert "tool names" in cuts.warnings()


def test_a_title_and_an_annotations_title_are_cut() -> None:
    kept, _ = _one(
        "tools/list", "tools", _tool(title="t" * HUGE, annotations={"title": "a" * HUGE})
    )
    assert len(kept["title"]) < TEXT_LIMIT + 50
    assert len(kept["annotations"]["title"]) < TEXT_LIMIT + 50


def test_a_prompt_with_an_outsized_argument_name_is_skipped() -> None:
    prompts = [
        {"name": "bad", "arguments": [{"name": "a" * (NAME_LIMIT + 1)}]},
        {"name": "good", "arguments": [{"name": "who"}]},
    ]
    bounded, cuts = bound_listing("prompts/list", {"prompts": prompts})
    assert [prompt["name"] for prompt in bounded["prompts"]] == ["good"]
    assert "prompt argument names" in cuts.warnings()


def test_an_outsized_other_field_is_dropped() -> None:
    icon = {"src": "data:image/png;base64," + "A" * 1_000_000}
    hints = {"readOnlyHint": True, "x-padding": "p" * 1_000_000}
    tool = _tool(icons=[icon], _meta={"ok": 1}, annotations=hints)
    kept, warnings = _one("tools/list", "tools", tool)
    assert "icons" not in kept and "annotations" not in kept
    assert kept["_meta"] == {"ok": 1}
    assert "other tool fields" in warnings


def test_prompts_resources_and_templates_are_bounded() -> None:
    prompt = {
        "name": "greet",
        "description": "p" * HUGE,
        "arguments": [{"name": "who", "description": "w" * HUGE}],
    }
    kept, warnings = _one("prompts/list", "prompts", prompt)
    assert len(kept["description"]) < TEXT_LIMIT + 50
    assert len(kept["arguments"][0]["description"]) < TEXT_LIMIT + 50
    assert set(warnings) == {"prompt descriptions", "prompt argument descriptions"}
    resource = {"uri": "file:///a", "name": "n" * 1_000, "description": "r" * HUGE}
    kept, _ = _one("resources/list", "resources", resource)
    assert len(kept["description"]) < TEXT_LIMIT + 50
    assert kept["name"].startswith("n" * NAME_LIMIT + "… [cut: 744 more")  # a name to show
    templates = {"resourceTemplates": [{"uriTemplate": "x://" + "u" * HUGE, "name": "t"}]}
    bounded, cuts = bound_listing("resources/templates/list", templates)
    assert bounded["resourceTemplates"] == []
    assert "resource template uriTemplates" in cuts.warnings()


def test_instructions_are_cut() -> None:
    bounded, cuts = bound_listing("initialize", {"instructions": "i" * HUGE, "other": 1})
    assert len(bounded["instructions"]) < TEXT_LIMIT + 50 and bounded["other"] == 1
    assert list(cuts.warnings()) == ["instructions"]


def test_what_is_not_understood_is_left_to_the_repairs() -> None:
    odd = {"tools": [7, {"name": 3}, {"name": "x", "inputSchema": "nope", "description": [1]}]}
    bounded, cuts = bound_listing("tools/list", odd)
    assert bounded is odd and not cuts.warnings()
    assert bound_listing("tools/list", "nope")[0] == "nope"


def test_past_a_listings_bound_later_tools_are_served_open() -> None:
    big = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "d" * 2_000} for i in range(100)},
    }
    assert len(json.dumps(big)) < SCHEMA_LIMIT
    described = "w" * 5_000
    listing = {"tools": [_tool(str(i), inputSchema=big, description=described) for i in range(100)]}
    bounded, cuts = bound_listing("tools/list", listing)
    assert bounded["tools"][0]["inputSchema"] == big
    assert bounded["tools"][0]["description"] == described
    assert bounded["tools"][-1]["inputSchema"] == ANY_ARGUMENTS
    assert bounded["tools"][-1]["description"].startswith("w" * BRIEF_LIMIT + "… [cut: ")
    assert len(json.dumps(bounded)) < 2 * 16 * 1024 * 1024
    assert "tool input schemas" in cuts.warnings()


@pytest.mark.skipif(not corpus_files(), reason="the public tool corpus is not beside the repo")
def test_no_real_servers_listing_is_touched() -> None:
    for path in corpus_files():
        listing = {"tools": json.loads(path.read_text())}
        bounded, cuts = bound_listing("tools/list", listing)
        assert bounded == listing, path
        assert not cuts.warnings(), path


def test_a_listings_bound_counts_its_earlier_pages() -> None:
    page = {"tools": [_tool("t", description="w" * 5_000)]}
    _, first = bound_listing("tools/list", page)
    assert 5_000 < first.spent < 6_000
    bounded, _ = bound_listing("tools/list", page, spent=LISTING_LIMIT + 1)
    assert len(bounded["tools"][0]["description"]) < BRIEF_LIMIT + 50
    bounded, last = bound_listing("tools/list", page, spent=2 * LISTING_LIMIT + 1)
    assert bounded["tools"] == []
    assert last.warnings()["tools"] == "tools: 1 past what one listing may hold skipped"


def test_a_servers_question_is_cut_before_any_prompt_shows_it() -> None:
    """An elicitation's message is the server's text: one of 20 MB reaches the prompt (exec's
    terminal, the MCP face's dialog) cut with the marker, its controls still made visible."""
    import io
    import os
    from types import SimpleNamespace

    import anyio

    from toolscript.config import ServerConfig
    from toolscript.execution.runhandle import terminal_form
    from toolscript.upstream.limits import QUESTION_LIMIT
    from toolscript.upstream.server import UpstreamServer

    asked: list[str] = []

    async def on_elicit(server: str, message: str, schema: Any, sent: str) -> dict[str, Any]:
        asked.append(message)
        return {"action": "decline"}

    server = UpstreamServer(
        ServerConfig(name="evil", transport="stdio", command="x"), on_elicit=on_elicit
    )
    params = SimpleNamespace(message="\x1b[2J" + "q" * HUGE, requested_schema={"type": "object"})
    anyio.run(server._elicit, None, params)
    [message] = asked
    assert (
        message
        == "\x1b[2J"
        + "q" * (QUESTION_LIMIT - 4)
        + f"… [cut: {HUGE - QUESTION_LIMIT + 4:,} more characters]"
    )

    reading, writing = os.pipe()
    os.write(writing, b"n\n")
    os.close(writing)
    out = io.StringIO()
    prompt = {"kind": "elicitation", "tool": "evil", "message": message, "schema": {}}
    with os.fdopen(reading) as source:
        assert terminal_form(prompt, source, out, timeout=5) == {"action": "decline"}
    shown = out.getvalue()
    assert "\\u001b[2J" in shown and "\x1b" not in shown
    assert len(shown) < QUESTION_LIMIT + 1_000
