"""The MCP face's next spare sandbox is spawned a moment after a run ends, not at once: its
spawn (Python work and a fork) would compete with the run's answer on its way out of the
face. Spare itself is replaced by a recorder: what is checked is the order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolscript.mcpface import backend
from toolscript.mcpface.backend import SPARE_AFTER, Backend


def test_the_next_spare_waits_for_the_answer_to_go_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    events: list[Any] = []

    class Recorded:
        def __init__(self, url: str, module: Path, *rest: Any, **options: Any) -> None:
            events.append(("spawned", url, module))

    monkeypatch.setattr(backend, "Spare", Recorded)
    monkeypatch.setattr(backend.time, "sleep", lambda seconds: events.append(("slept", seconds)))
    face = Backend(config=None, cache=None, lifeline=object(), cwd=tmp_path)  # type: ignore[arg-type]
    face._spawn_spare("http://127.0.0.1:1/t", tmp_path / "m.ts")
    assert events == [
        ("slept", SPARE_AFTER),
        ("spawned", "http://127.0.0.1:1/t", tmp_path / "m.ts"),
    ]
    assert isinstance(face._spare, Recorded)
