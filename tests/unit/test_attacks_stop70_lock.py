"""Stop 70's attack on the project's ``.toolscript.lock`` by a cloned repository: a lock of
gigabytes (one repeated byte packs a thousandfold in git, so the clone stays small) was read
whole into memory at every build: by the packages fetch (``_without_foreign_tarballs``, before
Deno, which read it whole again) and, with no package declared, by the lock's digest (up to
1 GB, the artifacts' bound), also at each ``doit``'s look at whether the task is up to date.
Now a lock past ``MAX_LOCK_BYTES`` is never read: the fetch makes it anew from the registry
(saying so), and its digest is that of a missing lock.

What held: a link or a FIFO as the lock (refused before, ``test_packages_attacks.py``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from toolscript.pipeline.tasks import packages
from toolscript.pipeline.tasks.packages import DEFAULT_REGISTRY

LOCK = {
    "version": "5",
    "specifiers": {"npm:left-pad@1": "1.3.0"},
    "npm": {"left-pad@1.3.0": {"integrity": "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4Ld"}},
    "workspace": {"dependencies": ["npm:left-pad@1"]},
}
CAP = 4096  # a small cap stands for the real one: the file is past it as a huge one is


def planted(tmp_path: Path, size: int) -> Path:
    """A valid lock padded with blanks to ``size`` bytes (nothing foreign in it)."""
    lock = tmp_path / ".toolscript.lock"
    text = json.dumps(LOCK)
    lock.write_text(text + " " * (size - len(text)))
    return lock


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # raising=False: the old code, which had no cap, runs the same test (and fails it)
    monkeypatch.setattr(packages, "MAX_LOCK_BYTES", CAP, raising=False)


@pytest.mark.usefixtures("small_cap")
def test_a_lock_past_the_cap_is_made_anew_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lock = planted(tmp_path, CAP + 1)
    with caplog.at_level(logging.WARNING, logger="toolscript.pipeline"):
        packages._without_foreign_tarballs(lock, DEFAULT_REGISTRY)
    assert not lock.exists()
    assert "made anew from the registry" in caplog.text
    assert "larger than" in caplog.text


@pytest.mark.usefixtures("small_cap")
def test_a_lock_past_the_cap_has_the_digest_of_none(tmp_path: Path) -> None:
    lock = planted(tmp_path, CAP + 1)
    assert packages._digest(lock) == ""


@pytest.mark.usefixtures("small_cap")
def test_what_held_a_lock_within_the_cap_is_kept_and_digested(tmp_path: Path) -> None:
    lock = planted(tmp_path, CAP)
    packages._without_foreign_tarballs(lock, DEFAULT_REGISTRY)
    assert lock.exists()
    assert packages._digest(lock) != ""
    assert packages.declared_only(lock, ["npm:left-pad@1"]).startswith("{")


def test_a_sparse_lock_of_gigabytes_is_refused_at_the_real_cap(tmp_path: Path) -> None:
    lock = tmp_path / ".toolscript.lock"
    with lock.open("wb") as handle:  # sparse: no disk, and never read
        handle.truncate(8 * 1024**3)
    assert packages._digest(lock) == ""
    packages._without_foreign_tarballs(lock, DEFAULT_REGISTRY)
    assert not lock.exists()


def test_what_held_a_link_or_fifo_as_the_lock_is_never_read(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.lock"
    os.mkfifo(fifo)
    link = tmp_path / "link.lock"
    link.symlink_to(planted(tmp_path, 100))
    for lock in (fifo, link):
        assert packages._digest(lock) == ""
        packages._without_foreign_tarballs(lock, DEFAULT_REGISTRY)
        assert lock.is_symlink() or lock.exists()  # left for the fetch's own refusal
