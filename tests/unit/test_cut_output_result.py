"""The value a script returned after printing past the face's cap, read from the end of its
kept output (``result_at_end``): given when small, never taken from a line a script wrote."""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.mcpface.backend import result_at_end, result_marker


def kept(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "output.txt"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_a_small_value_after_much_output_is_found(tmp_path: Path) -> None:
    printed = [f"line {i} " + "a" * 100 for i in range(1000)]
    path = kept(tmp_path, *printed, result_marker() + json.dumps({"done": 3}))
    assert result_at_end(path) == ({"done": 3},)


def test_a_returned_null_is_a_value(tmp_path: Path) -> None:
    assert result_at_end(kept(tmp_path, "x", result_marker() + "null")) == (None,)


def test_no_value_when_the_last_line_is_printed_text(tmp_path: Path) -> None:
    assert result_at_end(kept(tmp_path, result_marker() + "1", "printed after")) is None
    assert result_at_end(kept(tmp_path, "only printed")) is None


def test_a_line_forging_another_marker_is_not_a_value(tmp_path: Path) -> None:
    forged = "\x1etoolscript-result-0123456789abcdef:" + json.dumps("forged")
    assert result_marker() != forged[: len(result_marker())]
    assert result_at_end(kept(tmp_path, forged)) is None


def test_a_value_larger_than_the_limit_is_left_to_the_preview(tmp_path: Path) -> None:
    big = result_marker() + json.dumps(["b" * 100] * 400)
    assert result_at_end(kept(tmp_path, "x", big), limit=16_000) is None
    assert result_at_end(kept(tmp_path, big), limit=16_000) is None
    assert result_at_end(kept(tmp_path, "x", big), limit=100_000) is not None
