"""The MCP face's own gateway, served in a thread of the face's process.

What ``gateway start --port 0 --no-state --search-when-idle`` serves, with no second
interpreter: one copy of the MCP SDK and the rest in memory rather than two (about 70 MB).
The gateway keeps an event loop of its own in its thread, so its work never holds up the
face's loop; the face reaches it over HTTP on 127.0.0.1, except for each run's
registration and end, which it asks on that loop (``local``: ``local.py``). It writes no state file
(other commands do not find it) and leaves the face's stdout alone: its log goes where the
face's goes (stderr), and every process it starts has pipes or files for its stdout.

Only the standard library and ``upstream/early.py`` are imported here: the face spawns its
servers with ``prepare`` before its own imports, and the gateway's imports happen in its
thread (``start``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from toolscript.upstream.early import EarlyServer, discard, spawn_early

if TYPE_CHECKING:
    from toolscript.gateway.local import LocalGateway

__all__ = ["InProcessGateway"]

log = logging.getLogger("toolscript.gateway")


class InProcessGateway:
    """A gateway served by a thread of this process: ``url`` once it listens, "" before and
    after; ``error`` what stopped it from starting, if anything did."""

    def __init__(self, config: str | None, cache: str | None) -> None:
        self.config, self.cache = config, cache
        self.url = ""
        self.error: BaseException | None = None
        self._early: dict[str, EarlyServer] = {}
        self._announced = threading.Event()  # the URL is out, or the thread ended
        self._ended = threading.Event()
        self._lock = threading.Lock()
        self._stop: Callable[[], None] | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None
        # the gateway as calls on its loop (``local.py``), once that loop runs
        self.local: LocalGateway | None = None

    def prepare(self) -> None:
        """Read the trusted config and spawn its stdio servers now (standard library only),
        so they start while this process imports; an untrusted or broken config is left to
        ``start``, which fails as ``gateway start`` does."""
        from toolscript.config import load_config
        from toolscript.errors import ToolscriptError

        try:
            loaded = load_config(self.config, require_trust=True)
        except ToolscriptError:
            return
        self._early = spawn_early(loaded.servers)

    def start(self) -> None:
        """Serve in a thread of its own (a daemon: the face's exit never waits for it)."""
        self._thread = threading.Thread(target=self._serve, name="gateway", daemon=True)
        self._thread.start()

    def wait_for_url(self, wait: float) -> str:
        """The URL, once it listens (up to ``wait`` seconds); "" when it did not start."""
        self._announced.wait(wait)
        return self.url

    def alive(self) -> bool:
        """Serving, and not stopping: one stopping by itself (its project's folder gone)
        answers no run, and the face starts another once it has ended."""
        local = self.local
        stopping = local is not None and local.gateway.runs.closing
        return (
            self._thread is not None and not self._ended.is_set() and bool(self.url)
        ) and not stopping

    def stop(self, grace: float = 20.0) -> None:
        """Stop it as SIGTERM stops a gateway (its servers, checker and workers with it) and
        wait up to ``grace`` seconds for that."""
        with self._lock:
            self._stopping = True
            stop = self._stop
        if stop is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed
                stop()
        if self._thread is not None:
            self._thread.join(grace)
        else:
            discard(self._early)  # never started: what was spawned for it goes

    def _on_loop(self, stop: Callable[[], None], local: LocalGateway) -> None:
        with self._lock:
            self._stop = stop
            self.local = local
            stopping = self._stopping
        if stopping:  # asked to stop before it could be
            stop()

    def _announce(self, url: str) -> None:
        self.url = url
        self._announced.set()

    def _serve(self) -> None:
        early, self._early = self._early, {}
        try:
            from toolscript.config import load_config
            from toolscript.gateway.runner import configure_logging, serve
            from toolscript.search.engine import SearchOptions

            configure_logging()  # to stderr, as the face's own log
            loaded = load_config(self.config, require_trust=True)
            if not early:  # spawned by ``prepare`` when the config could be read then
                early = spawn_early(loaded.servers)
            chosen = loaded.search
            cache = loaded.cache_dir(self.cache)
            with self._lock:
                if self._stopping:
                    return
            serve(
                loaded,
                search=SearchOptions(
                    alpha=chosen.alpha,
                    threshold=chosen.threshold,
                    model=chosen.model,
                    device=chosen.device,
                    cache=chosen.cache,
                    semantic=chosen.semantic,
                ),
                port=0,
                cache=cache,
                write_state=False,
                early=early,
                search_when_idle=True,
                announce=self._announce,
                own_stdout=False,
                on_loop=self._on_loop,
            )
        except BaseException as exc:  # the face says why at its next call
            self.error = exc
            log.warning("the face's gateway stopped: %s", exc, exc_info=not _expected(exc))
        finally:
            discard(early)  # what no server took (a start that failed before they connected)
            self.url = ""
            self.local = None
            self._ended.set()
            self._announced.set()


def _expected(exc: BaseException) -> bool:
    from toolscript.errors import ToolscriptError

    return isinstance(exc, ToolscriptError)


def log_level_default() -> None:
    """The face's gateway logs warnings and worse unless ``TOOLSCRIPT_LOG_LEVEL`` says
    otherwise (as the process the face used to start did); its children inherit it."""
    os.environ.setdefault("TOOLSCRIPT_LOG_LEVEL", "WARNING")
