"""A type checker kept warm: ``deno lsp`` with the gateway's module, asked per script.

``deno check`` starts TypeScript cold for every new script (0.5 s with a small catalogue,
2 s and more at 1,600 tools). A language server keeps the program, the module's types
included, between scripts: a script opened as a document has its diagnostics pulled
(``textDocument/diagnostic``, a request with an answer, so no published batch is ever
mistaken for the last one) in tens of milliseconds.

The answer must be the one ``deno check`` would give, or none: anything the checker is
not sure to render as Deno does (a resolution error, a syntax error, a warning, a place
in a file it does not hold) makes it answer "unavailable", and exec checks the slow way.
The server runs with a config file of its own (so no ``deno.json`` above the cache
changes the compiler options; the libs of ``plumbing/checkoptions.py``, as ``deno check``
has them) and the import map exec runs with; it is replaced when
the module changes, when it dies, and when a check hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from toolscript.errors import ExecutionError
from toolscript.plumbing.checkoptions import (
    REFUSED_FILE_URL,
    check_imports,
    uses_node,
    write_check_config,
)
from toolscript.plumbing.denobinary import deno_binary, deno_environment
from toolscript.plumbing.paths import module_cache_file, user_cache_dir
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.processes import (
    memory_of,
    signal_quietly,
    stop_process_async,
    tether,
    untether,
)
from toolscript.store.cacheprune import drop_module_if_unused, mark_module_written, touch
from toolscript.store.packages import import_entries, packages_beside
from toolscript.store.savedscripts import module_imports, offers_node, write_module

__all__ = [
    "CheckVerdict",
    "Document",
    "WarmChecker",
    "render_diagnostics",
]

log = logging.getLogger("toolscript.checker")

MAX_SOURCE_LINE = 150  # bytes: Deno quotes no longer line
CHECKED_SUFFIXES = (".ts", ".mts")  # JavaScript and TSX have options of their own: Deno checks them
FAILED_TAIL = (
    "\n\nerror: Type checking failed.\n\n"
    "  info: The program failed type-checking, but it still might work correctly.\n"
    "  hint: Re-run with --no-check to skip type-checking.\n"
)
WARM_UP_SCRIPT = 'import { tools } from "toolscript";\nexport type All = typeof tools;\n'
LOCK_WAIT = 3.0  # seconds a check waits for the one before it; then exec checks the slow way
# A check that comes while the server is starting waits for it, up to this long: a cold
# `deno check` does the same work (TypeScript, the module's types) from nothing, and on two
# cores the two slowed each other so much that the start, begun first, was ready no sooner
# than the check was done (bench/NOTES.md). With the lock's wait and a check's timeout it
# stays within what exec waits for an answer (sandbox.WARM_CHECK_WAIT, 25 s).
START_WAIT = 8.0
CHECK_TIMEOUT = 10.0  # seconds one check may take before the server is taken for hung
START_TIMEOUT = 120.0  # seconds to start the server and check the module once
RESTART_DELAYS = (0.5, 2.0, 10.0, 30.0)  # between attempts after failures in a row
# Its memory is bounded: V8's heap (TypeScript's program) at most HEAP_MB, and a server
# past MAX_RSS_MB after a check is replaced (its program is rebuilt from the module).
HEAP_MB = 512
MAX_RSS_MB = 640
# V8's young generation kept small: each of its semi-spaces grows to 16 MB by default, in
# each isolate the server runs; at 1 MB a warm checker at 40 tools held 247 MB against 306
# after a dozen checks, its checks as fast (minor collections of 1 MB cost microseconds).
SEMI_SPACE_MB = 1
# No TurboFan: a warm check is tens of milliseconds of TypeScript that the interpreter and
# the baseline compiler run as fast, and TurboFan's and Maglev's optimized code with its
# feedback held 30 MB at 40 tools, 45 MB at 1,600 (bench/NOTES.md). Maglev, V8's mid-tier
# compiler, only for the functions called 8,000 times (20 times its default) and with no
# inlining: TypeScript's start (its libs parsed and bound, the module checked) is most of
# the server's CPU, in a few hot functions; those compiled took 0.5 s off its 1.7 s to ready
# (0.6-0.7 off 1.8-2.0 at 40 tools, 1.7 off 4.4 at 1,600) for 3-5 MB at 40 tools, where
# Maglev at its defaults took as much for 10 MB (bench/NOTES.md). Not V8's lite mode: it
# turns the baseline compiler (Sparkplug) off too, and TypeScript's start in the interpreter
# alone cost the server 0.5 s more CPU at 40 tools, 1.6 s at 1,600, before its first answer.
# V8's size-first heuristics instead keep its memory where lite mode had it: within 0-5 MB
# at 40 and 1,600 tools (bench/NOTES.md).
LEAN_V8 = (
    "--no-opt",
    "--maglev",
    "--no-maglev-inlining",
    "--invocation-count-for-maglev=8000",
    "--optimize-for-size",
)


@dataclass(frozen=True)
class Document:
    """A file as diagnostics show it: its URL in ``at`` lines, and its lines; or, with
    ``path``, its lines read from that file when a diagnostic first shows one (the module:
    its lines were 2 MB of the gateway at 1,600 tools, for the rare error placed in it)."""

    url: str
    given: list[str] | None = None
    path: Path | None = None

    @functools.cached_property
    def lines(self) -> list[str]:
        if self.given is not None:
            return self.given
        assert self.path is not None
        try:
            return self.path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise _Unsure(f"cannot read {self.path}: {exc}") from exc


@dataclass(frozen=True)
class CheckVerdict:
    status: str  # "passed", "failed" (``output`` is what deno check prints) or "unavailable"
    output: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"status": self.status, "output": self.output}


class _Unsure(Exception):
    """Diagnostics the checker cannot render exactly as ``deno check``: check the slow way."""


def render_diagnostics(diagnostics: list[dict[str, Any]], documents: dict[str, Document]) -> str:
    """Error diagnostics (LSP form) as ``deno check`` prints them, its closing lines included.

    ``documents`` maps each URI the server used to the file it stands for. Raises
    ``_Unsure`` for anything Deno would print differently.
    """
    blocks = [_render_one(diagnostic, documents) for diagnostic in diagnostics]
    text = "\n\n".join(blocks)
    if len(blocks) > 1:
        text += f"\n\nFound {len(blocks)} errors."
    return text + FAILED_TAIL


def _render_one(diagnostic: dict[str, Any], documents: dict[str, Document]) -> str:
    code = diagnostic.get("code")
    if not isinstance(code, int) or code < 2000:
        # Not TypeScript's semantic check: Deno's own resolution errors, or a syntax error,
        # which `deno run` reports from its parser before any type check.
        raise _Unsure(f"diagnostic {code!r}")
    prefix = "[ERROR]: " if code >= 900001 else f"TS{code} [ERROR]: "
    uri = diagnostic["uri"]
    text = prefix + _stack(diagnostic["message"], diagnostic["range"], documents, uri, 0)
    related = diagnostic.get("relatedInformation") or []
    if related:
        text += "\n\n" + "".join(
            _stack(
                info["message"], info["location"]["range"], documents, info["location"]["uri"], 4
            )
            for info in related
        )
    return text


def _stack(
    message: str, span: dict[str, Any], documents: dict[str, Document], uri: str, level: int
) -> str:
    document = documents.get(uri)
    if document is None:
        raise _Unsure(f"a place in {uri}")  # Deno's lib files, say: their lines are not ours
    indent = " " * level
    start, end = span["start"], span["end"]
    text = indent + message
    line = document.lines[start["line"]] if start["line"] < len(document.lines) else ""
    if line and len(line.encode()) <= MAX_SOURCE_LINE:
        length = end["character"] - start["character"] if start["line"] == end["line"] else 1
        lead = "".join(
            "\t" if index < len(line) and line[index] == "\t" else " "
            for index in range(start["character"])
        )
        underline = lead + ("~" if length > 1 else "^") * max(length, 0)
        text += f"\n{indent}{line}\n{indent}{underline}"
    at = f"{document.url}:{start['line'] + 1}:{start['character'] + 1}"
    return text + f"\n{indent}    at {at}"


class _LanguageServer:
    """One ``deno lsp`` process and JSON-RPC over its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process, settings: dict[str, Any]) -> None:
        self.process = process
        self.settings = settings
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self.versions: dict[str, int] = {}  # open documents: their last version
        self.node_types = False  # Deno's default lib (Node's types), not the lean one
        self._killed = False
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, root: Path, settings: dict[str, Any]) -> _LanguageServer:
        process = await asyncio.create_subprocess_exec(
            deno_binary(),
            "lsp",
            cwd=root,
            env={**deno_environment(), "NO_COLOR": "1", "DENO_V8_FLAGS": _v8_flags()},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,  # Ctrl+C in the gateway's terminal is the gateway's to handle
        )
        tether(process.pid, group=True)  # (killed at once should the gateway's program die)
        server = cls(process, settings)
        try:
            await server.request(
                "initialize",
                {
                    "processId": os.getpid(),
                    "rootUri": root.as_uri(),
                    "capabilities": {
                        "workspace": {"configuration": True},
                        "textDocument": {"diagnostic": {"dynamicRegistration": False}},
                    },
                    "initializationOptions": settings,
                },
                START_TIMEOUT,
            )
        except BaseException:  # it never answered: it goes (killed, nothing left to stop)
            server.kill()
            untether(process.pid, group=True)
            raise
        server.notify("initialized", {})
        return server

    @property
    def alive(self) -> bool:
        return not self._killed and self.process.returncode is None and not self._reader.done()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        identifier = next(self._ids)
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[identifier] = answer
        try:
            self._send({"jsonrpc": "2.0", "id": identifier, "method": method, "params": params})
            return await asyncio.wait_for(answer, timeout)
        finally:
            self._pending.pop(identifier, None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        if not self.alive:
            raise ConnectionError("the type checker stopped")
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while True:
                length = 0
                while (header := await stream.readline()) not in (b"\r\n", b"\n"):
                    if not header:
                        return
                    name, _, value = header.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                self._receive(json.loads(await stream.readexactly(length)))
        except (asyncio.IncompleteReadError, ValueError, OSError) as exc:
            log.debug("type checker: reading stopped: %s", exc)
        finally:
            for waiting in self._pending.values():
                if not waiting.done():
                    waiting.set_exception(ConnectionError("the type checker stopped"))

    def _receive(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:  # the server asks: its settings, or things we ignore
                wanted = message["method"] == "workspace/configuration"
                items = message.get("params", {}).get("items", [])
                result = [self.settings for _ in items] if wanted else None
                self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        waiting = self._pending.get(message.get("id", -1))
        if waiting is None or waiting.done():
            return
        if "error" in message:
            waiting.set_exception(ExecutionError(f"type checker: {message['error']}"))
        else:
            waiting.set_result(message.get("result"))

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        await stop_process_async(self.process, 2.0, group=True)
        untether(self.process.pid, group=True)

    def kill(self) -> None:
        self._killed = True  # dead from now on, whenever the system reaps it
        signal_quietly(self.process.pid, signal.SIGKILL, group=True)


def _v8_flags() -> str:
    """The user's own DENO_V8_FLAGS, the heap bounds, the compilers as ``LEAN_V8`` has them and
    the size-first mode (``deno lsp`` takes no --v8-flags); a bound, compiler, threshold or
    mode the user set is theirs."""
    own = os.environ.get("DENO_V8_FLAGS", "")
    named = {_flag_name(flag) for flag in own.split(",")}
    semi = {"max-semi-space-size", "min-semi-space-size", "semi-space-size"}
    bounds = [
        f"--max-old-space-size={HEAP_MB}" if "max-old-space-size" not in named else "",
        f"--max-semi-space-size={SEMI_SPACE_MB}" if not semi & named else "",
        *(flag for flag in LEAN_V8 if _flag_name(flag) not in named),
    ]
    return ",".join(filter(None, [own, *bounds]))


def _flag_name(flag: str) -> str:
    """A V8 flag's name as V8 reads it, without its dashes, its ``no`` and its value:
    ``maglev`` for ``--no-maglev``, ``--no_maglev`` or ``--nomaglev``,
    ``max-old-space-size`` for ``--max_old_space_size=4096`` (V8 takes "_" for "-", the
    spelling Node's documentation uses: the user's flag, matched, is not overridden by ours
    after it, the last of a flag being the one V8 keeps)."""
    name = flag.split("=")[0].strip().lstrip("-").replace("_", "-")
    return name.removeprefix("no").removeprefix("-") if name.startswith("no") else name


class WarmChecker:
    """The gateway's checker: started for each module, replaced when it fails."""

    def __init__(self) -> None:
        self.root = user_cache_dir() / "checker"
        # (module hash, module text, saved scripts it offers by name)
        self._wanted: tuple[str, bytes, dict[str, str]] | None = None  # the module as UTF-8
        self._wake = asyncio.Event()
        self._server: _LanguageServer | None = None
        self._module: str | None = None  # the hash the running server checks against
        self._module_uri = ""  # the module as the server knows it
        self._lock = asyncio.Lock()
        self._names = itertools.count(1)
        self.state = "starting"
        self.error: str | None = None
        self.checks = 0
        self._settled = asyncio.Event()  # clear while a start is under way
        self._settled.set()
        self.waiting = 0  # checks waiting for the start under way
        # Modules this checker wrote to the cache, by hash: the time each was marked with.
        # Once replaced, one nothing used since is removed (a server whose tools change at
        # every listing left a module a minute in the cache, each kept a month).
        self._written: dict[str, int] = {}

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "error": self.error,
            "module": self._module,
            "checks": self.checks,  # scripts it answered for (passed or failed)
            "waiting": self.waiting,  # checks waiting for its start
        }

    @property
    def pid(self) -> int | None:
        """The language server's process id while it runs."""
        server = self._server
        return server.process.pid if server is not None and server.alive else None

    def module_changed(
        self, module_hash: str, module: bytes, scripts: dict[str, str] | None = None
    ) -> None:
        """The gateway built a new module: a server for it replaces the current one."""
        if self._wanted is None or self._wanted[0] != module_hash:
            self._wanted = (module_hash, module, scripts or {})
            self._wake.set()

    async def run(self) -> None:
        """Keep a server for the wanted module; until cancelled (then the server stops)."""
        failures = 0
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                wanted = self._wanted
                if wanted is None:
                    continue
                running = self._server is not None and self._server.alive
                if running and self._module == wanted[0]:
                    continue
                if failures:
                    await asyncio.sleep(RESTART_DELAYS[min(failures, len(RESTART_DELAYS)) - 1])
                if await self._replace(*wanted):
                    failures = 0
                else:
                    failures += 1
                    self._wake.set()
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop_server()

    def _replace_soon(self) -> None:
        """The server hung or died: a new one is started in the background."""
        if self._server is not None:
            self._server.kill()
        self.state = "starting"
        self._wake.set()

    def _drop_replaced(self, current: str) -> None:
        """Remove the modules this checker wrote before ``current`` that nothing used."""
        for digest, written in list(self._written.items()):
            if digest != current:
                del self._written[digest]
                drop_module_if_unused(self.root.parent, digest, written)

    async def _stop_server(self) -> None:
        server, self._server, self._module = self._server, None, None
        if server is not None:
            await server.close()

    async def _replace(self, module_hash: str, module: bytes, scripts: dict[str, str]) -> bool:
        self.state = "starting"
        self._settled = asyncio.Event()
        try:
            return await self._replace_now(module_hash, module, scripts)
        finally:
            self._settled.set()

    async def _replace_now(self, module_hash: str, module: bytes, scripts: dict[str, str]) -> bool:
        started = time.perf_counter()
        await self._stop_server()
        try:
            server = await self._start(module_hash, module, scripts)
        except (OSError, ConnectionError, TimeoutError, ExecutionError, _Unsure) as exc:
            self.state, self.error = "failed", str(exc) or type(exc).__name__
            log.warning("type checker: %s; scripts are checked by deno check", self.error)
            return False
        if self._wanted is None or self._wanted[0] != module_hash:
            await server.close()  # the module changed again meanwhile
            return True
        self._server, self._module = server, module_hash
        self._module_uri = module_cache_file(module_hash).as_uri()
        self.state, self.error = "ready", None
        await asyncio.to_thread(self._drop_replaced, module_hash)
        log.info("type checker: ready in %.1f s", time.perf_counter() - started)
        return True

    async def _start(
        self, module_hash: str, module: bytes, scripts: dict[str, str]
    ) -> _LanguageServer:
        module_path = module_cache_file(module_hash)
        text = module.decode()  # while the server starts
        if not module_path.exists():
            write_module(module_path, text, scripts)
            written = mark_module_written(module_path)
            if written is not None:
                self._written[module_hash] = written
        elif module_hash not in self._written:
            touch([module_path])  # another's (a gateway with the same tools): used by this one
        # As a run's map: no file of the disk but the module's (a script's type-only import
        # of one is read by the checker alone, and its errors quote the file's types).
        imports = {
            "toolscript": module_path.as_uri(),
            "file:///": REFUSED_FILE_URL,
            module_path.as_uri(): module_path.as_uri(),
            **module_imports(module_path),
        }
        lock: Any = False
        packages = packages_beside(module_path)
        if packages is not None:  # as a run sees them: the frozen lock, the shared cache
            imports.update(import_entries(packages.packages))
            lock = {"path": str(packages.lock), "frozen": True}
        config_path = self.root / f"deno-{module_hash}.json"
        # A saved script using Node gives every check of the module Node's types (Deno's
        # default lib, as before): a `node:` import in the module's graph brings them anyway.
        node = offers_node(module_path)
        if node:
            config = write_private(config_path, json.dumps({"lock": lock}) + "\n")
        else:
            config = await asyncio.to_thread(write_check_config, config_path, lock)
            imports.update(await asyncio.to_thread(check_imports))
        import_map = write_private(
            self.root / f"importmap-{module_hash}.json", json.dumps({"imports": imports})
        )
        settings = {
            "enable": True,
            # No file of its folder loaded into TypeScript at the start: a stray `.ts` there
            # (one declaring globals) joined every script's program, where `deno check` sees
            # only the script and what it imports; and the preload held 9 MB.
            "documentPreloadLimit": 0,
            "lint": False,
            "config": str(config),
            "importMap": str(import_map),
            "unstable": [],
            "cache": None,
            "certificateStores": None,
        }
        server = await _LanguageServer.start(self.root, settings)
        server.node_types = node
        try:
            # The module itself must check (deno check would fail every script otherwise),
            # and checking it once warms the server up for every script after it.
            errors = await self._diagnose(server, module_path.as_uri(), text)
            if errors:
                raise _Unsure(f"the generated module does not type-check ({errors[0]['message']})")
            warm_up = (self.root / "scripts" / "warm-up.ts").as_uri()
            await self._diagnose(server, warm_up, WARM_UP_SCRIPT)
        except BaseException:
            await server.close()
            raise
        return server

    async def _diagnose(
        self,
        server: _LanguageServer,
        uri: str,
        text: str,
        timeout: float = START_TIMEOUT,
        *,
        keep_open: bool = False,
    ) -> list[dict[str, Any]]:
        """The errors of ``text`` as document ``uri``; ``_Unsure`` for a warning.

        A document kept open (a slot) gets the next text as a change: the server then
        reuses its program, which halves the time of a check.
        """
        version = server.versions.get(uri, 0) + 1
        if version == 1:
            document = {"uri": uri, "languageId": "typescript", "version": 1, "text": text}
            server.notify("textDocument/didOpen", {"textDocument": document})
        else:
            server.notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": text}],
                },
            )
        server.versions[uri] = version
        try:
            report = await server.request(
                "textDocument/diagnostic", {"textDocument": {"uri": uri}}, timeout
            )
        finally:
            if not keep_open and server.alive:
                server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
                server.versions.pop(uri, None)
        if not isinstance(report, dict) or report.get("kind") != "full":
            raise _Unsure(f"an unexpected report: {str(report)[:200]}")
        errors = []
        for item in report.get("items", []):
            severity = item.get("severity")
            if severity == 2:
                raise _Unsure("a warning")  # deno check would print it: check the slow way
            if severity == 1:
                errors.append(item | {"uri": uri})
        return errors

    async def check(
        self, code: str, script_path: str, module_path: str, module_hash: str
    ) -> CheckVerdict:
        """The verdict ``deno check`` would give on ``code`` (the prepared script that
        exec writes to ``script_path``), against the module of ``module_hash``."""
        suffix = Path(script_path).suffix
        if suffix not in CHECKED_SUFFIXES:
            return CheckVerdict("unavailable", f"{suffix} scripts are checked by deno check")
        await self._await_start()
        try:
            await asyncio.wait_for(self._lock.acquire(), LOCK_WAIT)
        except TimeoutError:
            return CheckVerdict("unavailable", "the checker is busy")
        try:
            server = self._server
            if server is None or not server.alive or self.state != "ready":
                if server is not None and not server.alive:
                    self._replace_soon()
                return CheckVerdict("unavailable", f"the checker is {self.state}")
            if self._module != module_hash:
                return CheckVerdict("unavailable", "the checker has another module")
            if not server.node_types and uses_node(code):
                # deno check gives it Node's types; a `node:` import here would leave them
                # in the server's program for the scripts after it
                return CheckVerdict("unavailable", "a script using Node is checked by deno check")
            uri = (self.root / "scripts" / f"slot{suffix}").as_uri()
            # One script in the program at a time: another slot's script left open (a .mts
            # one before this .ts) would lend this one its `/// <reference lib="node" />`
            # or `declare global`, and pass what deno check refuses.
            for other in [open_uri for open_uri in server.versions if open_uri != uri]:
                server.notify("textDocument/didClose", {"textDocument": {"uri": other}})
                server.versions.pop(other, None)
            documents = {
                uri: Document(Path(script_path).as_uri(), code.split("\n")),
                # its lines from the checker's own copy of that module, never from the
                # path the request names (the agent's URL asks too: any file it named
                # had its lines quoted)
                self._module_uri: Document(
                    Path(module_path).as_uri(), path=module_cache_file(module_hash)
                ),
            }
            # A name no script uses, on a line of its own after the script: its "Cannot find
            # name" error proves the answer is about this text (not an earlier one), and
            # that nothing (@ts-nocheck, an unclosed comment) turned checking off.
            sentinel = f"__toolscriptCheck{next(self._names)}"
            text = code + ("" if code.endswith("\n") else "\n") + f"{sentinel};\n"
            try:
                found = await self._diagnose(server, uri, text, CHECK_TIMEOUT, keep_open=True)
                errors = [e for e in found if f"'{sentinel}'" not in e["message"]]
                if len(errors) != len(found) - 1:
                    raise _Unsure("the check did not see the script as sent")
                output = render_diagnostics(errors, documents) if errors else ""
            except _Unsure as exc:
                return CheckVerdict("unavailable", str(exc))
            except (TimeoutError, ConnectionError, OSError, ExecutionError) as exc:
                log.warning("type checker: %s; replacing it", str(exc) or type(exc).__name__)
                self._replace_soon()
                return CheckVerdict("unavailable", "the checker failed")
            self.checks += 1
            if _rss_mb(server.process.pid) > MAX_RSS_MB:
                log.info("type checker: past %d MB; replacing it", MAX_RSS_MB)
                self._replace_soon()
            return CheckVerdict("failed", output) if errors else CheckVerdict("passed")
        finally:
            self._lock.release()

    async def _await_start(self) -> None:
        """Wait for a start under way to end (ready or failed), up to ``START_WAIT``; return
        at once when none is."""
        if self._settled.is_set():
            return
        self.waiting += 1
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._settled.wait(), START_WAIT)
        finally:
            self.waiting -= 1


def _rss_mb(pid: int) -> float:
    memory = memory_of(pid)
    return memory["rss"] / 1e6 if memory is not None else 0.0
