"""Whether the project's config can be used now, as the MCP face asks before each tool call.

A face serves for hours while the user edits ``.toolscript.json``: a typo, an untrusted edit
or a file that cannot be read is answered as each tool call's error (the CLI's text: file,
line, column, field and hint), never by an exit the client would show as a lost connection.
The file is read again only when it, the trust records or a file it imports changed, and at
each call while it cannot be used (what it names, a folder or another client's file, may
be what changed). A file changed within the last ``SETTLING`` seconds is read again at the
next call too: an edit of the same size within its clock's tick (a second on some file
systems) leaves the same fingerprint.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from toolscript.config import load_config
from toolscript.plumbing.paths import find_config_path
from toolscript.store.trust import trust_file

__all__ = ["ConfigWatch"]

Fingerprint = tuple[int, int, int] | None  # a file's inode, size and mtime; None: no file
SETTLING = 2.0  # seconds after a file's last change during which it is not taken as read


def _fingerprint(path: Path) -> Fingerprint:
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


@dataclass
class ConfigWatch:
    """The project's config (``explicit``: ``--config``, else the one ``cwd`` finds) as last
    read: ``check`` raises what ``load_config`` raises for it as it is now."""

    explicit: str | None
    cwd: Path
    # the files it was read from when it could last be used, and their fingerprints then
    _files: tuple[Path, ...] = ()
    _seen: tuple[Fingerprint, ...] | None = None

    def check(self) -> None:
        """Raise the ConfigError (UntrustedConfigError for a file the user has not trusted as
        it is now) that stops the config from being used; return when it can be."""
        if self._seen is not None and tuple(map(_fingerprint, self._files)) == self._seen:
            return
        # (found once, as the face's gateway watches one file: finding it is 0.1 ms)
        watched = self._files[:2] or (find_config_path(self.explicit, self.cwd), trust_file())
        before = tuple(_fingerprint(file) for file in watched)  # a change while read: again
        self._seen = None
        loaded = load_config(self.explicit, cwd=self.cwd, require_trust=True)  # or raises
        self._files = (*watched, *loaded.imported_files)
        seen = before + tuple(_fingerprint(file) for file in loaded.imported_files)
        settled = time.time_ns() - int(SETTLING * 1e9)
        if all(found is None or found[2] < settled for found in seen):
            self._seen = seen
