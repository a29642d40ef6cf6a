"""A server process's stderr, written to a temporary file kept to its last bytes.

The server writes to the file itself (its fd 2: no thread pumps it), and the gateway reads
only its end, for the lines that say why it failed. Without a bound, a server that logs on
and on (a debug level, a flood) grew the file for as long as it ran, and reading its end
read all of it into memory. The file is opened for appending, so once it is cut back to its
end (``keep_end``), the server's next writes land after what was kept, wherever its own
offset was. Standard library only (``upstream/early.py`` spawns servers before the
gateway's imports).
"""

from __future__ import annotations

import os
import tempfile
from typing import IO

__all__ = ["CUT_PAST", "KEEP_EVERY", "KEPT", "keep_end", "new_stderr_file", "read_end"]

KEPT = 64 * 1024  # bytes of a server's stderr kept when it is cut
CUT_PAST = 1024 * 1024  # a file over this many bytes is cut back to its last KEPT
KEEP_EVERY = 1.0  # seconds between two looks at a running server's file


def new_stderr_file() -> IO[str]:
    """A temporary file for a process's stderr, opened for appending."""
    import fcntl

    file = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - the caller closes it with its process
    descriptor = file.fileno()
    fcntl.fcntl(descriptor, fcntl.F_SETFL, fcntl.fcntl(descriptor, fcntl.F_GETFL) | os.O_APPEND)
    return file


def keep_end(file: IO[str]) -> None:
    """Cut ``file`` back to its last ``KEPT`` bytes once it holds more than ``CUT_PAST``."""
    try:
        descriptor = file.fileno()
        size = os.fstat(descriptor).st_size
        if size <= CUT_PAST:
            return
        end = os.pread(descriptor, KEPT, size - KEPT)
        os.ftruncate(descriptor, 0)
        os.write(descriptor, end)  # appended: after whatever the server wrote meanwhile
    except (OSError, ValueError):  # closed as its server stopped
        return


def read_end(file: IO[str], size: int) -> str:
    """The last ``size`` bytes of ``file`` as text, without reading the rest."""
    descriptor = file.fileno()
    end = os.fstat(descriptor).st_size
    return os.pread(descriptor, size, max(0, end - size)).decode("utf-8", "replace")
