"""A result keyed by a secret teaches no field named by it (``ResultShapes.observe``'s
``secrets``): a learned type's field names are in the module, get-types and the shapes file."""

from __future__ import annotations

from pathlib import Path

from toolscript.gateway.inferred import FILE_NAME, ResultShapes

TOOL: dict[str, object] = {"name": "keyed", "inputSchema": {"type": "object"}}
SECRET = "correct-horse-battery-staple"  # words: its key reads as a field name, not a token


def test_an_object_keyed_by_a_secret_or_a_run_of_one_is_learned_as_a_map(tmp_path: Path) -> None:
    shapes = ResultShapes(tmp_path)
    shapes.observe("fx__keyed", TOOL, "structured", {SECRET: 1, "kind": "a"}, [SECRET])
    shapes.observe("fx__keyed", TOOL, "structured", {"kind": "b", SECRET[:12]: 2}, [SECRET])
    schema = shapes.schema_for("fx__keyed")
    assert schema is not None
    assert "properties" not in schema or not schema["properties"], schema
    assert schema["additionalProperties"] not in (None, False), schema
    shapes.save()
    assert "horse" not in (tmp_path / FILE_NAME).read_text()


def test_a_key_holding_no_secret_is_a_field_as_before(tmp_path: Path) -> None:
    shapes = ResultShapes(tmp_path)
    shapes.observe("fx__keyed", TOOL, "structured", {"battery": 1, "kind": "a"}, [SECRET])
    schema = shapes.schema_for("fx__keyed")
    assert schema is not None and sorted(schema["properties"]) == ["battery", "kind"]
