"""Stop 70's attack on the files toolscript keeps in the user's state folder (an agent with a
shell writes there as you): the learned result types (``result-shapes.json``), the recent
calls (``recent-calls.json``) and the MCP face's result marker were read with a plain
``read_text``. A FIFO planted as either JSON file stalled every gateway's start for the
project (the files are read as the gateway is made, before it listens) and standalone
``doit``; one as the marker stalled the face's first execute, of every project. A link to
``/dev/zero`` was read until memory ran out (not run here). Now each is read only as a
regular file, never through a link, and up to a bound; anything else is set aside and
learned (or drawn) anew, as a damaged file was.

What held: the run log (``runs.sqlite``) planted as a FIFO is refused with a clear error
(SQLite's I/O error, named), not waited on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toolscript.gateway.inferred import ResultShapes
from toolscript.gateway.recentcalls import RecentCalls
from toolscript.mcpface.backend import read_result_marker
from toolscript.pipeline.sources import RESULT_SHAPES_FILE, stored_result_types
from toolscript.plumbing import boundedread

TOOL: dict[str, object] = {"name": "t", "inputSchema": {"type": "object"}}


def _learned(folder: Path) -> Path:
    """A real store of learned result types in ``folder`` (``s__t`` learned)."""
    folder.mkdir(exist_ok=True)
    shapes = ResultShapes(folder)
    assert shapes.observe("s__t", TOOL, "structured", {"id": 1})
    shapes.save()
    return folder / RESULT_SHAPES_FILE


def _returns(work: Callable[[], Any], fifo: Path) -> Any:
    """``work``'s value; a call stalled on ``fifo`` is freed (its other end opened) so that
    the test ends, and fails."""
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(work()), daemon=True)
    worker.start()
    worker.join(30)
    stalled = worker.is_alive()
    while worker.is_alive():
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        worker.join(1)
    assert not stalled, f"waited on the FIFO planted as {fifo.name}"
    return done[0]


def test_a_fifo_as_the_learned_result_types_stalls_no_gateway(tmp_path: Path) -> None:
    fifo = tmp_path / RESULT_SHAPES_FILE
    os.mkfifo(fifo)
    shapes = _returns(lambda: ResultShapes(tmp_path), fifo)
    assert shapes.shapes == {}
    assert not fifo.exists()  # set aside: the gateway saves what it learns in its place
    assert list(tmp_path.glob(f"{RESULT_SHAPES_FILE}.damaged-*"))


def test_a_fifo_as_the_learned_result_types_stalls_no_doit(tmp_path: Path) -> None:
    fifo = tmp_path / RESULT_SHAPES_FILE
    os.mkfifo(fifo)
    assert _returns(lambda: stored_result_types(tmp_path), fifo) == {}


def test_a_fifo_as_the_recent_calls_stalls_no_gateway(tmp_path: Path) -> None:
    fifo = tmp_path / "recent-calls.json"
    os.mkfifo(fifo)
    recent = _returns(lambda: RecentCalls(tmp_path, lambda: ()), fifo)
    assert recent.calls == {}


def test_a_fifo_as_the_result_marker_stalls_no_execute(tmp_path: Path) -> None:
    fifo = tmp_path / "result-marker"
    os.mkfifo(fifo)
    marker = _returns(lambda: read_result_marker(tmp_path), fifo)
    assert marker.startswith("\x1etoolscript-result-")
    assert read_result_marker(tmp_path) == marker  # drawn anew, kept in the FIFO's place


def test_a_link_as_the_learned_result_types_is_not_read_through(tmp_path: Path) -> None:
    elsewhere = _learned(tmp_path / "elsewhere")
    assert "s__t" in stored_result_types(elsewhere.parent)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / RESULT_SHAPES_FILE).symlink_to(elsewhere)
    assert stored_result_types(tmp_path / "state") == {}
    assert ResultShapes(tmp_path / "state").shapes == {}
    assert elsewhere.exists()  # the link is set aside, never what it names


def test_a_file_past_the_bound_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = _learned(tmp_path)
    assert "s__t" in stored_result_types(tmp_path)
    big.write_text(big.read_text() + " " * 200)
    # raising=False: the old code, which had no bound, runs the same test (and fails it)
    monkeypatch.setattr(boundedread, "MAX_STATE_FILE_BYTES", 200, raising=False)
    assert stored_result_types(tmp_path) == {}


def test_what_held_a_regular_file_is_read_as_before(tmp_path: Path) -> None:
    _learned(tmp_path)
    assert "s__t" in ResultShapes(tmp_path).shapes
    assert "s__t" in stored_result_types(tmp_path)
