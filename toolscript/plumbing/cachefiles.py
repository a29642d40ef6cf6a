"""Files of the cache that toolscript can always make again: a damaged one is discarded.

A crash mid-write, a full disk or a stray editor can leave ``embeddings.db``, doit's
database or the catalogue unreadable. None of them holds anything that cannot be
rebuilt, so the right answer is one warning and a new file, never a gateway that
will not start.
"""

from __future__ import annotations

import importlib.abc
import logging
import os
import shutil
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from contextlib import closing
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

__all__ = [
    "damage_of",
    "discard_if_damaged",
    "drop_links",
    "drop_unless_regular",
    "is_damage",
    "load_sqlite_utils",
    "looks_whole",
    "planted_schema",
    "set_aside",
]

log = logging.getLogger("toolscript.cache")

_SIDE_FILES = ("-wal", "-shm", "-journal")


def damage_of(path: Path) -> str | None:
    """What is wrong with the SQLite database at ``path``; None when it reads well (or is
    missing: it is created when needed). A file held by another process is not damaged."""
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
            db.execute("select count(*) from sqlite_master").fetchone()
            verdict = db.execute("pragma quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        return str(exc) if is_damage(exc) else None
    if verdict and verdict[0] == "ok":
        return None
    return str(verdict[0]) if verdict else "no answer to an integrity check"


_SQLITE_MAGIC = b"SQLite format 3\x00"


def looks_whole(path: Path) -> bool:
    """Whether ``path`` is a SQLite database at least as long as its header says: a look at
    its first 100 bytes, no SQLite (doit asks it of its artifacts on every run, so a
    truncated one or one that is not SQLite is built again). False when it is missing,
    empty or no regular file; damage within its pages is ``damage_of``'s to find."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        status = os.fstat(descriptor)
        header = os.read(descriptor, 100) if stat.S_ISREG(status.st_mode) else b""
    except OSError:
        return False
    finally:
        os.close(descriptor)
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        return False
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # the page count holds where the change counter is the one it was written with
    counted = pages > 0 and header[24:28] == header[92:96]
    return status.st_size >= (pages * page_size if counted else page_size)


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says the file itself is bad (not busy, locked or unreachable)."""
    if isinstance(exc, sqlite3.OperationalError):
        return False  # locked, busy, unable to open, disk I/O: the file may be fine
    return isinstance(exc, sqlite3.DatabaseError)


def drop_links(path: Path) -> bool:
    """Remove the database at ``path`` and its side files where any is a link (a cloned
    repository's cache may hold ``.doit.db`` linked to a database of the user's, which
    SQLite would write into), a hard link among them (SQLite writes in place: into every
    name of the file) or a FIFO: it is made anew in the cache. True when one was removed."""
    linked = [Path(f"{path}{suffix}") for suffix in ("", *_SIDE_FILES)]
    if not any(_linked(side) for side in linked):
        return False
    log.warning("%s is a link: it is not followed but made anew", path)
    for side in linked:
        if side.is_dir() and not side.is_symlink():
            shutil.rmtree(side)
        else:
            side.unlink(missing_ok=True)
    return True


def _linked(path: Path) -> bool:
    """Whether ``path`` is a link (symbolic or hard), or anything but a regular file."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return False
    return not stat.S_ISREG(status.st_mode) or status.st_nlink > 1


def drop_unless_regular(path: Path) -> bool:
    """Remove what stands at ``path`` unless it is a regular file (a cloned repository's
    cache may hold a link to a file of the user's, a FIFO whose reading never ends, or a
    folder where a file goes): it is made anew in the cache. True when one was removed."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISREG(mode):
        return False
    log.warning("%s is no regular file: it is not followed but made anew", path)
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)  # (never follows a link inside it)
    else:
        path.unlink()
    return True


def discard_if_damaged(path: Path, tables: Mapping[str, Collection[str]] | None = None) -> bool:
    """Remove the SQLite database at ``path`` (and its side files) when it cannot be read,
    is a link, or holds what toolscript never makes there (``planted_schema``, with the
    ``tables`` it makes); True when it was removed."""
    if drop_links(path):
        return True
    reason = damage_of(path) or planted_schema(path, tables)
    if reason is None:
        return False
    log.warning("%s is damaged (%s); it is rebuilt", path, reason)
    for suffix in ("", *_SIDE_FILES):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return True


def planted_schema(path: Path, tables: Mapping[str, Collection[str]] | None = None) -> str | None:
    """Why the project's database at ``path`` is not one toolscript made: it holds triggers or
    views, which toolscript never makes (a cloned repository's ``catalogue.db`` whose trigger
    added a tool to each catalogue written into it, or aborted every write: written in place,
    it kept them); with ``tables`` (each table toolscript makes there and its columns), a
    table or a column of its own, or an index (a repository's ``embeddings`` table without
    the vector's columns turned semantic search off at every start; a column of its own
    with a default wrote its text beside each tool of the catalogue). None otherwise (or
    when it cannot be read: ``damage_of``'s to say)."""
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
            found = db.execute(
                "select type, name from sqlite_master where type in ('trigger', 'view') limit 3"
            ).fetchall()
            if not found and tables is not None:
                found = _foreign_tables(db, tables)
    except sqlite3.Error:
        return None
    if not found:
        return None
    named = ", ".join(f"{kind} {name!r}" for kind, name in found)
    return f"it holds {named}, which toolscript never makes: not its own"


def _foreign_tables(
    db: sqlite3.Connection, tables: Mapping[str, Collection[str]]
) -> list[tuple[str, str]]:
    """The tables and indexes of ``db`` that are not ``tables`` as toolscript makes them (a
    table of other columns is named ``table NAME(COLUMNS)``); SQLite's own indexes are."""
    found: list[tuple[str, str]] = []
    listed = db.execute("select type, name from sqlite_master where type in ('table', 'index')")
    for kind, name in listed.fetchall():
        if kind == "index":
            if not name.startswith("sqlite_autoindex_"):
                found.append((kind, name))
            continue
        columns = {row[1] for row in db.execute("select * from pragma_table_info(?)", [name])}
        if name not in tables:
            found.append((kind, name))
        elif columns != set(tables[name]):
            found.append((kind, f"{name}({', '.join(sorted(columns))})"))
    return found[:3]


def set_aside(path: Path, reason: str) -> Path:
    """Move a damaged database that holds the user's history (and its side files) beside
    itself as ``<name>.damaged-<time>``, kept for inspection; returns where it went."""
    kept = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", *_SIDE_FILES):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.replace(f"{kept}{suffix}")
    log.warning(
        "%s is damaged (%s): it was set aside as %s and a new one started", path, reason, kept.name
    )
    return kept


class _RefusedInThread(importlib.abc.MetaPathFinder):
    """Refuses ``names`` to one thread (as if they were not installed); others import them."""

    def __init__(self, names: set[str], thread: int) -> None:
        self.names, self.thread = names, thread

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname in self.names and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def load_sqlite_utils() -> None:
    """Import sqlite_utils (the run log's and the catalogue's) without numpy and pandas,
    unless this process has them already: it imports both wherever they are installed, for
    cell types toolscript never stores (numpy is 12 MB of a gateway whose search does not
    need it). They are refused to this thread only, while it imports sqlite_utils."""
    if "sqlite_utils" in sys.modules:
        return
    refused = _RefusedInThread({"numpy", "pandas"} - set(sys.modules), threading.get_ident())
    sys.meta_path.insert(0, refused)
    try:
        import sqlite_utils  # noqa: F401
    finally:
        sys.meta_path.remove(refused)
