"""Read a file a repository may have planted: only a regular file, and only up to a size.

A cloned repository can make ``.mcp.json`` (or an ``envFile``) a symbolic link to
``/dev/zero``, ``/dev/stdin`` or a FIFO: reading it whole would never end, or fill memory,
before toolscript could say anything. The file is opened without blocking (a FIFO's open
waits for a writer otherwise), checked to be a regular file, and read to at most ``limit``.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["MAX_STATE_FILE_BYTES", "read_regular_file", "read_state_file"]

# What toolscript reads whole of a file it keeps in the user's folders (learned result types,
# recent calls): far past what their own caps let them hold.
MAX_STATE_FILE_BYTES = 64_000_000


def read_regular_file(path: Path, limit: int, *, links: bool = True) -> bytes:
    """The bytes of ``path``; FileNotFoundError when it is absent, another OSError (with a
    ``strerror`` to show) when it is no regular file or larger than ``limit`` bytes, and,
    without ``links``, when it is a symbolic link (ELOOP)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if links else os.O_NOFOLLOW)
    descriptor = os.open(path, flags)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(
                errno.EINVAL, "not a regular file (a device, a FIFO or a folder)", str(path)
            )
        if status.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit // 1_000_000} MB", str(path))
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:  # grew while it was read
        raise OSError(errno.EFBIG, f"larger than {limit // 1_000_000} MB", str(path))
    return data


def read_state_file(path: Path, limit: int | None = None) -> str:
    """The text of a file toolscript keeps in the user's state folder: only a regular file,
    never through a link, up to ``limit`` bytes (else ``MAX_STATE_FILE_BYTES``), raising
    ``read_regular_file``'s errors, or ``UnicodeDecodeError`` (a ``ValueError``) for bytes
    that are not UTF-8. Whatever shares
    the user's account (an agent with a shell) may plant a FIFO there, which stalled the
    gateway's start (or the MCP face's first execute) for good, or a link to ``/dev/zero``,
    read until memory ran out."""
    bound = MAX_STATE_FILE_BYTES if limit is None else limit
    return read_regular_file(path, bound, links=False).decode("utf-8")
