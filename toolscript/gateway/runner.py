"""Run the gateway: bind, connect the servers, print the URL, serve until a signal."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from toolscript.config import Config
from toolscript.errors import UsageError
from toolscript.gateway.state import (
    gateway_state_file,
    remove_gateway_state,
    write_gateway_state,
)
from toolscript.search.engine import SearchOptions
from toolscript.upstream.early import EarlyServer

if TYPE_CHECKING:
    from toolscript.gateway.local import LocalGateway

__all__ = ["gateway_url", "serve", "uvicorn_config"]

log = logging.getLogger("toolscript.gateway")


def gateway_url(host: str, port: int, token: str) -> str:
    """The gateway's URL with ``token`` as its path prefix (the owner's: what the state
    file and stdout carry; ``guard.agent_url`` derives the agent's from it)."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/{token}"


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit this: no Nagle delay between response headers and body.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="choose another --port, or 0 for a free one",
        ) from exc
    sock.listen(512)
    sock.set_inheritable(True)
    return sock


def _allowed_hosts(host: str, port: int) -> set[str]:
    names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
    return {f"{name}:{port}" for name in names}


def uvicorn_config(app: Any) -> Any:
    """How uvicorn serves the gateway's ``app`` (its ``uvicorn.Config``)."""
    import uvicorn

    from toolscript.gateway.connections import BoundedHTTPProtocol

    return uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=5,
        log_config=None,
        http=BoundedHTTPProtocol,
        # No websockets (the guard refuses them): uvicorn's "auto" would import the
        # websockets package (29 modules, 0.7 MB) for upgrades it then hands the guard.
        ws="none",
    )


BUILDING_PATH = "/runtime/building"  # (the client's name for it: execution/locate.py)


class _AfterFirstBuild:
    """The routes answer once the first build is in (the module, types, search, scripts all
    read it); the URL goes out before it, and tool calls (the fast path) never wait.
    ``GET /runtime/building`` answers at once whether that build is in and whether it waits
    for another process's build of the project (a `doit` holding the build lock): exec and
    the face say why they wait rather than time out on a route that waits."""

    def __init__(self, app: Any, gateway: Any) -> None:
        self.app, self.gateway = app, gateway

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == BUILDING_PATH and scope["method"] == "GET":
            from toolscript.gateway.guard import answer_json

            built = self.gateway.first_build.is_set()
            waits = not built and self.gateway.build_waits.is_set()
            await answer_json(send, 200, {"built": built, "waits_for_another_build": waits})
            return
        if scope["type"] == "http" and not self.gateway.first_build.is_set():
            await self.gateway.first_build.wait()
        await self.app(scope, receive, send)


class _VisibleFormatter(logging.Formatter):
    """Log lines with their control characters as escapes: a line may quote what a server
    sent (its stderr, an error, a tool's name), and the log is read on a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        from toolscript.store.outputs import visible_controls

        return visible_controls(super().format(record))


def configure_logging() -> None:
    """Log to stderr: INFO and up, or TOOLSCRIPT_LOG_LEVEL's. A gateway in the background of
    an interactive shell (`gateway start &`) logs warnings and errors only, since its
    terminal is the user's prompt and their other commands' output."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads: see search/semantic
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    default = "WARNING" if _in_the_background() else "INFO"
    logging.basicConfig(
        level=(os.environ.get("TOOLSCRIPT_LOG_LEVEL") or default).upper(),
        handlers=[handler],
        force=True,
    )
    for noisy in ("mcp", "httpx", "httpx2", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _in_the_background() -> bool:
    """Whether stderr is this process's terminal and another process group has it in the
    foreground (a job started with `&` in a shell with job control)."""
    try:
        descriptor = sys.stderr.fileno()
        return os.isatty(descriptor) and os.tcgetpgrp(descriptor) != os.getpgrp()
    except (OSError, ValueError, AttributeError):  # not our terminal, or no descriptor
        return False


def serve(
    config: Config,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    cache: Path | None = None,
    write_state: bool = True,
    connect_timeout: float = 30.0,
    ready_wait: float = 10.0,
    max_request_bytes: int = 8 * 1024 * 1024,
    search: SearchOptions | None = None,
    announce: Callable[[str], None] | None = None,
    stale: str | None = None,
    warm_checker: bool = True,
    infer_results: bool = True,
    search_index: bool = True,
    early: dict[str, EarlyServer] | None = None,
    deferred: set[str] | None = None,
    search_when_idle: bool = False,
    own_stdout: bool = True,
    on_loop: Callable[[Callable[[], None], LocalGateway], None] | None = None,
    when_serving: Callable[[], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; ``announce`` gets the URL once every server has been tried.

    Nothing that can wait comes before the URL: the warm checker and the search model start
    after it (``Gateway.url_announced``). ``search_index`` False: a gateway for one script's
    calls (exec's), which builds no search index.

    ``early``: server processes spawned before these imports (``upstream/early.py``);
    ``deferred``: servers that connect at their first call, not at the start;
    ``search_when_idle``: the search model starts once no run is under way, or at a first
    search (``Gateway``).

    ``stale``: the line to log of the state file this gateway replaces (``mark_starting``):
    why it was stale, or the gateway it names running without the project's lock.

    Served in a thread of another program (the MCP face's own gateway, ``inprocess.py``):
    ``own_stdout`` False leaves ``sys.stdout`` alone (it is that program's), and ``on_loop``
    gets, once the loop runs, a function any thread may call to stop the gateway as SIGTERM
    does (no signal reaches a thread that is not the main one), its processes stopping at
    once (``Gateway.begin_shutdown``), and the gateway as that program may call it on its
    loop (``local.py``).

    ``when_serving`` is called once it serves, SIGTERM then stopping it as it should (its
    handlers in place; before them SIGTERM kills it, leaving its servers running).
    """
    import uvicorn

    try:
        import sniffio
    except ImportError:  # anyio works without it, and then asks asyncio directly
        sniffio = None  # type: ignore[assignment]
    from toolscript.gateway.app import ToolCallFastPath, build_app
    from toolscript.gateway.connections import raise_file_limit
    from toolscript.gateway.core import Gateway
    from toolscript.gateway.guard import TokenGuard
    from toolscript.gateway.telemetry import telemetry_from_environment

    raise_file_limit()
    if own_stdout:
        _stdin_from_nothing()
    sock = _bind(host, port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)
    url = gateway_url(host, port, token)
    gateway = Gateway(
        config,
        cache=cache,
        connect_timeout=connect_timeout,
        ready_wait=ready_wait,
        search=search,
        warm_checker=warm_checker,
        telemetry=telemetry_from_environment(),
        infer_results=infer_results,
        after_url=True,
        search_index=search_index,
        early=early,
        deferred=deferred,
        search_when_idle=search_when_idle,
        start_mark=cache if write_state else None,
    )
    state_dir = cache if write_state else None
    app = TokenGuard(
        ToolCallFastPath(_AfterFirstBuild(build_app(gateway), gateway), gateway, max_request_bytes),
        token,
        _allowed_hosts(host, port),
        runs=gateway.runs.by_token,
        cleared=gateway.runs.cleared,
        agent=True,  # TOOLSCRIPT_GATEWAY_URL of an agent's environment carries that token
    )

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # uvicorn would re-raise the signal after shutdown; we finish and exit 0 instead.
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            else:
                if not self.should_exit:
                    with contextlib.suppress(RuntimeError):  # no loop yet: nothing waits
                        asyncio.get_running_loop().call_soon_threadsafe(gateway.begin_shutdown)
                self.should_exit = True

    server = Server(uvicorn_config(app))
    # It stops as SIGTERM stops it, a process of its own or the MCP face's: the face's kept
    # serving with its watch ended, each run waiting the whole 10 s for a watch pass, and
    # its next build made the old folder again.
    gateway.on_project_gone = functools.partial(server.handle_exit, signal.SIGTERM, None)

    async def main() -> None:
        # anyio asks sniffio which event loop runs on every cancel scope and stream operation;
        # sniffio then calls asyncio.current_task() each time (9% of the gateway's CPU per tool
        # call). This thread only ever runs asyncio, so say so once.
        if sniffio is not None:
            sniffio.thread_local.name = "asyncio"
        if on_loop is not None:
            loop = asyncio.get_running_loop()

            def stop_at_once() -> None:
                # Its program is leaving: the servers, checker and workers stop beside the
                # HTTP server's shutdown, not after it (``begin_shutdown``).
                gateway.begin_shutdown(at_once=True)
                server.handle_exit(signal.SIGTERM, None)

            def stop() -> None:
                loop.call_soon_threadsafe(stop_at_once)

            from toolscript.gateway.local import LocalGateway

            on_loop(stop, LocalGateway(gateway, loop))
        state = {
            "url": url,
            "pid": os.getpid(),
            "host": host,
            "port": port,
            "config": str(config.path) if config.path else None,
            "started": time.time(),
        }
        if state_dir is not None and stale is not None:
            log.warning("%s", stale)
        keeping: asyncio.Task[None] | None = None
        try:
            serving = asyncio.create_task(server.serve(sockets=[sock]))
            while not server.started:
                if serving.done():
                    await serving
                    return
                await asyncio.sleep(0.01)
            if when_serving is not None:
                when_serving()
            if state_dir is not None:
                write_gateway_state(state_dir, state)
                keeping = asyncio.create_task(_keep_state_file(state_dir, state))
            log.info(
                "listening on %s (%.2f s after the process started)",
                gateway_url(host, port, "<token>"),
                _since_process_start(),
            )
            gateway.url = url  # background runs reach the gateway at it
            (announce or _print_url)(url)
            gateway.url_announced()
            if own_stdout:  # stdout carried the URL; a print() in an internal tool goes to the log
                _stdout_to_log()
            await serving
        finally:
            if keeping is not None:
                keeping.cancel()
            if state_dir is not None:
                remove_gateway_state(state_dir, os.getpid())
            log.info("stopped")

    asyncio.run(main())
    sock.close()


STATE_CHECK_SECONDS = 2.0  # how soon a removed state file is written again


async def _keep_state_file(state_dir: Path, state: dict[str, Any]) -> None:
    """Write the state file again when it is gone: a user clearing the cache
    (``rm -rf ~/.cache/toolscript``) removed it under a running gateway, which commands then
    said was not running (and `gateway stop` could not stop), and `gateway start` started a
    second one beside it. Another gateway's file in its place is left alone."""
    path = gateway_state_file(state_dir)
    while True:
        await asyncio.sleep(STATE_CHECK_SECONDS)
        if path.exists():
            continue
        try:
            write_gateway_state(state_dir, state)
        except OSError as exc:
            log.warning(
                "cannot write the state file again (%s): commands here do not find this gateway",
                exc,
            )
        else:
            log.info("the state file was removed (the cache cleared?): written again")


def _since_process_start() -> float:
    from toolscript.plumbing.processes import seconds_since_start

    return seconds_since_start()


def _print_url(url: str) -> None:
    """The URL on the stream the process started with, not on whatever ``sys.stdout`` is
    now: doit swaps ``sys.stdout`` for the whole process while a step of the build runs in
    its thread, and a URL printed meanwhile went into doit's capture (the gateway served,
    and whoever started it waited in vain)."""
    out = sys.__stdout__
    if out is not None:
        out.write(url + "\n")
        out.flush()


def _stdin_from_nothing() -> None:
    """A terminal's stdin becomes /dev/null: an internal tool's input() (at a call, or as
    its file is imported) read the terminal of `gateway start &`, a background job, which
    the shell stops (SIGTTIN), every server and call with it. Now it is an EOFError."""
    with contextlib.suppress(OSError, ValueError):
        if os.isatty(0):
            empty = os.open(os.devnull, os.O_RDONLY)
            os.dup2(empty, 0)
            os.close(empty)


def _stdout_to_log() -> None:
    """After the URL, stdout is the log's: its file descriptor becomes stderr's, so a
    print() anywhere (an internal tool's) lands in the log whichever stream object a
    build step of doit's left in ``sys.stdout``, and never after the URL in a URL file."""
    out, log_stream = sys.__stdout__, sys.__stderr__
    if out is not None and log_stream is not None:
        with contextlib.suppress(OSError, ValueError):
            out.flush()
            os.dup2(log_stream.fileno(), out.fileno())
    sys.stdout = sys.stderr
