"""What a server's results taught is dropped when the config removes the server or points
its entry at another program (``ResultShapes.forget``): another program's results must not
type the tools of a server given the same name."""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.gateway.inferred import FILE_NAME, ResultShapes

TOOL: dict[str, object] = {"name": "count", "inputSchema": {"type": "object"}}


def test_forgetting_a_server_drops_its_tools_types_only_and_saves(tmp_path: Path) -> None:
    shapes = ResultShapes(tmp_path)
    shapes.observe("shelf__count", TOOL, "structured", {"step": 1})
    shapes.observe("shelf_two__count", TOOL, "structured", {"step": 2})
    shapes.save()
    assert shapes.forget("shelf")
    assert shapes.schema_for("shelf__count") is None
    assert shapes.schema_for("shelf_two__count") is not None
    assert not shapes.forget("shelf")  # nothing left to drop
    shapes.save()
    assert list(json.loads((tmp_path / FILE_NAME).read_text())) == ["shelf_two__count"]
    # learned again from the new program's results, from nothing
    shapes.observe("shelf__count", TOOL, "structured", {"total": "all"})
    schema = shapes.schema_for("shelf__count")
    assert schema is not None and list(schema["properties"]) == ["total"]


def test_what_a_server_taught_is_dropped_when_loaded_under_another_identity(
    tmp_path: Path,
) -> None:
    """The config repointed a server while no gateway ran: the next gateway (and doit)
    does not type its tools with what the former program's results taught."""
    from toolscript.pipeline.sources import stored_result_types

    shapes = ResultShapes(tmp_path, identities={"shelf": "first", "other": "same"})
    shapes.observe("shelf__count", TOOL, "structured", {"step": 1})
    shapes.observe("other__count", TOOL, "structured", {"step": 2})
    shapes.save()
    now = {"shelf": "second", "other": "same"}
    assert set(stored_result_types(tmp_path, now)) == {"other__count"}  # standalone doit
    again = ResultShapes(tmp_path, identities=now)
    assert again.schema_for("shelf__count") is None
    assert again.schema_for("other__count") is not None
    again.save()  # dropped from the file too, the new identity bound to what it learns next
    again.observe("shelf__count", TOOL, "structured", {"total": "all"})
    again.save()
    third = ResultShapes(tmp_path, identities=now)
    schema = third.schema_for("shelf__count")
    assert schema is not None and list(schema["properties"]) == ["total"]


def test_a_file_of_before_the_identities_is_kept_and_bound_at_its_next_save(
    tmp_path: Path,
) -> None:
    old = ResultShapes(tmp_path)  # as the file was written: shapes only
    old.observe("shelf__count", TOOL, "structured", {"step": 1})
    old.save()
    assert list(json.loads((tmp_path / FILE_NAME).read_text())) == ["shelf__count"]
    loaded = ResultShapes(tmp_path, identities={"shelf": "first"})
    assert loaded.schema_for("shelf__count") is not None  # kept
    loaded.observe("shelf__count", TOOL, "structured", {"step": 2})
    loaded.save()
    assert json.loads((tmp_path / FILE_NAME).read_text())["identities"] == {"shelf": "first"}
    assert ResultShapes(tmp_path, identities={"shelf": "second"}).schema_for("shelf__count") is None
