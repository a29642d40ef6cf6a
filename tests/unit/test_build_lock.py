"""The build lock of a cache directory (pipeline/buildlock.py): one build at a time across
processes (a gateway's and a standalone doit's), never through a planted link."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from toolscript.pipeline.buildlock import LOCK_NAME, build_lock, hold_build_lock


def test_a_second_build_waits_says_so_and_goes_on_once_let_go(tmp_path: Path) -> None:
    first = hold_build_lock(tmp_path, lambda: None)
    assert first is not None
    told: list[str] = []
    assert hold_build_lock(tmp_path, lambda: told.append("waiting"), wait=0.2) is None
    assert told == ["waiting"]
    os.close(first)
    second = hold_build_lock(tmp_path, lambda: told.append("again"), wait=0.2)
    assert second is not None and told == ["waiting"]
    os.close(second)
    with build_lock(tmp_path):
        assert hold_build_lock(tmp_path, lambda: None, wait=0) is None


def test_a_planted_link_is_not_followed(tmp_path: Path) -> None:
    cache, mine = tmp_path / "cache", tmp_path / "precious.txt"
    cache.mkdir()
    mine.write_text("mine")
    (cache / LOCK_NAME).symlink_to(mine)
    held = hold_build_lock(cache, lambda: None)
    assert held is not None
    os.close(held)
    assert not (cache / LOCK_NAME).is_symlink() and mine.read_text() == "mine"


def test_a_build_waiting_for_the_lock_ends_when_its_process_stops(tmp_path: Path) -> None:
    import threading

    from toolscript.pipeline.buildlock import BuildStopped

    held = hold_build_lock(tmp_path, lambda: None)
    assert held is not None
    stop = threading.Event()
    stop.set()
    with pytest.raises(BuildStopped), build_lock(tmp_path, stop=stop):
        raise AssertionError("built while another build held the lock")
    os.close(held)
    with build_lock(tmp_path, stop=stop):  # free: it builds (stop only ends a wait)
        pass


def test_a_lock_file_that_cannot_be_opened_now_is_not_removed_under_its_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure to open it that is no planted link or folder (no descriptor left: EMFILE,
    which a test cannot cause in this process without breaking it) removed the file that
    another build held locked: the next build locked a new file beside it."""
    import errno

    from toolscript.pipeline import buildlock

    holder = hold_build_lock(tmp_path, lambda: None)
    assert holder is not None
    real_open, failed = os.open, []

    def open_once_failing(*args: Any, **kwargs: Any) -> int:
        if not failed:
            failed.append(True)
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(*args, **kwargs)

    monkeypatch.setattr(buildlock.os, "open", open_once_failing)
    second = hold_build_lock(tmp_path, lambda: None, wait=0)
    monkeypatch.undo()
    try:
        assert second is None
        assert os.stat(tmp_path / LOCK_NAME).st_ino == os.fstat(holder).st_ino
    finally:
        os.close(holder)
        if second is not None:
            os.close(second)


def test_discarding_a_damaged_cache_waits_for_a_build_under_way(tmp_path: Path) -> None:
    """The gateway's clean-up of a damaged cache takes the build lock: a standalone doit
    building meanwhile keeps its files and database until it is done."""
    import logging
    import threading

    from toolscript.pipeline.artifacts import CacheLayout

    layout = CacheLayout(tmp_path)
    (tmp_path / "types").mkdir()
    layout.dep_file.write_text("doit's database, being written")
    waiting = threading.Event()

    class Waiting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting for another build" in record.getMessage():
                waiting.set()

    logger = logging.getLogger("toolscript.pipeline")
    handler, level = Waiting(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    held = hold_build_lock(tmp_path, lambda: None)  # the doit's build
    assert held is not None
    try:
        discarding = threading.Thread(target=layout.discard_derived)
        discarding.start()
        assert waiting.wait(30), "the clean-up did not wait for the build lock"
        assert layout.dep_file.exists() and (tmp_path / "types").is_dir()
    finally:
        os.close(held)
        logger.removeHandler(handler)
        logger.setLevel(level)
    discarding.join(30)
    assert not discarding.is_alive()
    assert not layout.dep_file.exists() and not (tmp_path / "types").exists()
