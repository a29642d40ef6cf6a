"""Learned result types: a plain-text answer never breaks a correct script, and a stored
file of the wrong structure is set aside with a warning naming it (issue 49, items 8 and 9)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from toolscript.gateway.inferred import FILE_NAME, ResultShapes

TOOL: dict[str, object] = {"name": "fixed", "inputSchema": {"type": "object"}}


def test_a_plain_text_answer_does_not_widen_a_learned_object(tmp_path: Path) -> None:
    shapes = ResultShapes(tmp_path)
    assert shapes.observe("shape__fixed", TOOL, "structured", {"a": 1})
    learned = shapes.schema_for("shape__fixed")
    assert learned is not None and learned["type"] == "object"
    # The server answers an error as text, without isError: `r.a + 1` must stay right.
    shapes.observe("shape__fixed", TOOL, "text", "rate limited, try later")
    after = shapes.schema_for("shape__fixed")
    assert after is not None and "anyOf" not in after
    assert after["type"] == "object" and after["required"] == ["a"]
    assert after["properties"] == learned["properties"]


def test_a_type_widened_by_text_before_narrows_back(tmp_path: Path) -> None:
    widened = {
        "n": 2,
        "types": {
            "object": {"n": 1, "fields": {"a": {"n": 1, "types": {"number": {}}}}},
            "string": {},
        },
    }
    (tmp_path / FILE_NAME).write_text(json.dumps({"shape__fixed": widened}))
    schema = ResultShapes(tmp_path).schema_for("shape__fixed")
    assert schema is not None and schema["type"] == "object" and "anyOf" not in schema


def test_a_tool_that_only_answers_text_is_typed_string(tmp_path: Path) -> None:
    shapes = ResultShapes(tmp_path)
    shapes.observe("shape__fixed", TOOL, "text", "hello")
    schema = shapes.schema_for("shape__fixed")
    assert schema is not None and schema["type"] == "string"


@pytest.mark.parametrize(
    "content", ['{"shape__fixed": "oops"}', '["oops"]', '"oops"', '{"a__b": {}, "c__d": 3}']
)
def test_a_file_of_the_wrong_structure_is_set_aside_and_named(
    tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / FILE_NAME
    path.write_text(content)
    with caplog.at_level(logging.WARNING):
        shapes = ResultShapes(tmp_path)
    assert shapes.shapes == {}
    assert not path.exists()
    kept = list(tmp_path.glob(f"{FILE_NAME}.damaged-*"))
    assert len(kept) == 1 and kept[0].read_text() == content
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(path) in warnings[0]
    # Types are learned again, and saved in a new file.
    assert shapes.observe("shape__fixed", TOOL, "structured", {"a": 1})
    shapes.save()
    assert "shape__fixed" in json.loads(path.read_text())


def test_an_unreadable_file_is_set_aside_too(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_text('{"shape__fixed": ')
    assert ResultShapes(tmp_path).shapes == {}
    assert len(list(tmp_path.glob(f"{FILE_NAME}.damaged-*"))) == 1
