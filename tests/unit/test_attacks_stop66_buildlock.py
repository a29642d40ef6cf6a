"""Stop 66's attack on the build lock: a cloned repository's ``.toolscript/.build.lock``
planted as a folder turned the lock off (the open failed, every build went on without it,
and a standalone doit again lost the gateway's records). A folder or a FIFO there is made
a lock file anew; a link is never followed; a huge file is never read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolscript.pipeline.buildlock import LOCK_NAME, hold_build_lock


@pytest.mark.parametrize("planted", ["folder", "fifo"])
def test_a_planted_lock_that_is_no_file_still_locks(tmp_path: Path, planted: str) -> None:
    lock = tmp_path / LOCK_NAME
    if planted == "folder":
        lock.mkdir()
        (lock / "inside").write_text("x")
    else:
        os.mkfifo(lock)
    first = hold_build_lock(tmp_path, lambda: None)
    assert first is not None and lock.is_file()
    try:
        assert hold_build_lock(tmp_path, lambda: None, wait=0) is None  # a second build waits
    finally:
        os.close(first)


def test_a_huge_planted_file_is_locked_as_it_is(tmp_path: Path) -> None:
    lock = tmp_path / LOCK_NAME
    with lock.open("wb") as planted:
        planted.truncate(10 * 1024**3)  # sparse: nothing is read of it
    held = hold_build_lock(tmp_path, lambda: None)
    assert held is not None
    os.close(held)
