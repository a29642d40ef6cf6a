"""The sandbox's memory watch samples the Deno process alone, and still kills it past the cap."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest

from toolscript.execution.sandbox import _MemoryWatch


def test_the_watch_kills_past_the_cap_without_listing_other_processes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Listing a process's children reads every process's `stat` on Linux (1.8 ms of CPU
    with 113 processes), 20 times a second of every run; a script can start none."""
    listed: list[int] = []

    def children(self: psutil.Process, recursive: bool = False) -> list[psutil.Process]:
        listed.append(self.pid)
        return []

    monkeypatch.setattr(psutil.Process, "children", children)
    # (its own process group, as a sandbox run has: the watch kills the group)
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
    )
    try:
        watch = _MemoryWatch(process, cap=1)  # any resident process is past one byte
        watch.start()
        assert process.wait(timeout=10) != 0
        watch.join(timeout=10)
        assert watch.exceeded.is_set()
        assert listed == []
    finally:
        process.kill()
        process.wait()
