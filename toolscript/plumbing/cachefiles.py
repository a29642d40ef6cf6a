"""Files of the cache that toolscript can always make again: a damaged one is discarded.

A crash mid-write, a full disk or a stray editor can leave ``embeddings.db``, doit's
database or the catalogue unreadable. None of them holds anything that cannot be
rebuilt, so the right answer is one warning and a new file, never a gateway that
will not start.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from contextlib import closing
from pathlib import Path

__all__ = ["damage_of", "discard_if_damaged", "is_damage", "set_aside"]

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


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says the file itself is bad (not busy, locked or unreachable)."""
    if isinstance(exc, sqlite3.OperationalError):
        return False  # locked, busy, unable to open, disk I/O: the file may be fine
    return isinstance(exc, sqlite3.DatabaseError)


def discard_if_damaged(path: Path) -> bool:
    """Remove the SQLite database at ``path`` (and its side files) when it cannot be read;
    True when it was removed."""
    reason = damage_of(path)
    if reason is None:
        return False
    log.warning("%s is damaged (%s); it is rebuilt", path, reason)
    for suffix in ("", *_SIDE_FILES):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return True


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
