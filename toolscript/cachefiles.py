"""Files of the cache that toolscript can always make again: a damaged one is discarded.

A crash mid-write, a full disk or a stray editor can leave ``embeddings.db``, doit's
database or the catalogue unreadable. None of them holds anything that cannot be
rebuilt, so the right answer is one warning and a new file, never a gateway that
will not start.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

__all__ = ["discard_if_damaged"]

log = logging.getLogger("toolscript.cache")

_SIDE_FILES = ("-wal", "-shm", "-journal")


def discard_if_damaged(path: Path) -> bool:
    """Remove the SQLite database at ``path`` (and its side files) when it cannot be read;
    True when it was removed. A missing file is fine: it is created when needed."""
    if not path.exists():
        return False
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)) as db:
            db.execute("select count(*) from sqlite_master").fetchone()
            verdict = db.execute("pragma quick_check").fetchone()
        if verdict and verdict[0] == "ok":
            return False
        reason = str(verdict[0]) if verdict else "no answer to an integrity check"
    except sqlite3.DatabaseError as exc:
        reason = str(exc)
    log.warning("%s is damaged (%s); it is rebuilt", path, reason)
    for suffix in ("", *_SIDE_FILES):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return True
