"""Local Python tools as a gateway upstream: internal files in-process, PEP 723 files in workers.

A file without a PEP 723 header is imported into the gateway and its functions
run in threads, with ``context.gateway`` giving them the tool registry, config
and search. A file with a header runs in a persistent worker started with
``uv run`` (its dependencies installed by uv, isolated): spawned on the first
call, reused, stopped after ``idleTimeout`` idle seconds, replaced when it dies,
and stopped (TERM, then KILL) with the gateway.

Describing a file (importing it) has a deadline, and a stop of the server ends it at
once: a file that hangs on import fails with an error naming it and the deadline, the
other servers serve meanwhile, and it never holds up the gateway's shutdown (an internal
file is imported in a daemon thread that is abandoned; an external file's describing
process group is killed, and it exits by itself when the gateway is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import logging
import os
import re
import signal
import sys
import threading
import time
import tomllib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from toolscript.config import ServerConfig
from toolscript.errors import ServerUnavailableError, ToolTimeoutError, UpstreamError
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.processes import (
    process_alive,
    signal_quietly,
    stop_process_async,
    tether,
    untether,
)
from toolscript.plumbing.redact import cut_redacted, redact, sent_text
from toolscript.plumbing.requirespython import (
    InvalidSpecifier,
    python_satisfies,
    running_python_version,
)
from toolscript.policy import unmatched_rules
from toolscript.upstream.base import ServerState, ToolHost, ToolsChanged

__all__ = ["GatewayView", "LocalToolServer", "module_docstring", "parse_script_metadata"]

log = logging.getLogger("toolscript.local")

WORKER = Path(__file__).with_name("worker.py")
INSTALL_TIMEOUT = 600.0  # installing dependencies does not count against a call's timeout
IMPORT_TIMEOUT = 120.0  # seconds an internal tool file may take to import (to be described)
WORKER_LINE_LIMIT = 64 * 1024 * 1024  # the largest reply a worker may send
TOOL_FILE_POLL = 1.0  # seconds between looks at a tool file for edits
TOOL_FILE_SETTLE = 0.25  # an edited file is read again after this long, until two reads agree
NOTES_SHOWN = 10  # why public functions are not tools: at most this many in status, then a count
NOTE_CHARS = 400  # and each cut to this many characters
MAX_TOOL_FILE_BYTES = 16 * 1024 * 1024  # a tool file larger is not loaded (its error says so)
# Threads of one internal tool file's calls at once; more wait their turn (within their
# timeout). They are never anyio's default threads, which the gateway's own work shares (the
# run log, approvals, a run's registration): a script holding 40 slow calls of a tool held
# all of it, every other run waiting as long as the calls did.
INTERNAL_CALL_THREADS = 16
_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '[^']+'")
WORKER_DEPENDENCY = "pydantic>=2"  # the worker's own, installed beside a file's dependencies
# What uv prints when it cannot reach its index (refused, no route, no name, TLS).
_UNREACHED = re.compile(r"Failed to fetch: \S*?/([A-Za-z0-9._-]+)/?\s*$")
_HEADER = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


def parse_script_metadata(path: Path, text: str) -> dict[str, Any] | None:
    """The PEP 723 ``script`` block parsed with tomllib; None when absent, malformed or given
    twice (PEP 723: a tool must refuse several blocks of one type, as ``uv run`` does)."""
    blocks = [match for match in _HEADER.finditer(text) if match.group("type") == "script"]
    if not blocks:
        return None
    if len(blocks) > 1:
        lines = ", ".join(str(text.count("\n", 0, block.start()) + 1) for block in blocks)
        log.warning(
            "%s: %d PEP 723 script headers (lines %s): keep one; treating the file as internal",
            path,
            len(blocks),
            lines,
        )
        return None
    match = blocks[0]
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in match.group("content").splitlines(keepends=True)
    )
    try:
        return tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        line = text.count("\n", 0, match.start()) + 1
        log.warning(
            "%s:%d: malformed PEP 723 header (%s); treating the file as internal", path, line, exc
        )
        return None


class GatewayView:
    """What internal tools may use of the gateway (``context.gateway``)."""

    def __init__(self, gateway: ToolHost) -> None:
        self._gateway = gateway

    @property
    def config(self) -> Any:
        """The loaded configuration (frozen)."""
        return self._gateway.config

    def servers(self) -> list[dict[str, Any]]:
        """Every server's status: name, transport, state, tool count."""
        return [up.status() for up in self._gateway.upstreams.values()]

    def tools(self) -> list[dict[str, Any]]:
        """Every tool as ``{"server", "name", "description"}``."""
        return [
            {"server": server, "name": tool["name"], "description": tool.get("description", "")}
            for server, tool in self._gateway.all_tools()
        ]

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The gateway's tool search."""
        hits, _ = self._gateway.search.search(query, limit=limit)
        return [hit.to_dict() for hit in hits]


@dataclass
class _Worker:
    process: asyncio.subprocess.Process
    ready: asyncio.Future[int]
    pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    stderr_tail: list[str] = field(default_factory=list)
    readers: list[asyncio.Future[None]] = field(default_factory=list)


class LocalToolServer:
    """One tool file, with the same face as an MCP upstream."""

    def __init__(
        self,
        config: ServerConfig,
        gateway: ToolHost | None,
        on_tools_changed: ToolsChanged | None = None,
    ) -> None:
        """``gateway`` None: no ``context.gateway`` for the tools (standalone doit lists them)."""
        self.config = config
        self.name = config.name
        self.path = Path(config.command or "")
        self.state = ServerState.DISABLED if config.disabled else ServerState.CONNECTING
        self.error: str | None = None
        self.remedy: str | None = None
        self.stderr_tail: list[str] = []
        self.tools: dict[str, dict[str, Any]] = {}
        self.attempts = 0
        self.first_attempt_done = anyio.Event()
        self.metadata: dict[str, Any] | None = None
        self.docstring = ""  # the file's module docstring: its description when the config has none
        self._gateway = gateway
        self._functions: dict[str, Any] = {}
        self._worker: _Worker | None = None
        self._spawning: asyncio.Lock | None = None
        self._ids = itertools.count(1)
        self._stopping = anyio.Event()
        self._on_tools_changed = on_tools_changed
        self.workers_started = 0
        self.warnings: list[str] = []  # an edit of the file that could not be loaded
        self.notes: list[str] = []  # why a public function of the loaded file is not a tool
        self._file_seen: tuple[int, int] | None = None  # the file as last loaded
        self._retiring: dict[asyncio.Future[None], _Worker] = {}  # workers of older versions
        self._call_threads: anyio.CapacityLimiter | None = None  # made in the event loop

    @property
    def external(self) -> bool:
        return self.metadata is not None

    # -- lifecycle -----------------------------------------------------------

    async def run(self) -> None:
        if self.config.disabled:
            self.first_attempt_done.set()
            return
        unset = self.config.unset_error()
        if unset is not None:  # never loaded with a secret missing; the config's warning said it
            self.state = ServerState.FAILED
            self.error = unset
            self.first_attempt_done.set()
            return
        self.attempts += 1
        try:
            self._file_seen = _fingerprint(self.path)
            text = await anyio.to_thread.run_sync(_tool_file_text, self.path)
            if not await self._unless_stopped(self._load(text)):
                self.state = ServerState.STOPPED  # stopped while the file was described
                return
            self.state = ServerState.CONNECTED
            log.info(
                "%s: %s tool file, %d tools",
                self.name,
                "external" if self.external else "internal",
                len(self.tools),
            )
        except Exception as exc:
            self.state = ServerState.FAILED
            self.error = self._redact(f"{type(exc).__name__}: {exc}")
            log.warning("%s: %s", self.name, self.error)
        finally:
            self.first_attempt_done.set()
        if self.state == ServerState.CONNECTED and self._on_tools_changed is not None:
            await self._on_tools_changed(self)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._reap_idle_worker)
            tasks.start_soon(self._watch_file)
            await self._stopping.wait()
            tasks.cancel_scope.cancel()
        await self._stop_worker()
        self.state = ServerState.STOPPED

    async def stop(self, *, hurry: bool = False) -> None:
        self._stopping.set()  # (its worker is sent SIGTERM at once either way)

    async def _unless_stopped(self, work: Awaitable[None]) -> bool:
        """Await ``work`` unless the server is stopped first (then it is cancelled, which
        ends a describing process or abandons an import); True when it finished."""
        finished = False
        failure: Exception | None = None
        async with anyio.create_task_group() as tasks:

            async def stop_when_stopped() -> None:
                await self._stopping.wait()
                tasks.cancel_scope.cancel()

            tasks.start_soon(stop_when_stopped)
            try:
                await work
                finished = True
            except Exception as exc:  # raised as itself, not in a group
                failure = exc
            tasks.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return finished

    async def _load(self, text: str) -> None:
        """Describe the file as ``text`` says, then swap its tools and its code at once (an
        internal file's functions; an external file's worker, which the next call starts)."""
        metadata = parse_script_metadata(self.path, text)
        self.docstring = module_docstring(text)
        functions: dict[str, Any] = {}
        notes: list[str] = []
        ender = None
        if metadata is not None:
            self._check_requires_python(metadata)
            described = await self._describe_external(metadata, notes)
        else:
            ender = process_ender_warning(self.path, text)
            if ender is not None:  # said before the import: it may be what ends the gateway
                log.warning("%s: %s", self.name, ender)
            described, functions = await self._describe_internal(notes)
        tools = {tool["name"]: tool for tool in described if self.config.allows_tool(tool["name"])}
        notes.extend(unmatched_rules(self.config.policy, [tool["name"] for tool in described]))
        # No await from here on: a call sees the old code with the old tools, or the new with
        # the new.
        self.metadata, self._functions, self.tools = metadata, functions, tools
        secrets = self.config.secrets
        shown = [cut_redacted(note, NOTE_CHARS, secrets) for note in notes[:NOTES_SHOWN]]
        if len(notes) > NOTES_SHOWN:
            shown.append(f"and {len(notes) - NOTES_SHOWN} more functions that are not tools")
        self.notes = shown
        for note in self.notes:
            log.warning("%s: %s", self.name, note)
        if ender is not None:  # (logged once, above) and in `gateway status`
            self.notes.insert(0, ender)
        old, self._worker = self._worker, None
        if old is not None:
            self._retire(old)

    def _retire(self, worker: _Worker) -> None:
        """Stop a worker of the file's previous version once its calls are answered."""

        async def retire() -> None:
            while worker.busy and worker.process.returncode is None:
                await asyncio.sleep(0.1)
            await _stop_worker_process(worker.process)

        task = asyncio.ensure_future(retire())
        self._retiring[task] = worker
        task.add_done_callback(lambda done: self._retiring.pop(done, None))

    async def _watch_file(self) -> None:
        """Load the file again when it is edited (after two reads a moment apart agree)."""
        while True:
            await anyio.sleep(TOOL_FILE_POLL)
            if _fingerprint(self.path) == self._file_seen:
                continue
            text = await anyio.to_thread.run_sync(_read_text, self.path)
            while True:
                await anyio.sleep(TOOL_FILE_SETTLE)
                again = await anyio.to_thread.run_sync(_read_text, self.path)
                if again == text:
                    break
                text = again
            self._file_seen = _fingerprint(self.path)
            if text is None:
                continue  # gone: the config's watch sees the folder change
            await self._reload(text)

    async def _reload(self, text: str) -> None:
        try:
            await self._load(text)
        except Exception as exc:
            problem = self._redact(f"{type(exc).__name__}: {exc}")
            if self.state == ServerState.FAILED:
                # No previous version serves: the file's error is this edit's, not the
                # first load's (whose line may be gone).
                self.error = problem
                log.warning("%s: %s", self.name, problem)
                return
            self.warnings = [f"the edit of {self.path.name} was not loaded: {problem}"]
            log.warning("%s: %s; the previous version still serves", self.name, self.warnings[0])
            return
        self.warnings = []
        self.state, self.error = ServerState.CONNECTED, None
        log.info("%s: %s reloaded, %d tools", self.name, self.path.name, len(self.tools))
        if self._on_tools_changed is not None:
            await self._on_tools_changed(self)

    async def _describe_internal(
        self, notes: list[str]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        from toolscript.upstream import worker

        def load() -> tuple[list[dict[str, Any]], dict[str, Any]]:
            module_name = (
                "toolscript_local_" + hashlib.sha256(str(self.path).encode()).hexdigest()[:12]
            )
            module = worker.load_module(self.path, module_name)
            return worker.describe_module(module, notes), worker.public_functions(module)

        # A daemon thread, not a worker thread: an import that hangs is abandoned at its
        # deadline or at shutdown, and the interpreter does not wait for it to exit.
        try:
            return await _in_daemon_thread(load, f"import {self.path.name}", IMPORT_TIMEOUT)
        except ModuleNotFoundError as exc:
            raise ModuleNotFoundError(
                f"{exc} ({self.path.name} imports it, in the gateway's Python: install its "
                "package there, or give the file a PEP 723 header naming the package in "
                '"dependencies", and it runs in an environment of its own)',
                name=exc.name,
            ) from exc
        except TimeoutError:
            raise UpstreamError(
                f"importing {self.path} took over {IMPORT_TIMEOUT:g} s, so its tools are not "
                "loaded; do slow work inside the tool functions, not at import"
            ) from None

    def _check_requires_python(self, metadata: dict[str, Any]) -> None:
        """Refuse a file whose ``requires-python`` the worker's Python (the gateway's, named
        to uv by path, so uv does not check it) does not satisfy."""
        wanted = metadata.get("requires-python")
        if not isinstance(wanted, str):
            return
        found = running_python_version()
        try:
            satisfied = python_satisfies(wanted, found)
        except InvalidSpecifier as exc:
            raise UpstreamError(
                f"{self.path.name}: its PEP 723 requires-python = {wanted!r} cannot be read "
                f'({exc}); write it as PEP 440 says, e.g. ">=3.10"'
            ) from None
        if not satisfied:
            raise UpstreamError(
                f"{self.path.name} needs Python {wanted} (its PEP 723 requires-python), but "
                f"its worker runs on the gateway's Python {found} ({sys.executable}): change "
                "requires-python in the file if it works on this one (the gateway loads the "
                "file again once it is saved), or run the gateway on a Python that satisfies "
                "it (install toolscript in a virtual environment made with that Python, "
                "`uv venv --python VERSION`, and start the gateway from there)"
            )

    async def _describe_external(
        self, metadata: dict[str, Any], notes: list[str]
    ) -> list[dict[str, Any]]:
        process = await asyncio.create_subprocess_exec(
            *self._worker_command(metadata),
            "--describe",
            # Never written: its end closes when the gateway goes, however it goes, and the
            # worker then exits rather than live on with a hung import.
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._worker_env(),
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(_output(process), INSTALL_TIMEOUT)
        except TimeoutError:
            raise UpstreamError(
                f"describing {self.path} (installing its dependencies, then importing it) took "
                f"over {INSTALL_TIMEOUT:g} s, so its tools are not loaded; do slow work inside "
                "the tool functions, not at import"
            ) from None
        finally:
            if process.returncode is None:  # timed out, or the server stopped: the tree goes
                signal_quietly(process.pid, signal.SIGKILL, group=True)
                with anyio.CancelScope(shield=True):
                    await process.wait()
        if process.returncode != 0 or not stdout.strip():
            message = stderr.decode("utf-8", "replace").strip().splitlines()
            missing = _MISSING_MODULE.fullmatch(message[-1].strip()) if message else None
            if missing is not None:  # the traceback's frames say less than its last line
                raise UpstreamError(
                    f"uv could not run {self.path.name}: {missing.group(0)} (add the package "
                    'that provides it to the "dependencies" of the file\'s PEP 723 header)'
                )
            raise UpstreamError(
                f"uv could not run {self.path.name}: "
                + (" / ".join(_uv_said(message)) or f"exit {process.returncode}")
                + _uv_unreached(message)
            )
        described = json.loads(stdout.decode().strip().splitlines()[-1])
        notes.extend(str(note) for note in described.get("notes") or [])
        tools: list[dict[str, Any]] = described["tools"]
        return tools

    def _worker_command(self, metadata: dict[str, Any] | None = None) -> list[str]:
        """``uv run`` of the worker on this file, with ``metadata``'s dependencies (else the
        loaded file's)."""
        from uv import find_uv_bin

        metadata = (self.metadata if metadata is None else metadata) or {}
        # The project's uv.toml, pyproject.toml and .python-version are not read (a cloned
        # repository's would choose the index the packages come from, or the interpreter:
        # `toolscript trust` covers none of them); the user's own uv.toml still is.
        command = [find_uv_bin(), "run", "--no-project", "--no-config", "--quiet"]
        own = _user_uv_config()
        if own is not None:
            command += ["--config-file", str(own)]
        if isinstance(metadata.get("requires-python"), str):
            command += ["--python", sys.executable]
        for dependency in metadata.get("dependencies") or []:
            command += ["--with", str(dependency)]
        command += ["--with", WORKER_DEPENDENCY, "python", str(WORKER), str(self.path)]
        return command

    def _worker_env(self) -> dict[str, str]:
        """A minimal environment: what uv and Python need (the user's uv settings: an
        offline machine's ``UV_OFFLINE``, a proxy), and never the gateway's secrets."""
        keep = (
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "TMPDIR",
            "UV_CACHE_DIR",
            "UV_INDEX_URL",
            "UV_FIND_LINKS",
            "UV_EXTRA_INDEX_URL",
            "UV_INDEX",
            "UV_DEFAULT_INDEX",
            # how uv reaches an index: offline (its cache alone), TLS, the user's proxy
            "UV_OFFLINE",
            "UV_NATIVE_TLS",
            "UV_INSECURE_HOST",
            "UV_HTTP_TIMEOUT",
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "NO_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "no_proxy",
            "XDG_CACHE_HOME",
        )
        env = {key: os.environ[key] for key in keep if key in os.environ}
        env["UV_PYTHON_DOWNLOADS"] = "never"
        env["PYTHONUNBUFFERED"] = "1"
        return env

    # -- workers -------------------------------------------------------------

    async def _get_worker(self) -> _Worker:
        worker = self._worker
        if _serving(worker):
            assert worker is not None
            return worker
        if self._spawning is None:
            self._spawning = asyncio.Lock()
        async with self._spawning:
            worker = self._worker
            if _serving(worker):
                assert worker is not None
                return worker
            if worker is not None:
                # Its Python died and `uv run` has yet to exit: that tree goes now.
                if worker.process.returncode is None:
                    signal_quietly(worker.process.pid, signal.SIGKILL, group=True)
                untether(worker.process.pid, group=True)
            process = await asyncio.create_subprocess_exec(
                *self._worker_command(),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._worker_env(),
                start_new_session=True,
                limit=WORKER_LINE_LIMIT,
            )
            tether(process.pid, group=True, server=True)  # (its stdin's end stops it)
            worker = _Worker(process=process, ready=asyncio.get_running_loop().create_future())
            self._worker = worker
            self.workers_started += 1
            worker.readers = [
                asyncio.ensure_future(self._read_replies(worker)),
                asyncio.ensure_future(self._read_logs(worker)),
            ]
            log.info("%s: worker started (pid %d)", self.name, process.pid)
            return worker

    async def _read_replies(self, worker: _Worker) -> None:
        assert worker.process.stdout is not None
        unreadable = ""
        try:
            async for line in _lines(worker.process.stdout):
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("ready"):
                    if not worker.ready.done():
                        worker.ready.set_result(int(message.get("pid", 0)))
                    continue
                future = worker.pending.pop(message.get("id"), None)
                if future is not None and not future.done():
                    future.set_result(message)
        except _Unreadable as exc:
            # Its replies can no longer be told apart: this worker is done for.
            unreadable = str(exc)
            signal_quietly(worker.process.pid, signal.SIGKILL, group=True)
        finally:
            await worker.process.wait()
            tail = " / ".join(worker.stderr_tail[-5:])
            reason = (
                f"the worker of {self.path.name} sent {unreadable} and was stopped"
                if unreadable
                else f"the worker of {self.path.name} exited (code {worker.process.returncode})"
                + (f": {tail}" if tail else "")
            )
            if not worker.ready.done():
                worker.ready.set_exception(UpstreamError(self._redact(reason)))
            for future in worker.pending.values():
                if not future.done():
                    future.set_exception(
                        ServerUnavailableError(
                            self._redact(reason), hint="the next call starts a new worker"
                        )
                    )
            worker.pending.clear()
            if self._worker is worker:
                self._worker = None

    async def _read_logs(self, worker: _Worker) -> None:
        assert worker.process.stderr is not None
        async for raw in worker.process.stderr:
            line = self._redact(raw.decode("utf-8", "replace").rstrip())
            if not line:
                continue
            worker.stderr_tail = [*worker.stderr_tail, line][-20:]
            try:
                record = json.loads(line)
                level = getattr(logging, str(record.get("level", "INFO")).upper(), logging.INFO)
                log.log(
                    level,
                    "%s [%s]: %s",
                    self.name,
                    record.get("logger", "tool"),
                    record.get("message", ""),
                )
            except (ValueError, AttributeError):
                log.info("%s [output]: %s", self.name, line)

    async def _reap_idle_worker(self) -> None:
        while True:
            await anyio.sleep(min(1.0, self.config.idle_timeout / 4))
            worker = self._worker
            if worker is None or worker.busy:
                continue
            if time.monotonic() - worker.last_used >= self.config.idle_timeout:
                log.info(
                    "%s: worker idle for %g s, stopping it", self.name, self.config.idle_timeout
                )
                await self._stop_worker()

    async def _stop_worker(self) -> None:
        if self._stopping.is_set():  # older versions' workers go too, without waiting
            for task, retired in list(self._retiring.items()):
                task.cancel()
                await _stop_worker_process(retired.process)
        worker, self._worker = self._worker, None
        if worker is not None:
            await _stop_worker_process(worker.process)

    def worker_pid(self) -> int | None:
        worker = self._worker
        if worker is None or not worker.ready.done() or worker.ready.exception():
            return None
        return worker.ready.result()

    # -- calls ---------------------------------------------------------------

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.state != ServerState.CONNECTED:
            raise ServerUnavailableError(f"tool file {self.path.name} is not loaded: {self.error}")
        try:
            value = await (
                self._call_external(tool, arguments)
                if self.external
                else self._call_internal(tool, arguments)
            )
        except _ToolRaised as exc:  # what the script sent comes back as sent (Gateway.make_call)
            sent = sent_text(arguments)
            text = redact(str(exc), self.config.secrets, sent=sent)
            return {"content": [{"type": "text", "text": text}], "isError": True}
        # The value itself, whatever its type: the generated Result type is the return annotation.
        if value is None:
            return {"content": []}
        text = value if isinstance(value, str) else json.dumps(value)
        return {"content": [{"type": "text", "text": text}], "structuredContent": value}

    async def _call_internal(self, tool: str, arguments: dict[str, Any]) -> Any:
        from toolscript.upstream import worker

        context = worker.ToolContext(
            config=dict(self.config.settings),
            secrets=dict(self.config.env),
            log=logging.getLogger(f"toolscript.local.{self.name}.{tool}"),
            gateway=GatewayView(self._gateway) if self._gateway is not None else None,
        )
        if self._call_threads is None:
            self._call_threads = anyio.CapacityLimiter(INTERNAL_CALL_THREADS)
        try:
            with anyio.fail_after(self.config.timeout_for(tool)):
                return await anyio.to_thread.run_sync(
                    worker.call_function,
                    self._functions[tool],
                    arguments,
                    context,
                    abandon_on_cancel=True,
                    limiter=self._call_threads,
                )
        except TimeoutError as exc:
            raise ToolTimeoutError.after(self.name, tool, self.config.timeout_for(tool)) from exc
        except Exception as exc:
            raise _ToolRaised(f"{type(exc).__name__}: {exc}") from exc

    async def _call_external(self, tool: str, arguments: dict[str, Any]) -> Any:
        worker = await self._get_worker()
        worker.busy += 1
        try:
            try:
                await asyncio.wait_for(asyncio.shield(worker.ready), INSTALL_TIMEOUT)
            except UpstreamError:
                raise
            request_id = next(self._ids)
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            worker.pending[request_id] = future
            request = {
                "id": request_id,
                "function": tool,
                "kwargs": arguments,
                "config": dict(self.config.settings),
                "secrets": dict(self.config.env),
            }
            assert worker.process.stdin is not None
            worker.process.stdin.write((json.dumps(request) + "\n").encode())
            await worker.process.stdin.drain()
            try:
                reply = await asyncio.wait_for(future, self.config.timeout_for(tool))
            except (TimeoutError, asyncio.CancelledError) as exc:
                # Timed out, or its caller went away: stop the work too, when no other call
                # shares the worker (a thread inside it cannot be stopped on its own).
                worker.pending.pop(request_id, None)
                if not worker.pending:
                    signal_quietly(worker.process.pid, signal.SIGKILL, group=True)
                    # Killed, it still runs a moment: the script's next call (at once after
                    # the timeout) was handed to it and failed, "exited (code -9)".
                    if self._worker is worker:
                        self._worker = None
                        untether(worker.process.pid, group=True)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                raise ToolTimeoutError.after(
                    self.name, tool, self.config.timeout_for(tool)
                ) from exc
        finally:
            worker.busy -= 1
            worker.last_used = time.monotonic()
        if reply.get("error"):
            raise _ToolRaised(str(reply["error"]))
        return reply.get("result")

    @property
    def secrets(self) -> tuple[str, ...]:
        return self.config.secrets

    def _redact(self, text: str) -> str:
        return redact(text, self.config.secrets)

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "name": self.name,
            "transport": "local",
            "description": self.config.description or self.docstring,
            "state": str(self.state),
            "error": self.error,
            "stderr": [],
            "tools": len(self.tools),
            "warnings": [*self.warnings, *self.notes],
            "attempts": self.attempts,
            "kind": "external" if self.external else "internal",
        }
        if self.external:
            status["worker"] = {"pid": self.worker_pid(), "started": self.workers_started}
        return status


def _serving(worker: _Worker | None) -> bool:
    """Whether ``worker`` can take a call: its process runs, and so does the Python that
    process started (``uv run``'s child, whose pid it said when ready). Killed, that Python
    leaves uv to exit a moment later, and a call written meanwhile would be lost."""
    if worker is None or worker.process.returncode is not None:
        return False
    ready = worker.ready
    if not ready.done() or ready.cancelled() or ready.exception() is not None:
        return True  # still starting, or failed: its call learns which
    pid = ready.result()
    return pid <= 0 or process_alive(pid)


_T = TypeVar("_T")


async def _in_daemon_thread(function: Callable[[], _T], name: str, timeout: float) -> _T:
    """``function()`` in a daemon thread, awaited up to ``timeout`` seconds (TimeoutError);
    when cancelled or timed out the thread is left to finish (or not) on its own."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = function()
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await asyncio.wait_for(future, timeout)


async def _output(process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    """A process's stdout and stderr, read until it exits (its stdin stays open)."""
    assert process.stdout is not None and process.stderr is not None
    stdout, stderr, _ = await asyncio.gather(
        process.stdout.read(), process.stderr.read(), process.wait()
    )
    return stdout, stderr


def _fingerprint(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def module_docstring(text: str) -> str:
    """The docstring of a tool file's module ('' when it has none or does not parse)."""
    import ast

    try:
        return (ast.get_docstring(ast.parse(text)) or "").strip()
    except (SyntaxError, ValueError):
        return ""


# What ends a process outright (never an exception a tool's call or the gateway can catch):
# os functions, by name, and os.kill of the process itself (its pid, or 0: its group).
_ENDING_CALLS = frozenset({"_exit", "abort"})
_OS_MODULES = frozenset({"os", "posix"})


def process_enders(text: str) -> list[tuple[int, str]]:
    """Where a tool file's source ends its own process (``os._exit``, ``os.abort``,
    ``os.kill(os.getpid(), ...)``): (line, what), read from its syntax, never imported. An
    internal file runs in the gateway, so such a call ends the gateway."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    modules: set[str] = set()  # names bound to os
    functions: dict[str, str] = {}  # names bound to its functions (from os import _exit)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name in _OS_MODULES)
        elif isinstance(node, ast.ImportFrom) and node.module in _OS_MODULES:
            functions.update({a.asname or a.name: a.name for a in node.names})

    def called(func: ast.expr) -> str | None:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return func.attr if func.value.id in modules else None
        return functions.get(func.id) if isinstance(func, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = called(node.func)
        if name in _ENDING_CALLS:
            found.append((node.lineno, f"os.{name}()"))
        elif name == "kill" and node.args:
            target = node.args[0]
            own = isinstance(target, ast.Call) and called(target.func) == "getpid"
            if own or (isinstance(target, ast.Constant) and target.value == 0):
                found.append((node.lineno, "os.kill() of its own process"))
    return sorted(found)


def process_ender_warning(path: Path, text: str) -> str | None:
    """The warning for an internal tool file that ends its process (None: it does not)."""
    found = process_enders(text)
    if not found:
        return None
    line, what = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (
        f"{path.name}:{line}: calls {what}{more}, which ends the gateway itself: an internal "
        "tool file runs in the gateway, and nothing catches that call; raise an exception "
        "instead, or give the file a PEP 723 header (`# /// script` ... `# ///`) to run it "
        "in a worker of its own"
    )


def _tool_file_text(path: Path) -> str:
    """A tool file's text: a regular file's only (a FIFO or a link to /dev/zero put in
    ``localTools.dir`` stalled the gateway's loop, or grew it without end, as it was read),
    up to ``MAX_TOOL_FILE_BYTES``; an OSError (or UnicodeDecodeError) says why not."""
    return read_regular_file(path, MAX_TOOL_FILE_BYTES).decode("utf-8")


def _read_text(path: Path) -> str | None:
    try:
        return _tool_file_text(path)
    except (OSError, UnicodeDecodeError):
        return None


class _ToolRaised(Exception):
    """The tool function raised: the caller gets an isError result."""


class _Unreadable(Exception):
    """A worker's output that cannot be read as replies any more."""


async def _lines(stream: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The stream's lines; a line over the reader's limit is _Unreadable, not a hang."""
    while True:
        try:
            line = await stream.readline()
        except (ValueError, asyncio.LimitOverrunError) as exc:
            raise _Unreadable(
                f"a reply larger than {WORKER_LINE_LIMIT // (1024 * 1024)} MB"
            ) from exc
        if not line:
            return
        yield line


def _uv_said(lines: list[str]) -> list[str]:
    """uv's failure on one line's worth: its first line (``error: Request failed after 3
    retries``) and its last causes, the middle elided."""
    if len(lines) <= 5:
        return lines
    return [lines[0], "…", *lines[-4:]]


def _uv_unreached(lines: list[str]) -> str:
    """What to do when uv could not reach its index (an offline machine), naming the
    package it was fetching (the worker's own dependency said to be so); else nothing."""
    fetched = next((found for line in lines if (found := _UNREACHED.search(line))), None)
    if fetched is None:
        return ""
    package = fetched.group(1)
    own = (
        f"; {package} is the tool-file worker's own dependency ({WORKER_DEPENDENCY}), "
        "installed beside the file's"
        if package.lower() == WORKER_DEPENDENCY.partition(">")[0]
        else ""
    )
    return (
        f" (uv could not reach its package index for {package}{own}: offline, export "
        "UV_OFFLINE=1 before `toolscript gateway start` so uv installs from its cache alone, "
        "or set UV_INDEX_URL to an index you reach)"
    )


def _user_uv_config() -> Path | None:
    """The uv settings that are the user's or the machine's, never a project's: ``UV_CONFIG_FILE``,
    else the user's ``uv.toml`` (``$XDG_CONFIG_HOME/uv``, else ``~/.config/uv``), else the
    system's (``$XDG_CONFIG_DIRS/uv``, else ``/etc/xdg/uv``, then ``/etc/uv``: a company's
    package mirror is often set there). uv reads one file given by name, so the first found."""
    chosen = os.environ.get("UV_CONFIG_FILE")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    system = (os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep)
    for folder in [base, *filter(None, system), "/etc"]:
        path = Path(folder) / "uv" / "uv.toml"
        if path.is_file():
            return path
    return None


async def _stop_worker_process(process: asyncio.subprocess.Process) -> None:
    """A worker's whole tree stopped (TERM, KILL after 5 s), and untethered."""
    await stop_process_async(process, 5, group=True)
    untether(process.pid, group=True)
