"""``looks_whole``: the look doit takes at catalogue.db and embeddings.db on every run, a
header read and no SQLite: a database cut short, or a file that is not SQLite, is not whole;
one that SQLite wrote whole is, however many pages it holds."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from toolscript.plumbing.cachefiles import looks_whole


def database(path: Path, rows: int) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("create table t (x text)")
        db.executemany("insert into t values (?)", [("x" * 500,)] * rows)
    return path


def test_a_database_sqlite_wrote_is_whole_however_large(tmp_path: Path) -> None:
    assert looks_whole(database(tmp_path / "small.db", 1))
    assert looks_whole(database(tmp_path / "large.db", 2000))


@pytest.mark.parametrize("keep", [0, 50, 100, 4096, -1])
def test_a_database_cut_short_is_not(tmp_path: Path, keep: int) -> None:
    path = database(tmp_path / "cut.db", 2000)
    with path.open("r+b") as file:
        file.truncate(keep if keep >= 0 else path.stat().st_size - 1)
    assert not looks_whole(path)


def test_what_is_not_a_database_is_not(tmp_path: Path) -> None:
    (tmp_path / "text.db").write_text("SQLite? no\n" * 20)
    (tmp_path / "folder.db").mkdir()
    os.mkfifo(tmp_path / "fifo.db")  # (a read of it would wait for a writer)
    for name in ("missing.db", "text.db", "folder.db", "fifo.db"):
        assert not looks_whole(tmp_path / name), name
