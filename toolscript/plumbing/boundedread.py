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

__all__ = ["read_regular_file"]


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
