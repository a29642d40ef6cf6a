"""The result marker of a face's process is drawn once: two executes of its first moments
(two HTTP clients at once) each drew a nonce, and a run wrapped with one was read with the
other, its value answered as null (`test_mcp_face`'s two clients met it)."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest

from toolscript.mcpface import backend


def test_threads_of_a_fresh_state_folder_share_one_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = itertools.count()

    def slow_nonce(size: int) -> str:  # a draw slow enough for the threads to meet in it
        time.sleep(0.05)
        return f"{next(drawn):016x}"

    monkeypatch.setattr(backend.secrets, "token_hex", slow_nonce)
    start = threading.Barrier(6)
    markers: list[str] = []

    def ask() -> None:
        start.wait()
        markers.append(backend._kept_marker(tmp_path))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(markers)) == 1, markers
    assert backend.read_result_marker(tmp_path) == markers[0]  # the one kept on disk


def test_a_kept_marker_is_read_not_drawn(tmp_path: Path) -> None:
    (tmp_path / "result-marker").write_text("0123456789abcdef")
    assert backend.read_result_marker(tmp_path) == "\x1etoolscript-result-0123456789abcdef:"
