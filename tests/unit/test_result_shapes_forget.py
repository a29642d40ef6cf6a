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
