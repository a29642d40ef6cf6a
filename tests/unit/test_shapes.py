"""Shapes of results merged into types: required and optional fields, unions, arrays, caps."""

from __future__ import annotations

from functools import reduce
from typing import Any

from toolscript.codegen.module import render_tool
from toolscript.codegen.shapes import INFERRED_KEY, merge, sample_label, shape_of, to_schema
from toolscript.gateway.inferred import ResultShapes


def learned(*values: Any) -> dict[str, Any]:
    shape = reduce(merge, (shape_of(value) for value in values), None)
    return to_schema(shape)


def test_fields_seen_every_time_are_required_the_rest_optional() -> None:
    schema = learned({"a": 1, "b": "x"}, {"a": 2})
    assert schema["required"] == ["a"]
    assert schema["properties"] == {"a": {"type": "number"}, "b": {"type": "string"}}
    assert schema["additionalProperties"] is True  # never a false error on an unseen field


def test_kinds_that_differ_become_a_union_and_array_elements_merge() -> None:
    schema = learned({"v": 1, "list": [{"id": 1}, {"id": 2, "tag": "t"}]}, {"v": None, "list": []})
    assert schema["properties"]["v"] == {"anyOf": [{"type": "null"}, {"type": "number"}]}
    items = schema["properties"]["list"]["items"]
    assert items["required"] == ["id"] and "tag" in items["properties"]
    assert learned([]) == {"type": "array"}
    assert learned("text") == {"type": "string"}


def test_depth_and_width_are_capped() -> None:
    deep: Any = 1
    for _ in range(20):
        deep = {"x": deep}
    schema = learned(deep)
    depth = 0
    while "properties" in schema:
        schema = schema["properties"]["x"]
        depth += 1
    assert depth <= 8 and schema == {}  # past the cap: unknown
    assert len(learned({f"k{i}": i for i in range(100)})["properties"]) == 100
    wide = learned({f"k{i}": i for i in range(500)})  # more keys than fields: a map
    assert wide == {"type": "object", "additionalProperties": {"type": "number"}}


def test_sample_counts_step_so_the_module_does_not_change_every_call() -> None:
    labels = [sample_label(n) for n in (1, 2, 3, 9, 10, 99, 100, 12345)]
    assert labels == ["1", "2", "3+", "3+", "10+", "30+", "100+", "1000+"]


def test_the_store_reports_changes_of_type_only() -> None:
    shapes = ResultShapes(None)
    tool = {"name": "t"}
    assert shapes.observe("s__t", tool, "json", {"a": 1})
    assert shapes.observe("s__t", tool, "json", {"a": 2})  # 1 -> 2 results: the label moves
    assert shapes.observe("s__t", tool, "json", {"a": 2})  # 3+
    for _ in range(6):
        assert not shapes.observe("s__t", tool, "json", {"a": 3})  # same type, same step
    assert shapes.observe("s__t", tool, "json", {"a": 4})  # 10+
    assert shapes.observe("s__t", tool, "json", {"a": "x"})  # widened
    assert not shapes.observe("s__u", {"name": "u", "outputSchema": {}}, "json", {})
    assert shapes.observe("s__v", {"name": "v"}, "json", [1])
    shapes.observe("s__v", {"name": "v"}, "content", [{"type": "image"}])
    assert shapes.schema_for("s__v") is None  # content blocks keep ToolResult
    assert shapes.schema_for("s__t")[INFERRED_KEY] == "10+"
    tools = shapes.with_inferred("s", [{"name": "t"}, {"name": "v"}])
    assert "outputSchema" in tools[0] and "outputSchema" not in tools[1]


def test_an_inferred_type_is_marked_in_the_module() -> None:
    schema = learned({"id": 1}) | {INFERRED_KEY: "3"}
    fragment = render_tool("s", "s", "get", "SGet", {"name": "get", "outputSchema": schema})
    assert "/** inferred from 3 results: the server declares no outputSchema */" in fragment.types
    assert "Promise<SGetResult>" in fragment.signature


def test_an_object_keyed_by_data_is_a_map_and_no_key_is_kept() -> None:
    """A result keyed by a person's data (emails, paths, dates, ids, tokens) teaches the
    values' type, never a field named after a key."""
    first = {"alice@example.com": {"age": 31}, "bob@example.com": {"age": 40, "team": "a"}}
    schema = learned({"people": first}, {"people": {"carol@example.com": {"age": 5}}})
    people = schema["properties"]["people"]
    assert "properties" not in people
    assert people["additionalProperties"]["required"] == ["age"]
    assert "example.com" not in repr(schema)
    for key in (
        "/home/alice/notes.txt",
        "https://example.com/a",
        "2024-06-01",
        "42",
        "550e8400-e29b-41d4-a716-446655440000",
        "ghp_abcdefghijklmnop1234",
        "AKIAIOSFODNN7EXAMPLE",
    ):
        assert key not in repr(learned({key: 1, "id": 2})), key
    fields = learned({"id": 1, "Content-Type": "x", "numberOfDaysRemaining": 3, "x86_64": True})
    assert set(fields["properties"]) == {"id", "Content-Type", "numberOfDaysRemaining", "x86_64"}


def test_a_long_camel_case_field_name_with_digits_is_a_field_not_a_token() -> None:
    """``base64EncodedContent``, ``x509CertificateChain``, ``p95LatencyMilliseconds``: words
    with a few digits, read as tokens, made the whole object a map, and a correct script's
    ``result.items.map(...)`` a type error (its type the union of every field's)."""
    for name in (
        "base64EncodedContent",
        "x509CertificateChain",
        "sha256HexDigestOfContent",
        "iso8601FormattedTimestamp",
        "p95LatencyMilliseconds",
    ):
        schema = learned({"items": [{"id": 1}], name: "x"})
        assert set(schema.get("properties", {})) == {"items", name}, (name, schema)
    for token in ("dGhpcyBpcyBhIHRlc3QgdG9rZW4x", "AKIAIOSFODNN7EXAMPLE", "a1b2c3d4e5f6a7b8c9d0"):
        assert token not in repr(learned({token: 1, "id": 2})), token


def test_a_stored_shape_keyed_by_data_loses_its_keys_on_load() -> None:
    """A ``result-shapes.json`` written before maps were has data as field names: the caps
    applied on load make it a map."""
    from toolscript.codegen.shapes import bounded

    old = {"n": 1, "types": {"object": {"n": 1, "fields": {"alice@example.com": shape_of(1)}}}}
    loaded = bounded(old)
    assert "alice" not in repr(loaded)
    assert to_schema(loaded) == {"type": "object", "additionalProperties": {"type": "number"}}


def test_a_stored_maps_values_are_merged_in_the_walk_that_bounds_them() -> None:
    """Loading a stored map merges its values (its own and its data-named fields) as the
    one bounded walk goes: what a merge of each part would make, a damaged part left out."""
    from toolscript.codegen.shapes import bounded

    parts = [
        shape_of({"id": 1, "tags": ["a"]}),
        shape_of({"id": "x", "owner": {"name": "n"}}),
        shape_of({"id": 2, "tags": [], "deep": [[{"a": None}]]}),
    ]
    stored = {
        "n": 3,
        "types": {
            "object": {
                "n": 3,
                "fields": {"alice@example.com": parts[1], "/home/b": parts[2], "c d": "broken"},
                "values": parts[0],
            }
        },
    }
    merged = reduce(merge, parts)
    expected = {"n": 3, "types": {"object": {"n": 3, "fields": {}, "values": merged}}}
    assert bounded(stored) == bounded(expected)
    assert bounded(stored)["types"]["object"]["values"]["n"] == 3


def test_a_map_renders_as_an_index_signature() -> None:
    schema = learned({"2024-06-01": {"high": 20}}) | {INFERRED_KEY: "1"}
    fragment = render_tool("s", "s", "get", "SGet", {"name": "get", "outputSchema": schema})
    assert "2024" not in fragment.types
    assert "[key: string]:" in fragment.types and "high: number" in fragment.types
