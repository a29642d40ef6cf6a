"""Write a file only its user may read, whole or not at all (state, trust records, modules)."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

__all__ = ["write_new", "write_private"]


def write_new(path: Path, data: str | bytes, mode: int = 0o644) -> None:
    """Write ``data`` to a file made anew at ``path``: whatever is there is removed first,
    and ``O_EXCL`` refuses to follow a link planted since (a cloned repository's cache may
    hold one, named as a temporary file, pointing at ``~/.bashrc``), so no write goes
    through a link."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)


def write_private(path: Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` (0600, its folder 0700) through a temporary file and a rename,
    so a reader never sees half of it. Writers in several threads of one process (the MCP
    face runs scripts side by side) each have a temporary file of their own."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write_new(partial, data, 0o600)
        os.replace(partial, path)
    except BaseException:
        # A disk full or a file size limit left the part written (of a token, a state
        # file's), under a name nothing reads, removes or replaces: after `auth --logout` too.
        with contextlib.suppress(OSError):
            partial.unlink()
        raise
    return path
