"""What an MCP server sends is data: nothing of it becomes code in the generated module,
changes another server's types, grows the learned types without bound, or routes a call to
another tool (issue 42's findings 1, 5, 6 and 11, in their pure parts)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from toolscript.codegen.module import render_module, render_tool, runtime_type_names, type_names
from toolscript.codegen.shapes import (
    INFERRED_KEY,
    MAX_KEY_LENGTH,
    MAX_NODES,
    merge,
    shape_of,
    size,
    to_schema,
    without_own_keys,
)
from toolscript.config import ServerConfig
from toolscript.errors import ToolNotFoundError
from toolscript.execution.source import prepare
from toolscript.gateway.app import requested_tool
from toolscript.gateway.inferred import FILE_NAME, MAX_SERVER_NODES, ResultShapes
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks.fetch import FetchTasks
from toolscript.pipeline.tasks.settings import TaskSettings

PAYLOAD = "*/ globalThis.pwned = true; /*"
_NOT_CODE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', re.DOTALL)


def code_of(typescript: str) -> str:
    """The text of generated TypeScript outside its comments and string literals."""
    return _NOT_CODE.sub(" ", typescript)


def fragment_code(tool: dict[str, Any], base: str = "EvilT") -> str:
    fragment = render_tool("evil", "evil", "t", base, tool)
    return code_of("\n".join((fragment.types, fragment.signature, fragment.method)))


# -- finding 1: server text into comments and code ------------------------------------


def test_a_server_sent_inferred_marker_never_becomes_code() -> None:
    schema = {"type": "object", INFERRED_KEY: f"1 {PAYLOAD}"}
    assert "pwned" not in fragment_code({"name": "t", "outputSchema": schema})


def test_every_server_string_written_into_the_module_stays_inside_a_comment_or_string() -> None:
    nested = {
        "type": "string",
        "description": PAYLOAD,
        "title": PAYLOAD,
        "format": PAYLOAD,
        "default": PAYLOAD,
        "examples": [PAYLOAD, {PAYLOAD: PAYLOAD}],
        "deprecated": True,
    }
    schema = {
        "type": "object",
        "title": PAYLOAD,
        "description": f"line one\n{PAYLOAD}\n\n{PAYLOAD}",
        "properties": {
            PAYLOAD: nested,
            "choice": {"enum": [PAYLOAD, 1, None], "description": PAYLOAD},
            "fixed": {"const": PAYLOAD},
            "weird": {"type": PAYLOAD},
            "missing": {"$ref": f"#/$defs/{PAYLOAD}"},
            "remote": {"$ref": PAYLOAD},
            "defined": {"$ref": "#/$defs/" + PAYLOAD.replace("/", "~1")},
            "nan": {"enum": [float("nan"), float("inf")]},
        },
        "required": [PAYLOAD, "choice", f"{PAYLOAD}2"],
        "patternProperties": {PAYLOAD: {"description": PAYLOAD}},
        "$defs": {PAYLOAD.replace("/", "~1"): nested, PAYLOAD: nested},
    }
    tool = {
        "name": PAYLOAD,
        "title": PAYLOAD,
        "description": PAYLOAD,
        "inputSchema": schema,
        "outputSchema": schema,
        "annotations": {"readOnlyHint": True},
    }
    code = fragment_code(tool)
    assert "pwned" not in code
    assert "NaN" not in code and "Infinity" not in code  # no literal types of them


def test_x_toolscript_keys_a_server_sends_are_dropped() -> None:
    tool = {
        "name": "t",
        "x-toolscript-anything": 1,
        "inputSchema": {"type": "object", "X-Toolscript-Inferred": "1"},
        "outputSchema": {"type": "object", INFERRED_KEY: "3+", "properties": {}},
    }
    assert without_own_keys(tool) == {
        "name": "t",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {}},
    }
    plain = {"name": "u", "inputSchema": {"type": "object"}}
    assert without_own_keys(plain) is plain


def test_the_inferred_marker_comes_from_the_store_only(tmp_path: Path) -> None:
    server = ServerConfig(name="evil", transport="stdio", command="x")
    settings = TaskSettings(CacheLayout(tmp_path), [server], "test")
    declared = {"type": "object", INFERRED_KEY: f"1 {PAYLOAD}"}
    learned = {"type": "object", "properties": {}, INFERRED_KEY: "3+"}
    source = SnapshotSource(
        {
            "evil": [
                {"name": "claims", "outputSchema": declared},
                {"name": "learned"},
                {"name": "plain", INFERRED_KEY: "1"},
            ]
        },
        inferred={"evil": {"learned": learned, "claims": learned}},
    )
    tools = {tool["name"]: tool for tool in FetchTasks(settings, source).live(server) or []}
    assert tools["claims"]["outputSchema"] == {"type": "object"}  # declared wins, unmarked
    assert tools["learned"]["outputSchema"] == learned
    assert tools["plain"] == {"name": "plain"}


# -- finding 5: type names unique across the whole module ------------------------------


def test_a_ref_alias_cannot_take_another_tools_params_name() -> None:
    a = {
        "name": "a",
        "inputSchema": {
            "type": "object",
            "properties": {"b": {"$ref": "#/$defs/BParams"}},
            "$defs": {"BParams": {"type": "string"}},
        },
        "outputSchema": {
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/Params"}},
            "$defs": {"Params": {"type": "number"}},
        },
    }
    a_b = {"name": "aB", "inputSchema": {"type": "object"}}
    a_result = {"name": "aResult", "inputSchema": {"type": "object"}}
    evil = {"name": "x", "inputSchema": {"$ref": "#/$defs/X", "$defs": {"X": {}}}}
    listed = [("DupeA", a), ("DupeAB", a_b), ("DupeAResult", a_result), ("JsonValue", evil)]
    names = type_names(listed)
    fragments = [
        render_tool("dupe", "dupe", tool["name"], base, tool, tool_names)
        for (base, tool), tool_names in zip(listed, names, strict=True)
    ]
    declared = re.findall(r"^export (?:type|interface|class) (\w+)", render_module(fragments), re.M)
    assert len(declared) == len(set(declared)), sorted(declared)
    assert names[1].params == "DupeABParams"  # a tool's own names come before any alias
    assert names[0].input_aliases == {"#/$defs/BParams": "DupeABParams2"}
    assert not set(runtime_type_names()) & {n.params for n in names}
    assert type_names(listed) == names  # deterministic


# -- finding 6: learned result types are capped -----------------------------------------


def test_a_result_of_huge_and_endless_keys_learns_a_bounded_shape() -> None:
    wide = {"k" * 20_000 + chr(97 + i % 26) * (1 + i // 26): i for i in range(100)}
    shape = shape_of(wide)
    assert shape["types"]["object"]["fields"] == {}  # names past MAX_KEY_LENGTH: not learned
    assert to_schema(shape)["additionalProperties"] is True
    numbered = shape_of({f"{i:05d}" + "k" * 20_000: i for i in range(100)})  # keys as data
    assert to_schema(numbered) == {"type": "object", "additionalProperties": {"type": "number"}}
    nested: Any = {f"k{i}": {f"j{j}": [{"x": 1}] for j in range(100)} for i in range(100)}
    assert size(shape_of(nested)) <= MAX_NODES
    grown = None
    for call in range(20):  # 2,000 names in all: a map (more keys than an object's fields)
        grown = merge(grown, shape_of({f"c{call}-{i}": i for i in range(100)}))
    assert size(grown) == 2

    def deep(call: int) -> dict[str, Any]:  # 100 fields of 9 new ones each call
        return {f"k{i}": {f"c{call}j{j}": j for j in range(9)} for i in range(100)}

    for call in range(10):
        grown = merge(grown if call else None, shape_of(deep(call)))
    assert size(grown) > MAX_NODES  # merging alone is not where the cap is
    shapes = ResultShapes(None)
    for call in range(10):
        shapes.observe("s__t", {"name": "t"}, "json", deep(call))
    assert size(shapes.shapes["s__t"]) <= MAX_NODES
    assert len(json.dumps(shapes.schema_for("s__t"))) < 64 * 1024


def test_a_server_cannot_learn_past_its_cap_whatever_its_tool_names() -> None:
    shapes = ResultShapes(None)
    value = {f"f{i}": {"g": i} for i in range(100)}
    for number in range(40):
        shapes.observe(f"s__t{number}", {"name": f"t{number}"}, "json", value)
    held = sum(size(shape) for shape in shapes.shapes.values())
    assert held <= MAX_SERVER_NODES + 40  # each tool past the cap keeps one open shape
    assert shapes.schema_for("s__t39") is None  # past the server's cap: ToolResult
    shapes.observe("other__t", {"name": "t"}, "json", value)
    assert shapes.schema_for("other__t") is not None  # another server has its own cap


_LETTERS = str.maketrans("0123456789", "abcdefghij")  # long names of words, not data


def test_a_stored_file_past_the_caps_is_trimmed_on_load(tmp_path: Path) -> None:
    fields = {
        ("k" * (MAX_KEY_LENGTH + 1) + str(i).translate(_LETTERS)) if i % 2 else f"k{i}": {
            "n": 1,
            "types": {"string": {}},
        }
        for i in range(5000)
    }
    stored = {
        "s__t": {"n": 3, "types": {"object": {"n": 3, "fields": fields}}},
        "s__broken": {"n": 1, "types": {"object": {"fields": "not fields"}}},
        "s__opaque": {"opaque": True},
    }
    (tmp_path / FILE_NAME).write_text(json.dumps(stored))
    shapes = ResultShapes(tmp_path)
    kept = shapes.shapes["s__t"]["types"]["object"]
    assert kept["fields"] == {} and kept["values"]["types"] == {"string": {}}  # 5,000: a map
    assert shapes.shapes["s__broken"]["types"]["object"]["fields"] == {}
    assert shapes.shapes["s__opaque"] == {"opaque": True}
    shapes.save()  # trimmed on disk too
    assert len((tmp_path / FILE_NAME).read_text()) < 10_000


# -- finding 11: a call path names exactly one tool -----------------------------------


def scope(raw: bytes, query: bytes = b"") -> dict[str, Any]:
    from urllib.parse import unquote

    return {"path": unquote(raw.decode()), "raw_path": raw, "query_string": query}


def test_an_encoded_tool_name_is_decoded_once_and_taken_whole() -> None:
    assert requested_tool(scope(b"/tools/time__get_current_time")) == "time__get_current_time"
    encoded = b"/tools/ro__read_only_status%2F..%2Ftime__get_current_time"
    assert requested_tool(scope(encoded)) == "ro__read_only_status/../time__get_current_time"
    assert requested_tool(scope(b"/tools/names__a%3Fb%23c")) == "names__a?b#c"
    assert requested_tool(scope(b"/tools/n__a%2520b")) == "n__a%20b"  # once, not twice
    assert requested_tool(scope(b"/tools/n__caf%C3%A9")) == "n__café"


@pytest.mark.parametrize(
    ("raw", "query"),
    [
        (b"/tools/ro__read_only_status/../time__get_current_time", b""),
        (b"/tools/names__a", b"b"),
        (b"/tools/names__a?b", b""),  # a client that leaves the query on raw_path
        (b"/tools/", b""),
        (b"/tools/n__%FF", b""),
    ],
)
def test_a_path_that_does_not_name_one_tool_is_refused(raw: bytes, query: bytes) -> None:
    with pytest.raises(ToolNotFoundError, match="one tool name"):
        requested_tool(scope(raw, query))


def test_without_a_raw_path_a_slash_in_the_decoded_one_is_refused() -> None:
    with pytest.raises(ToolNotFoundError):
        requested_tool({"path": "/tools/a__b/../c", "query_string": b""})
    assert requested_tool({"path": "/tools/a__b", "query_string": b""}) == "a__b"


def test_the_runtime_encodes_the_tool_name_as_one_segment() -> None:
    from toolscript.codegen.module import runtime_source

    assert "new URL(encodeURIComponent(tool), toolsURL())" in runtime_source()


# -- finding 16: a top-level return ends the run -----------------------------------------


def test_a_returning_script_ends_the_process_after_its_value() -> None:
    prepared = prepare("setInterval(() => {}, 10);\nreturn 1").code
    last = prepared.splitlines()[-1]
    assert last.index("console.log") < last.index("Deno.exit(0)")
