"""What `exec` starts dies with it, however it dies.

SIGINT, SIGTERM and SIGHUP become exceptions, so the ``finally`` blocks of the run stop
the sandbox and any ephemeral gateway; should that clean-up itself hang, exec leaves
anyway after ``EXIT_DEADLINE`` seconds. SIGKILL cannot be caught: for it (and for that
forced exit) a watchdog process (a POSIX shell) holds the read end of a pipe whose write
end only exec holds, and stops everything exec named when that pipe closes without a last
word (``watchdog.py``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from toolscript.execution import watchdog
from toolscript.plumbing.processes import Tethered, stop_process, watch_tethered

__all__ = ["Lifeline"]

_CAUGHT = (signal.SIGTERM, signal.SIGHUP)
EXIT_DEADLINE = 20.0  # seconds the clean-up after a signal may take before exec just exits


class Lifeline:
    """Context manager for one exec run; ``watch`` each process it starts.

    With ``catch_signals`` False it leaves signals to its owner (an event loop that handles
    them itself) and only keeps the watchdog.
    """

    def __init__(self, *, catch_signals: bool = True) -> None:
        self._write: int | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._previous: dict[int, Any] = {}
        self._catch_signals = catch_signals
        self._lock = threading.Lock()  # (runs' threads and the gateway's watch at once)
        self._ended = False  # a watch after the end would start a watchdog nothing stops
        self._unwatch: Callable[[], None] | None = None  # (``follow_tethered``)

    def __enter__(self) -> Lifeline:
        if not self._catch_signals:
            return self
        caught = list(_CAUGHT)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            caught.append(signal.SIGINT)  # not when ignored (a background job keeps it so)
        for sig in caught:
            self._previous[sig] = signal.signal(sig, _raise_exit)
        return self

    def watch(
        self, pid: int, *, group: bool, server: bool = False, started: float | None = None
    ) -> None:
        """Stop ``pid`` (its whole process group with ``group``) if exec dies; ``server``: a
        stdio server's group, stopped politely (a grace to leave once its stdin closed with
        exec, then TERM, then KILL); ``started``: its start time (``create_time``), without
        which the watchdog signals whatever process has that number then."""
        kind = "s" if server else "g" if group else "p"
        with self._lock:
            if self._ended:
                return
            if self._write is None:
                self._start_watchdog()
            assert self._write is not None and self._watchdog is not None
            since = "" if started is None else _seconds_after(started, self._watchdog.pid)
            os.write(self._write, f"{kind}{pid}{since}\n".encode())

    def forget(self, pid: int, *, group: bool, server: bool = False) -> None:
        """``pid`` ended: the watchdog no longer stops it (its number may be reused)."""
        word = f"f{'s' if server else 'g' if group else 'p'}{pid}\n"
        with self._lock:
            if self._write is not None:
                with contextlib.suppress(OSError):
                    os.write(self._write, word.encode())

    def follow_tethered(self) -> None:
        """Watch every process tethered to this one (``processes.watch_tethered``) from now
        to this lifeline's end: what the MCP face's own gateway starts (its servers, ``deno
        lsp``, search workers, spares) is stopped if the face dies. The watchdog starts now,
        before any of them: none is ever running but not yet named to it."""
        with self._lock:
            if self._write is None and not self._ended:
                self._start_watchdog()
        self._unwatch = watch_tethered(self.tethered)

    def tethered(self, process: Tethered, started: bool) -> None:
        """``processes.watch_tethered``'s watcher (``follow_tethered``). A watchdog gone (killed
        by hand) cannot be told: the process still starts, stopped by its owner's own stop
        (an error here would leave it running, its start failed after its spawn)."""
        if started:
            with contextlib.suppress(OSError):
                self.watch(
                    process.pid, group=process.group, server=process.server, started=process.started
                )
        else:
            self.forget(process.pid, group=process.group, server=process.server)

    def _start_watchdog(self) -> None:
        read, write = os.pipe()
        try:
            self._watchdog = subprocess.Popen(
                watchdog.command(),
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl+C to the terminal's group is for exec, not for it
            )
        finally:
            os.close(read)
        self._write = write

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
        unwatch, self._unwatch = self._unwatch, None
        if unwatch is not None:
            unwatch()
        with self._lock:
            self._ended = True
            if self._write is not None:
                with contextlib.suppress(OSError):  # every process was stopped by the run itself
                    os.write(self._write, b"done\n")
                os.close(self._write)
                self._write = None
        if self._watchdog is not None:
            stop_process(self._watchdog, 2, ask=False)  # "done" asked it to stop

    def close(self) -> None:
        """End it as leaving its ``with`` does (once: a second call does nothing more)."""
        self.__exit__(None, None, None)


def _seconds_after(started: float, watchdog: int) -> str:
    """``@<seconds>``: a start time as the watchdog checks it, in whole seconds after its own
    (as ``ps`` tells their ages; both start times read now, so that a system clock set since
    moves neither: Linux counts them from a boot time that follows the clock); "" when the
    watchdog's start cannot be read."""
    from toolscript.plumbing.processes import start_time

    own = start_time(watchdog)
    return "" if own is None else f"@{round(started - own)}"


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    import threading

    # The run's clean-up stops everything it started; if it hangs, exec exits regardless and
    # the watchdog, whose pipe then closes without "done", stops what is left.
    backstop = threading.Timer(EXIT_DEADLINE, os._exit, [128 + signum])
    backstop.daemon = True
    backstop.start()
    raise SystemExit(128 + signum)
