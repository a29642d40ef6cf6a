"""One build of a cache directory at a time, across processes: the gateway's in-process
pipeline and a standalone ``doit`` in the same project.

doit's sqlite3 backend reads its whole dependency database when it starts and writes it
whole when it ends, so two builds at once lost each other's records: a ``doit`` run while
the gateway built (after a server's ``tools/list_changed``) fetched the server afresh,
wrote its own tool list over the one the gateway learned, and then said everything was up
to date while the gateway served other tools. The lock is ``flock`` on ``.build.lock`` in
the cache directory (Linux and macOS; released by the OS when its process ends), opened
without following a link (a cloned repository's ``.toolscript/`` is not trusted). A build
waiting for it gives up when its ``stop`` event is set (``BuildStopped``): a gateway asked
to stop does not wait for another process's build.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["BUILD_LOCK_WAIT", "BuildStopped", "build_lock", "hold_build_lock"]

log = logging.getLogger("toolscript.pipeline")

BUILD_LOCK_WAIT = 600.0  # seconds a build waits for another one before it goes on anyway
_POLL = 0.1
LOCK_NAME = ".build.lock"


class BuildStopped(Exception):
    """A build waiting for the lock was stopped (its process is stopping): nothing built."""


def _open(root: Path) -> int:
    """The lock file, a regular file of its own: a link, a folder or a FIFO planted there
    (a cloned repository's ``.toolscript/``; a folder turned the lock off) is made anew."""
    path = root / LOCK_NAME
    flags = (
        os.O_RDWR
        | os.O_CREAT
        | os.O_NONBLOCK
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        descriptor = os.open(path, flags, 0o600)
    except OSError as exc:
        # A link, a folder or a socket is made anew; any other failure (no descriptor left,
        # no permission) keeps the file: another build may hold it.
        if exc.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            raise
    else:
        if stat.S_ISREG(os.fstat(descriptor).st_mode):
            return descriptor
        os.close(descriptor)  # a FIFO
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        path.unlink()
    return os.open(path, flags | os.O_EXCL, 0o600)


def hold_build_lock(
    root: Path,
    waiting: Callable[[], object],
    wait: float = BUILD_LOCK_WAIT,
    stop: threading.Event | None = None,
) -> int | None:
    """Take the build lock of the cache directory ``root``; its descriptor (close it to
    let go), or None when it could not be opened or another build held it past ``wait``
    seconds (the build goes on, as it did before there was a lock). ``waiting`` is called
    once when another build holds it. Raise BuildStopped when ``stop`` is set while it waits."""
    try:
        descriptor = _open(root)
    except OSError as exc:
        log.warning("pipeline: cannot open the build lock in %s (%s); building anyway", root, exc)
        return None
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return descriptor
        except BlockingIOError:
            pass
        except OSError as exc:
            log.warning("pipeline: cannot take the build lock (%s); building anyway", exc)
            os.close(descriptor)
            return None
        if not told:
            waiting()
            told = True
        if time.monotonic() >= deadline:
            log.warning("pipeline: another build of %s held it %.0f s; building anyway", root, wait)
            os.close(descriptor)
            return None
        if stop is None:
            time.sleep(_POLL)
        elif stop.wait(_POLL):
            os.close(descriptor)
            raise BuildStopped(f"stopped while another build of {root} held its lock")


@contextlib.contextmanager
def build_lock(
    root: Path,
    wait: float = BUILD_LOCK_WAIT,
    stop: threading.Event | None = None,
    waiting: Callable[[], object] | None = None,
) -> Iterator[None]:
    """Hold the build lock of ``root`` for the block (see ``hold_build_lock``); ``waiting``
    is called once when another build holds it (after it is logged)."""

    def told() -> None:
        log.info("pipeline: waiting for another build of %s (a `doit`?)", root)
        if waiting is not None:
            waiting()

    descriptor = hold_build_lock(root, told, wait, stop)
    try:
        yield
    finally:
        if descriptor is not None:
            os.close(descriptor)
