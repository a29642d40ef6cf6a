"""The gateway's state: every upstream server, tool lookup, validation and calls."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import errno
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from toolscript import __version__
from toolscript.codegen.module import ToolFragment
from toolscript.codegen.naming import denied_name
from toolscript.config import Config, check_syntax, parse_config
from toolscript.errors import (
    ApprovalRequiredError,
    ArgumentValidationError,
    ConfigError,
    ScriptCheckError,
    ScriptExistsError,
    SemanticUnavailable,
    ServerNotFoundError,
    ServerUnavailableError,
    StorageError,
    ToolCallError,
    ToolDeniedError,
    ToolNotFoundError,
    ToolscriptError,
    UsageError,
    tool_named,
)
from toolscript.gateway.arguments import ArgumentCheck
from toolscript.gateway.background import BackgroundRuns
from toolscript.gateway.checker import WarmChecker
from toolscript.gateway.connections import (
    RUN_VALUES,
    SMALL_CALL_VALUES,
    TOTAL_VALUES,
    BodyBudget,
)
from toolscript.gateway.inferred import ResultShapes
from toolscript.gateway.narrowed import KeptRenders, NarrowedModules
from toolscript.gateway.recentcalls import RecentCalls
from toolscript.gateway.results import tool_result
from toolscript.gateway.runbook import (
    Run,
    RunBook,
    approve_commands,
    call_named,
    member_named,
)
from toolscript.otherclients import MAX_CONFIG_BYTES
from toolscript.pipeline.artifacts import Artifacts, CacheLayout, read_artifact
from toolscript.pipeline.buildlock import BuildStopped
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import (
    ARTIFACT_TASKS,
    PipelineResult,
    SearchIndexing,
    load_documents,
    run_pipeline,
)
from toolscript.pipeline.tasks.scripts import (
    CONTRACT_MESSAGE,
    ScriptVerdicts,
    check_saved,
    load_verdicts,
)
from toolscript.pipeline.tasks.settings import digest_key
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.build import code_build
from toolscript.plumbing.paths import is_storage_failure, project_state_dir, user_cache_dir
from toolscript.plumbing.privatefile import write_new
from toolscript.plumbing.processes import (
    identity_alive,
    memory_of,
    process_identity,
    return_free_memory,
)
from toolscript.plumbing.redact import redact, redact_value, sent_text
from toolscript.policy import READ_ONLY, is_offering
from toolscript.search.engine import SearchEngine, SearchOptions
from toolscript.search.process import EmbedderProcess
from toolscript.search.semantic import EmbeddingStore, model_directory
from toolscript.search.text import ToolDocument, document_for, tokenize
from toolscript.store.runlog import RunLog, runlog_path
from toolscript.store.savedscripts import (
    MAX_SCRIPT_BYTES,
    SCRIPTS_DIRNAME,
    SavedScript,
    check_name,
    has_default_export,
    load_saved,
    scripts_dir,
    scripts_fingerprint,
    with_description,
)
from toolscript.store.trust import require_trust, trust_file
from toolscript.upstream.base import CALL_RECEIVED, ListedOfferings, ServerState, Upstream
from toolscript.upstream.connect import upstream_for
from toolscript.upstream.early import EarlyServer

if TYPE_CHECKING:  # jsonschema is imported by a tool's first call (validators are made then)
    import jsonschema

__all__ = ["Gateway", "answered_as_offered", "split_tool_name"]

log = logging.getLogger("toolscript.gateway")

SEPARATOR = "__"
CONFIG_POLL_SECONDS = 1.0
# How often a gateway still waiting for its servers' first connections looks whether a
# command that needs none of the slow ones asked to be served (``_wait_first_attempts``).
START_ASK_POLL = 0.1
# An edited file is read again after this long, until two reads agree: a save that
# truncates and then writes is never read half-written.
CONFIG_SETTLE_SECONDS = 0.25
CONFIG_SETTLE_TRIES = 20  # a file that keeps changing is read as it is after this many
# Work that can wait (the warm checker's `deno lsp`, the embedding worker, the quick query
# encoder on a first start) starts once the URL is out and no run has been under way for
# this long: on two cores it would otherwise compete with the servers' start and with the
# first script. (On a restart the quick encoder gets ready with the servers: it is what makes
# search hybrid at once.)
IDLE_BEFORE_BACKGROUND = 1.0
# ... but no later than this after the URL: a client that keeps a run under way (an agent
# calling `execute` back to back) would otherwise keep every new script on a cold `deno check`.
BACKGROUND_AT_THE_LATEST = 8.0
# ... or once this many new scripts were checked the slow way meanwhile: a client writing
# new scripts back to back (an agent's loop) needs the warm checker more than the cores.
SLOW_CHECKS_BEFORE_BACKGROUND = 2
# ... or once this many runs were registered meanwhile: a client running scripts back to back
# (a script checked before asks for no check: its pass is remembered beside it) writes new
# ones next, and those need the checker ready.
RUNS_BEFORE_BACKGROUND = 2
# The user's cache is kept (store/cacheprune.py) this long after the background work starts,
# once no run is under way, and again every CACHE_KEEPING_EVERY (it prunes once a day).
CACHE_KEEPING_DELAY = 10.0
CACHE_KEEPING_EVERY = 6 * 3600.0
# How long the first build waits for connected servers' prompts and templates (listed after
# they connect); a server slower than this has them typed by a rebuild when they come.
OFFERED_GRACE = 2.0
# Saved scripts ``POST /scripts`` writes (the agent's URL reaches it): each is a file of the
# project, type-checked with all the others at every save and offered in the module, so a
# save of a new name past this many is refused (replacing one stays open).
MAX_SAVED_SCRIPTS = 200
# Seconds a run's module hash waits for the build of a change of the servers' tool lists
# (a build takes about a second, several on a loaded machine); past it, what is served.
LISTED_CHANGE_WAIT = 10.0
# Why a write fails that says nothing of the cache's files: the build's error, not theirs.
WRITES_REFUSED = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)
EMBEDDING_NOTE = (
    "a tool list changed and its tools are being embedded for search: tools it adds are"
    " found once that ends"
)
BUILD_HELD_NOTE = (
    "a tool list changed and its build waits for another build of the cache (a `doit`?):"
    " tools it adds are not {what} until that ends"
)
BUILD_HELD_POLL = 0.05  # seconds between looks at whether a build waits for another's lock


def split_tool_name(qualified: str) -> tuple[str, str]:
    """``github__create_issue`` -> ``("github", "create_issue")`` (server names hold no ``__``)."""
    server, sep, tool = qualified.partition(SEPARATOR)
    if not sep or not server or not tool:
        raise ToolNotFoundError(
            f"not a tool name: {qualified!r}; expected SERVER__TOOL, for example github__create_issue"
        )
    return server, tool


def _fingerprint(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _read_text(path: Path) -> bytes | None:
    """The file's bytes; None when there is no file (or it cannot be read now)."""
    try:
        return read_regular_file(path, MAX_CONFIG_BYTES)  # never a FIFO or /dev/zero
    except OSError:
        return None


def _parse_config(text: bytes | None, path: Path, project_dir: Path) -> Config:
    """The config as ``text`` says; no file means zero servers. An edit the user has not
    trusted is refused like an invalid file: the previous configuration keeps serving."""
    if text is None:
        return Config(path=None, project_dir=project_dir)
    try:
        require_trust(path, text)  # these bytes, not the file read again: it may be swapped
    except ConfigError:
        # an edit that broke the file is what to fix first: trust would start nothing of it
        with contextlib.suppress(UnicodeDecodeError):
            check_syntax(text.decode("utf-8"), path)
        raise
    if _read_text(path) != text:  # changed again since it settled: judge it next time
        raise ConfigError(f"{path}: the config file changed while it was read")
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from exc
    loaded = parse_config(decoded, path, os.environ)
    # the imported files as they were read (a `git pull` may have changed one since the hash)
    require_trust(path, text, loaded.imported_contents)
    return loaded


def _write_script(path: Path, source: str) -> None:
    """A saved script, written whole or not at all (it is the user's, committed: 0644)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    write_new(partial, source)  # never through a link planted as the partial
    partial.replace(path)


def _script_document(script: SavedScript) -> ToolDocument:
    """A saved script as search sees it: its name, description and signature."""
    document = document_for(
        "", "saved script", {"name": script.name, "description": script.description}
    )
    # The signature names its inputs: words search may match, not shown as its description.
    words = tokenize(script.signature)
    fields = {**document.fields, "parameters": document.fields["parameters"] + words}
    text = f"{document.text} Call: {script.signature[:200]}"
    return dataclasses.replace(
        document,
        kind="script",
        fields=fields,
        text=text,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
    )


def _tool_not_found(
    upstream: Upstream, tool: str, spellings: dict[str, str], namespace: str
) -> ToolNotFoundError:
    """No tool ``tool`` on ``server``, named as users write it (``time.get_time``, as
    `approve --tool` takes it; never the gateway's ``time__get_time``; a name that is no
    member name as the script wrote it, ``tools.<namespace>["../x"]``: ``member_named``),
    with the close names of ``spellings`` (how a tool may be written, its camelCase function
    too -> its name) as suggestions; or, for a function of a tool file that is not a tool,
    why not."""
    server = upstream.name
    why = next(
        (
            str(warning)
            for warning in upstream.status().get("warnings") or []
            if str(warning).startswith(f"{tool}() is not a tool: ")
        ),
        None,
    )
    if why is not None:
        return ToolNotFoundError(f"{server}.{why}")
    close = difflib.get_close_matches(tool, list(spellings), n=6, cutoff=0.5)
    names = list(dict.fromkeys(spellings[found] for found in close))[:3]
    return ToolNotFoundError(
        f"tool not found: {member_named(server, namespace, tool)}",
        suggestions=[f"{server}.{name}" for name in names],
        hint=None if names else _list_tools_hint(server, sorted(set(spellings.values()))),
    )


def _list_tools_hint(server: str, names: list[str]) -> str:
    """What to say when no tool name comes close to the one asked for."""
    if not names:
        return f"server {server!r} has no tools"
    # a few are named (a tool file's function renamed: its new name at once)
    named = f" ({', '.join(f'{server}.{name}' for name in names)})" if len(names) <= 3 else ""
    counted = f"{len(names)} tool{'' if len(names) == 1 else 's'}"
    return f"server {server!r} has {counted}{named}: see `toolscript list-tools {server}`"


class _QuickQueries:
    """Semantic search from the first second when the tools' vectors are cached already."""

    def __init__(self, search: SearchEngine, model: str) -> None:
        self.search, self.model = search, model
        self.prepared = anyio.Event()
        self.early = False  # prepared while the servers connect (vectors were stored)

    async def prepare(self) -> None:
        try:
            await anyio.to_thread.run_sync(self._prepare, abandon_on_cancel=True)
        finally:
            self.prepared.set()

    def _prepare(self) -> None:
        try:
            self.search.prepare_quick_queries(model_directory(self.model))
        except Exception:  # never fatal: queries then wait for the worker's model
            log.debug("search: no quick query encoder", exc_info=True)

    async def start(self) -> None:
        with anyio.move_on_after(5):
            await self.prepared.wait()
        if not self.prepared.is_set():
            log.info("search: the numpy query encoder was not ready in 5 s")
        try:
            ready = await anyio.to_thread.run_sync(self.search.quick_start)
        except Exception:  # never fatal: search turns hybrid when the worker's model is ready
            log.debug("search: no quick start", exc_info=True)
            return
        if ready:
            log.info("search: hybrid (cached tool vectors, queries in numpy until the model loads)")
        else:
            log.info(
                "search: keyword-only until the model loads (no numpy query encoder, or a "
                "tool without a stored vector)"
            )


class Gateway:
    """Owns the upstream servers for the gateway's lifetime."""

    def __init__(
        self,
        config: Config,
        *,
        cache: Path | None = None,
        connect_timeout: float = 30.0,
        ready_wait: float = 10.0,
        search: SearchOptions | None = None,
        warm_checker: bool = False,
        telemetry: Any = None,
        infer_results: bool = True,
        after_url: bool = False,
        search_index: bool = True,
        early: dict[str, EarlyServer] | None = None,
        deferred: set[str] | None = None,
        search_when_idle: bool = False,
        start_mark: Path | None = None,
    ) -> None:
        """``after_url``: the background work waits for ``url_announced`` (the runner calls
        it once the URL is printed), else it starts when the servers are ready.
        ``search_index`` False: a gateway for one script's calls, which keeps no search
        documents (its search answers nothing). ``early``: server processes spawned before
        the gateway's imports (``upstream/early.py``), each taken by its server's first
        connection (popped from the dict: what is left there nobody took). ``deferred``:
        servers that connect at their first call (``start_deferred``), not at the start (a
        gateway for one script, which names the servers it needs). ``search_when_idle``: the
        embedding worker starts with the warm checker, once no run has been under way for a
        second, or at the first search, whichever comes first (the MCP face's own gateway:
        its first script should not share two cores with the model's start). ``start_mark``:
        the project cache whose starting mark this process wrote (`gateway start`): the
        servers its ready wait still waits for are added to the mark, and a command that
        needs none of them may end that wait (``gateway.state.ask_to_serve_now``)."""
        self.config = config
        self.start_mark = start_mark
        self.search_when_idle = search_when_idle
        self._semantic_started = False
        self._announced = anyio.Event()
        self._deferred = set(deferred or ())  # not started yet
        self._was_deferred = set(self._deferred)
        self.first_build = anyio.Event()  # the artifacts of the servers' first tool lists
        # set (from the build's thread) while a build waits for another's lock (a `doit`)
        self.build_waits = threading.Event()
        # The tools a build listed while semantic search was ready, until embedded; and
        # whether that embedding is under way (search answers from the tools before it).
        self._unindexed: list[ToolDocument] | None = None
        self.embedding = False
        if not after_url:
            self._announced.set()
        self.search_index = search_index
        self.background_started: float | None = None  # when the work that waits began
        self.slow_checks = 0  # scripts exec checked with deno check before the checker started
        self.early_runs = 0  # runs registered before the checker started
        self.config_file = config.config_file
        # Called when the config's folder is gone (the project moved or deleted): the runner
        # of a gateway process stops it, as SIGTERM does.
        self.on_project_gone: Callable[[], None] | None = None
        # What the config's files were as it was read, near enough: an edit (or a tool file
        # added) while the servers connect, before the watch starts, is applied then.
        self._loaded_fingerprints = self._config_fingerprints()
        # The code it runs, read now (an upgrade may replace it), off the way to the URL
        threading.Thread(target=code_build, name="code build", daemon=True).start()
        self.config_error: str | None = (
            None  # the edited file's error while the last good one serves
        )
        self.connect_timeout = connect_timeout
        self.ready_wait = ready_wait
        self._tasks: anyio.abc.TaskGroup | None = None
        self._snapshot_taken = False
        # Changes of the servers' tool lists (a server added, removed, connected, its tools
        # changed) since the first build, and how many of them the last build took in:
        # a run's module hash waits for them (``module_hash_built``), not for a learned type.
        self._listed_changes = 0
        self._built_changes = 0
        self._changes_built = anyio.Event()
        # The config's files as the watch last applied them; a run's module hash asks the
        # watch to look at once (``_look_now``) when they changed since, and waits for its
        # pass (``_watch_passed``): an edit saved a moment before is the run's to see.
        self._watched: tuple[tuple[int, int] | None, ...] | None = None
        self._look_now = anyio.Event()
        self._watch_passed = anyio.Event()
        self.started_at = time.time()
        self.layout = CacheLayout(cache or Path(tempfile.mkdtemp(prefix="toolscript-cache-")))
        self.artifacts = Artifacts()
        self.saved_scripts: list[SavedScript] = []  # as the last build saw them
        self._scripts_seen: tuple[tuple[str, int, int], ...] = ()  # toolscripts/, as last built
        self.script_verdicts = ScriptVerdicts()
        self._saving = anyio.Lock()
        self._rebuild = anyio.Event()
        self._rebuild_scope: anyio.CancelScope | None = None
        self._semantic_scope: anyio.CancelScope | None = None
        self._background_scope: anyio.CancelScope | None = None  # the work after the URL
        self._closing_task: asyncio.Task[None] | None = None  # (begin_shutdown's)
        self._stopping_task: asyncio.Task[None] | None = None
        self._processes_stopped: anyio.Event | None = None  # (stop_processes under way)
        self._pipeline_lock = anyio.Lock()
        # One embedding of tools at a time; it embeds outside the pipeline's lock, so a build
        # of a tool list that changed meanwhile does not wait for it (only the index task's
        # record and the switch of search's tools and vectors take the pipeline's lock).
        self._embedding_lock = anyio.Lock()
        # set when it stops: a build waiting for the lock another process's build holds ends
        self._stop_building = threading.Event()
        early = early if early is not None else {}
        self.upstreams: dict[str, Upstream] = {
            server.name: upstream_for(
                server,
                self,
                connect_timeout=connect_timeout,
                on_tools_changed=self._tools_changed,
                on_elicit=self.elicit,
                early=early.pop(server.name, None),
            )
            for server in config.servers
        }
        self._validators: dict[tuple[str, str], ArgumentCheck] = {}
        options = search or config.search
        # (rows keyed by the user's own key: a cloned repository's vectors are never read)
        store = EmbeddingStore(
            self.layout.embeddings if options.cache else None, digest_key(user_cache_dir())
        )
        embedder = EmbedderProcess(options.model, options.device) if options.semantic else None
        self.search = SearchEngine(options, store, embedder)
        self.checker = WarmChecker() if warm_checker else None
        self._checker_scope: anyio.CancelScope | None = None
        self._decisions: dict[tuple[str, str], str] = {}
        self._types_learned = False  # an inferred result type changed since the last build
        state_dir = project_state_dir(config.project_dir)
        self.shapes = ResultShapes(
            state_dir,
            enabled=infer_results and config.infer_results,
            identities={server.name: server.identity for server in config.servers},
        )
        self.narrowed = NarrowedModules()  # GET /runtime/tools.ts?server=, kept per module
        # the decoded arguments of the tool calls under way (``toolcall.call_tool_bytes``)
        self.call_values = BodyBudget(
            RUN_VALUES,
            TOTAL_VALUES,
            what="JSON values of tool calls under way",
            small=SMALL_CALL_VALUES,
        )
        # What the catalogue is now: a new build, config or server's tools count it up, and
        # the renders kept of the one before (a server's tools, get-types') are dropped.
        self.catalogue = 0
        self.tool_lists: KeptRenders[str, list[dict[str, Any]]] = KeptRenders()
        self.type_answers: KeptRenders[tuple[Any, ...], dict[str, Any]] = KeptRenders()
        self.recent = RecentCalls(
            state_dir,
            self.secrets,
            enabled=infer_results and config.infer_results,
        )
        runlog = RunLog(
            runlog_path(state_dir),
            keep=config.runs.keep,
            max_bytes=int(config.runs.max_megabytes * 1024 * 1024),
            keep_open=True,  # each run's end writes it: no checkpoint at each write's close
            project=config.project_dir,
        )
        self.runs = RunBook(
            runlog,
            self.secrets,
            lambda qualified: self.decision(*split_tool_name(qualified)),
            telemetry,
            owner=process_identity(os.getpid()),
            identity=self.server_identity,
        )
        self.url = ""  # the gateway's own URL, once it listens (``gateway/runner.py``)
        self.background = BackgroundRuns(
            self.runs, state_dir, config.project_dir, lambda: self.url, self.config_file
        )

    async def _wait_first_attempts(self, starting: list[Upstream]) -> bool:
        """Wait, at most ``ready_wait``, until every server in ``starting`` was tried once;
        True when a command asked to be served before that (``start_mark``), the servers
        still connecting then named in the mark as they go."""
        if self.start_mark is None:
            with anyio.move_on_after(self.ready_wait):
                for upstream in starting:
                    await upstream.first_attempt_done.wait()
            return False
        from toolscript.gateway.state import serve_now_asked, write_start_waiting

        changed = anyio.Event()

        async def tried(upstream: Upstream) -> None:
            nonlocal changed
            await upstream.first_attempt_done.wait()
            changed.set()

        said: list[str] | None = None
        with anyio.move_on_after(self.ready_wait):
            async with anyio.create_task_group() as watching:
                for upstream in starting:
                    watching.start_soon(tried, upstream)
                while True:
                    changed = anyio.Event()
                    waiting = [u.name for u in starting if not u.first_attempt_done.is_set()]
                    if not waiting:
                        break
                    if waiting != said:
                        said = waiting
                        await anyio.to_thread.run_sync(
                            write_start_waiting, self.start_mark, waiting
                        )
                    if serve_now_asked(self.start_mark):
                        watching.cancel_scope.cancel()
                        return True
                    with anyio.move_on_after(START_ASK_POLL):
                        await changed.wait()
                watching.cancel_scope.cancel()
        serve_now_asked(self.start_mark)  # one that came as the wait ended: it serves now
        return False

    def _check_runlog(self) -> None:
        """Set a damaged run log aside; settle the runs a gateway gone before this one held."""
        self.runs.runlog.check()
        with contextlib.suppress(ToolscriptError):  # held by another process: next start
            settled = self.runs.runlog.settle_orphans(identity_alive)
            if settled:
                log.info("runs: %d runs of a gateway that went away were settled", settled)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Connect every server concurrently; ready once each connected or failed."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            # a damaged run log is set aside now, with its warning, not at the first run's end
            tasks.start_soon(anyio.to_thread.run_sync, self._check_runlog, name="run log")
            quick = None
            if self.search.embedder is not None:
                quick = _QuickQueries(self.search, self.search.embedder.requested)
                # A restart (vectors of this model stored): the numpy query encoder (half a
                # second, no torch) gets ready while the servers connect, so search is hybrid
                # as the URL appears when every tool's vector is stored. A first start has
                # nothing cached: the encoder would be of no use (see _start_background).
                if await anyio.to_thread.run_sync(self.search.vectors_stored):
                    tasks.start_soon(quick.prepare, name="quick queries")
                    quick.early = True
            for warning in self.config.warnings:
                log.warning("config: %s", warning)
            for warning in self.config.import_warnings:
                log.warning("import: %s", warning)
            starting = [u for name, u in self.upstreams.items() if name not in self._deferred]
            log.info(
                "connecting %d servers%s",
                len(starting),
                f" ({len(self._deferred)} at their first call)" if self._deferred else "",
            )
            for upstream in starting:
                tasks.start_soon(upstream.run, name=f"upstream {upstream.name}")
            asked = await self._wait_first_attempts(starting)
            late = [u.name for u in starting if not u.first_attempt_done.is_set()]
            if late and asked:
                log.warning(
                    "serving without %s (still connecting; a command that calls none of "
                    "them asked to be served; joins when connected)",
                    ", ".join(late),
                )
            elif late:
                log.warning(
                    "serving without %s (still connecting after %g s; joins when connected)",
                    ", ".join(late),
                    self.ready_wait,
                )
            if self._announced.is_set():  # no URL to wait for (in-process: tests, tools)
                await self._first_build(quick)
            else:
                # The first build runs while the URL goes out: requests that read what it
                # makes wait for it (the runner's ``_AfterFirstBuild``), tool calls do not.
                tasks.start_soon(self._first_build, quick, name="first build")
            tasks.start_soon(self._rebuild_when_tools_change, name="artifact rebuilds")
            self._watch_scope = anyio.CancelScope()
            tasks.start_soon(self._watch_config, name="config watch")
            self._flush_scope = anyio.CancelScope()
            tasks.start_soon(self._flush_runs, name="run log")
            if self.checker is not None:
                self._checker_scope = anyio.CancelScope()
            if self.search.embedder is not None:
                self._semantic_scope = anyio.CancelScope()
            self._background_scope = anyio.CancelScope()
            self._cache_scope = anyio.CancelScope()
            tasks.start_soon(self._start_background, name="background start")
            log.info(
                "ready: %d/%d servers connected, %d tools",
                sum(u.state == ServerState.CONNECTED for u in self.upstreams.values()),
                len(self.upstreams),
                sum(len(u.tools) for u in self.upstreams.values()),
            )
            try:
                yield self
            finally:
                self._stop_building.set()
                with anyio.CancelScope(shield=True):
                    await self.background.close()
                self._background_scope.cancel()
                self._cache_scope.cancel()
                self._watch_scope.cancel()
                self._flush_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await self._final_flush()
                if self._rebuild_scope is not None:
                    self._rebuild_scope.cancel()
                with anyio.CancelScope(shield=True):
                    await self.stop_processes()

    def begin_shutdown(self, *, at_once: bool = False) -> None:
        """A signal asked the gateway to stop: the requests that wait (runs' progress, a
        background run's output) answer now, and the background runs stop, so the HTTP
        server's graceful shutdown does not wait on them. ``at_once``: the processes it
        started stop now too (``stop_processes``), beside that shutdown rather than after
        it, for a program leaving with its gateway (the MCP face's, served in its process),
        whose requests in flight are its own and already ended."""
        loop = asyncio.get_running_loop()
        self._stop_building.set()
        if self._closing_task is None:
            self.runs.close()
            self._closing_task = loop.create_task(self.background.close())  # held till done
        if at_once and self._stopping_task is None:
            self._stopping_task = loop.create_task(self.stop_processes(hurry=True))

    async def stop_processes(self, *, hurry: bool = False) -> None:
        """Stop every process the gateway started, side by side: each server (its stdin
        closed, then TERM, then KILL: ``upstream/stdio.py``; ``hurry``: with the short graces
        of a program leaving, ``upstream/early.py``), the warm checker's ``deno lsp`` and the
        search workers; returns once the servers were asked and the workers are gone (the
        servers' own stops end with their tasks). Once: a second call waits for the first."""
        if self._processes_stopped is not None:
            await self._processes_stopped.wait()
            return
        self._processes_stopped = anyio.Event()
        try:
            # (no checker or worker starts from now on: ``_start_background``)
            for scope in (self._background_scope, self._checker_scope, self._semantic_scope):
                if scope is not None:
                    scope.cancel()  # the checker's task stops its server as it ends
            async with anyio.create_task_group() as stops:
                for upstream in self.upstreams.values():
                    stop = functools.partial(upstream.stop, hurry=hurry)
                    stops.start_soon(stop, name=f"stop {upstream.name}")
                if self.search.embedder is not None:
                    stops.start_soon(anyio.to_thread.run_sync, self.search.embedder.close)
        finally:
            self._processes_stopped.set()

    async def _first_build(self, quick: _QuickQueries | None) -> None:
        # Connected servers list their prompts and templates meanwhile: the first module
        # types them if they answer soon; one that answers later is typed by a rebuild.
        with anyio.move_on_after(OFFERED_GRACE):
            for upstream in self.upstreams.values():
                if upstream.state == ServerState.CONNECTED and isinstance(
                    upstream, ListedOfferings
                ):
                    await upstream.offered_listed.wait()
        try:
            await self.rebuild_artifacts()
            if quick is not None and quick.early:
                await quick.start()
        finally:
            self.first_build.set()

    async def start_deferred(self, server: str) -> None:
        """A server deferred at the start connects now, at its first call (which waits for
        that, as calls wait for a server still connecting)."""
        if server not in self._was_deferred:
            return
        upstream = self.upstreams.get(server)
        if upstream is None:
            return
        if server in self._deferred:
            self._deferred.discard(server)
            assert self._tasks is not None
            log.info("%s: connecting at its first call", server)
            self._tasks.start_soon(upstream.run, name=f"upstream {server}")
        with anyio.move_on_after(self.connect_timeout):
            await upstream.first_attempt_done.wait()

    def url_announced(self) -> None:
        """The URL is out: the work that waits for it may start (when no run is under way)."""
        self._announced.set()

    async def _start_background(self) -> None:
        """The embedding worker as soon as the URL is out (a process of its own, torch-free
        on a first start too: search turns hybrid seconds after the URL); the warm checker
        (and with ``search_when_idle`` the worker) once the gateway is idle too (a first
        script's `deno check` goes first), or after ``SLOW_CHECKS_BEFORE_BACKGROUND`` new
        scripts were checked without it or ``RUNS_BEFORE_BACKGROUND`` runs were registered,
        or at the latest ``BACKGROUND_AT_THE_LATEST`` after the URL."""
        assert self._background_scope is not None
        if self._processes_stopped is not None:  # stopped before it began
            return
        with self._background_scope:
            await self._announced.wait()
            assert self._tasks is not None
            # (No numpy query encoder here when no vector was stored as the gateway started:
            # it would have no tool vector to compare a query with, and the worker it would
            # hold up embeds the tools and serves queries in seconds.)
            if not self.search_when_idle:
                self._start_semantic()
            idle_since = announced = time.monotonic()
            while (
                time.monotonic() - idle_since < IDLE_BEFORE_BACKGROUND
                and time.monotonic() - announced < BACKGROUND_AT_THE_LATEST
                and self.slow_checks < SLOW_CHECKS_BEFORE_BACKGROUND
                and self.early_runs < RUNS_BEFORE_BACKGROUND
            ):
                await anyio.sleep(0.1)
                # a background run may take hours: the work does not wait for it
                if self.runs.live > self.background.live:
                    idle_since = time.monotonic()
            self.background_started = time.time()
            log.debug("background work starts (checker)")
            self._start_semantic()
            if self.checker is not None:
                self._tasks.start_soon(self._run_checker, name="type checker")
            self._tasks.start_soon(self._keep_cache, name="cache keeping")

    async def _keep_cache(self) -> None:
        """Every ``CACHE_KEEPING_EVERY``: this gateway's module marked used, and the user's
        cache pruned when no gateway did it for a day (``store/cacheprune.py``; a thread)
        once no run is under way (only the prune waits: a run whose exec was killed stays
        live, and what this gateway serves must still be marked)."""
        from toolscript.plumbing.checkoptions import mark_check_files_used
        from toolscript.store.cacheprune import prune_if_due, touch_module

        def mark() -> None:
            if self.artifacts.module_hash:
                touch_module(user_cache_dir(), self.artifacts.module_hash)
            mark_check_files_used()  # its warm checker's globals file among them

        async def kept(work: Callable[[], object]) -> None:
            try:
                await anyio.to_thread.run_sync(work)
            except Exception as exc:  # a cache that cannot be kept is not the gateway's end
                log.warning("cache: %s", exc)

        with self._cache_scope:
            await self.first_build.wait()
            await anyio.sleep(CACHE_KEEPING_DELAY)
            while True:
                await kept(mark)
                next_round = anyio.current_time() + CACHE_KEEPING_EVERY
                while self.runs.live > self.background.live:  # the prune waits for no run
                    if anyio.current_time() >= next_round:  # (until the next round at most)
                        break
                    await anyio.sleep(1.0)
                else:
                    await kept(lambda: prune_if_due(user_cache_dir()))
                await anyio.sleep(max(0.0, next_round - anyio.current_time()))

    async def register_run(self, **options: Any) -> Run:
        """A run registered (``RunBook.register``'s ``options``), as ``POST /runs`` and the
        MCP face's own calls (``local.py``) do: those before the checker started count
        towards starting it (``_start_background``)."""
        if self.background_started is None:
            self.early_runs += 1
        return await self.runs.register(**options)

    async def check_script(
        self, code: str, path: str, module: str, module_hash: str
    ) -> dict[str, str]:
        """The warm checker's verdict on a script exec prepared, as ``POST /runtime/check``
        and the MCP face's own calls (``local.py``) answer it: ``{"status": "passed" |
        "failed" | "unavailable", "output"}``. An unavailable one before the checker started
        counts towards starting it (exec checks that script with deno check meanwhile)."""
        if self.checker is None:
            return {"status": "unavailable", "output": "this gateway keeps no type checker"}
        verdict = await self.checker.check(code, path, module, module_hash)
        if verdict.status == "unavailable" and self.background_started is None:
            self.slow_checks += 1  # (see _start_background)
        return verdict.to_dict()

    def search_wanted(self) -> None:
        """A search came: a model that waits for an idle gateway (``search_when_idle``)
        starts now (this search is answered with keywords, as while any model loads)."""
        if self._announced.is_set():
            self._start_semantic()

    def _start_semantic(self) -> None:
        """The embedding worker's start, once (none without semantic search)."""
        if self._semantic_started or self.search.embedder is None or self._tasks is None:
            return
        self._semantic_started = True
        self._tasks.start_soon(self._load_semantic_search, name="semantic search")

    async def _flush_runs(self) -> None:
        with self._flush_scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self.runs.run_flusher)
                while True:
                    await anyio.sleep(1.0)
                    if self._types_learned:
                        self._types_learned = False
                        self._rebuild.set()
                    await self._save_shapes()

    async def _save_shapes(self) -> None:
        await self._save_learned(self.shapes.unsaved())
        try:
            await anyio.to_thread.run_sync(self.recent.save)
        except OSError as exc:
            log.warning("recent calls: cannot save them (%s)", exc)

    async def _save_learned(self, unsaved: tuple[int, str] | None) -> None:
        """Write the learned types' file (``ResultShapes.unsaved``); never fatal."""
        try:
            await anyio.to_thread.run_sync(self.shapes.write, unsaved)
        except OSError as exc:
            log.warning("result types: cannot save what was learned (%s)", exc)

    async def _final_flush(self) -> None:
        try:
            await self.runs.flush()
        except Exception:
            log.exception("runs: cannot write the run log")
        await anyio.to_thread.run_sync(self.runs.runlog.close)
        if self.runs.telemetry is not None:
            await anyio.to_thread.run_sync(self.runs.telemetry.shutdown)
        await self._save_shapes()

    # -- configuration changes ----------------------------------------------

    async def _watch_config(self) -> None:
        """Apply edits of the config file while serving (users add servers mid-session)."""
        # `toolscript trust` after an edit applies it: the trust records are watched too;
        # and the other clients' files that `import` reads, as this one.
        self._watched = self._loaded_fingerprints
        folder = self.config.project_dir
        self._scripts_seen = await anyio.to_thread.run_sync(scripts_fingerprint, folder)
        with self._watch_scope:
            while True:
                with anyio.move_on_after(CONFIG_POLL_SECONDS):
                    await self._look_now.wait()
                self._look_now = anyio.Event()
                now = self._config_fingerprints()
                if now != self._watched and not self.config_file.parent.exists():
                    # Moved or deleted: a reload would serve no server to nobody (no command
                    # finds this gateway from the new path) and its builds would make the
                    # old folder again.
                    log.warning(
                        "the project's folder %s is gone (moved or deleted): this gateway "
                        "stops; start one where the project is now (`toolscript gateway start`)",
                        self.config_file.parent,
                    )
                    if self.on_project_gone is not None:
                        self.on_project_gone()
                    return
                if now != self._watched:
                    text = await self._settled_config_text()
                    seen = self._config_fingerprints()
                    await self.reload_config(text)
                    self._watched = seen
                self._watch_passed.set()
                self._watch_passed = anyio.Event()
                scripts_now = await anyio.to_thread.run_sync(scripts_fingerprint, folder)
                if scripts_now != self._scripts_seen:
                    self._scripts_seen = scripts_now
                    self._rebuild.set()  # the scripts task checks them

    def _config_fingerprints(self) -> tuple[tuple[int, int] | None, ...]:
        """The config file's, the trust records' and the imported files' fingerprints, and
        the tool files' folder's (a file added or removed there changes it)."""
        files = (self.config_file, trust_file(), *self.config.imported_files)
        folder = self.config.local_tools_dir
        return tuple(_fingerprint(path) for path in files) + (
            (_fingerprint(folder),) if folder is not None else ()
        )

    async def _settled_config_text(self) -> bytes | None:
        """The config file's content once two reads a moment apart agree (and the imported
        files' fingerprints with it)."""
        text = await anyio.to_thread.run_sync(_read_text, self.config_file)
        imported = self._config_fingerprints()[2:]
        for _ in range(CONFIG_SETTLE_TRIES):
            await anyio.sleep(CONFIG_SETTLE_SECONDS)
            again = await anyio.to_thread.run_sync(_read_text, self.config_file)
            imported_again = self._config_fingerprints()[2:]
            if again == text and imported_again == imported:
                break
            text, imported = again, imported_again
        return text

    async def reload_config(self, text: bytes | None = None) -> None:
        """Apply the config file (``text``: its content, else read now): connect new servers,
        stop removed ones, restart those whose entries changed, rebuild. An invalid or empty
        file changes nothing; its error is logged once and kept for /health."""
        path = self.config_file
        if text is None:
            text = await anyio.to_thread.run_sync(_read_text, path)
        try:
            new = await anyio.to_thread.run_sync(_parse_config, text, path, self.config.project_dir)
            broke = [error for error in new.import_errors if error not in self.config.import_errors]
            if broke:  # an imported file caught mid-write (Claude Code rewrites ~/.claude.json
                # often): its servers keep running, as for an invalid .toolscript.json
                raise ConfigError(broke[0])
        except ConfigError as exc:
            error = exc.message + (f" (hint: {exc.hint})" if exc.hint else "")
            if error != self.config_error:
                log.error("config: %s; still serving the previous configuration", error)
            self.config_error = error
            return
        self.config_error = None
        old = {server.name: server for server in self.config.servers}
        fresh = {server.name: server for server in new.servers}
        removed = [name for name in old if name not in fresh]
        added = [name for name in fresh if name not in old]
        changed = [name for name in fresh if name in old and fresh[name] != old[name]]
        for warning in new.warnings:
            if warning not in self.config.warnings:
                log.warning("config: %s", warning)
        for warning in new.import_warnings:
            if warning not in self.config.import_warnings:
                log.warning("import: %s", warning)
        if new.search != self.config.search:
            log.warning("config: search settings changed; they apply when the gateway restarts")
        packages = new.packages != self.config.packages
        self.config = new
        # Counted after the config they are of: a worker thread deciding or rendering (a
        # server's tools, get-types') while it changed keeps nothing of the old one past it.
        self._decisions = {}
        self.catalogue += 1
        if packages:
            log.info("config: packages now %s", ", ".join(new.packages) or "none")
            self._rebuild.set()  # fetched and locked by the next build
        if not (removed or added or changed):
            return
        log.info(
            "config: %s",
            "; ".join(
                f"{what} {', '.join(names)}"
                for what, names in (("added", added), ("removed", removed), ("restarted", changed))
                if names
            ),
        )
        repointed = [name for name in changed if fresh[name].identity != old[name].identity]
        self.shapes.identities.update({name: fresh[name].identity for name in [*added, *changed]})
        forgot = any([self.shapes.forget(name) for name in [*removed, *repointed]])
        self.search.drop_servers(removed)  # no search answers with them from now on
        for name in [*removed, *changed]:
            upstream = self.upstreams.pop(name)
            await upstream.stop()
            for key in [key for key in self._validators if key[0] == name]:
                del self._validators[key]
        assert self._tasks is not None
        for name in [*added, *changed]:
            upstream = upstream_for(
                fresh[name],
                self,
                connect_timeout=self.connect_timeout,
                on_tools_changed=self._tools_changed,
            )
            self.upstreams[name] = upstream
            self._tasks.start_soon(upstream.run, name=f"upstream {name}")
        # Keep the config's order (list-servers, the module).
        self.upstreams = {name: self.upstreams[name] for name in fresh}
        self._listed_changes += 1
        self._rebuild.set()  # removed servers leave the artifacts now; new ones when connected
        if forgot:  # saved last: no await between the log line above and the servers' removal
            await self._save_shapes()  # what another program's results taught is not kept

    async def _tools_changed(self, upstream: Upstream) -> None:
        self._decisions = {}  # (a new dict: a worker thread deciding now keeps to the old)
        self.catalogue += 1
        for key in [key for key in self._validators if key[0] == upstream.name]:
            del self._validators[key]
        if self._snapshot_taken:  # a change the first build did not see is built after it
            self._listed_changes += 1
            self._rebuild.set()

    def _build(self, snapshot: SnapshotSource) -> PipelineResult:
        try:
            result = self._build_once(snapshot)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if isinstance(exc, OSError) and exc.errno in WRITES_REFUSED:
                raise
            problem = f"{type(exc).__name__}: {exc}"
        else:
            if not result.failures:
                return result
            problem = result.failures[0].strip().splitlines()[-1]
        # A disk full (or a file size limit, a read-only file system) is no damage: discarded, the
        # whole cache was gone and the build again failed with 'No such file or directory'.
        for code in WRITES_REFUSED:
            if f"[Errno {code}] {os.strerror(code)}" in problem:
                raise OSError(code, os.strerror(code))
        # Whatever broke the cache (a truncated file, a stray edit), all of it is derived.
        log.warning(
            "artifacts: the cache in %s is damaged (%s); rebuilding it", self.layout.root, problem
        )
        self.layout.discard_derived(stop=self._stop_building)
        return self._build_once(snapshot)

    def _build_once(self, snapshot: SnapshotSource) -> PipelineResult:
        semantic_ready = self.search.status()["semantic"] == "ready"
        try:
            # The tools' vectors are embedded after (``_embed_unindexed``): runs wait for
            # this build, and search did for the embedding too (36 s at load 13 for a tool
            # file added, the torch worker started: every exec and search waited 10 s).
            result = run_pipeline(
                self.config,
                self.layout,
                snapshot,
                tasks=ARTIFACT_TASKS,
                stop=self._stop_building,
                waiting=self.build_waits.set,
            )
        finally:
            self.build_waits.clear()
        servers = list(self.config.enabled_servers)
        artifacts = Artifacts.load(self.layout, [s.name for s in servers])
        saved, _ = load_saved(self.config.project_dir)
        verdicts = load_verdicts(self.layout.saved_scripts) or ScriptVerdicts()
        # What the module offers: the scripts that checked when it was built.
        saved = [s for s in saved if s.name in verdicts.passing or s.name in verdicts.broken]
        self.artifacts, self.saved_scripts, self.script_verdicts = artifacts, saved, verdicts
        self.catalogue += 1
        if self.search_index:
            documents = load_documents(self.layout, servers)
            # a broken one is not in the module: found, `scripts.NAME` failed the run's check
            documents += [_script_document(s) for s in saved if s.name in verdicts.passing]
            if semantic_ready:  # searched once embedded: tools and vectors change together
                self._unindexed = documents
            else:
                self.search.set_documents(documents)
        return_free_memory()  # what the build parsed and dropped (tool lists, fragments)
        return result

    async def _embed_unindexed(self) -> None:
        """Embed the tools the last build listed and search them from then on: embedded
        outside the pipeline's lock (a build of a tool list changed meanwhile goes on, and
        takes over: its tools are embedded next, these stay stored), then the index task
        (what is missing from the store: none, or what could not be stored) and the switch
        under it, so tools and vectors change together."""
        async with self._embedding_lock:
            documents = self._unindexed
            if documents is None:  # (embedded by the embedding of a build before)
                return
            self.embedding = True
            try:
                tools = [d for d in documents if d.kind == "tool"]
                await anyio.to_thread.run_sync(self._embed_missing, tools)
                async with self._pipeline_lock:
                    if self._unindexed is not documents:  # a later build's tools: its turn
                        return
                    self._unindexed = None
                    await anyio.to_thread.run_sync(self._index_and_switch, documents)
            except BuildStopped:
                log.info("search: not embedded (stopping while another build held the cache)")
            except Exception:  # never fatal: search goes on with the tools it has
                if self._stop_building.is_set():  # (the worker stopped with the gateway)
                    log.info("search: not embedded (the gateway stops)")
                else:
                    log.exception("search: embedding the tools a build listed failed")
            finally:
                self.embedding = False

    def _index_and_switch(self, documents: list[ToolDocument]) -> None:
        self._run_index_task([d for d in documents if d.kind == "tool"])
        self.search.set_documents(documents)  # (what it could not store is embedded there)

    async def _run_checker(self) -> None:
        assert self.checker is not None and self._checker_scope is not None
        with self._checker_scope:
            await self.checker.run()

    async def _rebuild_when_tools_change(self) -> None:
        with anyio.CancelScope() as self._rebuild_scope:
            while True:
                await self._rebuild.wait()
                await anyio.sleep(0.05)  # let a burst of changes settle into one rebuild
                self._rebuild = anyio.Event()
                await self.rebuild_artifacts()

    async def _load_semantic_search(self) -> None:
        """Load the model, run the index task, switch search to hybrid; never fatal."""
        assert self.search.embedder is not None and self._semantic_scope is not None
        started = time.perf_counter()
        try:
            with self._semantic_scope as scope:  # cancelled at shutdown, before the worker stops
                await anyio.to_thread.run_sync(self.search.embedder.load, abandon_on_cancel=True)
                self.search.model_loaded()
                await self.first_build.wait()  # (the worker started beside it: tools now)
                async with self._embedding_lock:
                    tools = self._search_tools()
                    if tools is not None:  # embedded first, a build free to run meanwhile
                        await anyio.to_thread.run_sync(
                            self._embed_missing, tools, abandon_on_cancel=True
                        )
                    async with self._pipeline_lock:  # (what a build added: embedded there)
                        await anyio.to_thread.run_sync(self._index_and_load, abandon_on_cancel=True)
            if scope.cancelled_caught:
                return
        except SemanticUnavailable as exc:
            self.search.semantic_failed(str(exc))
            log.warning("search: keyword only: %s", exc)
            return
        except Exception as exc:
            self.search.semantic_failed(f"the embedding model failed: {exc}")
            log.exception("search: keyword only, the embedding model failed")
            return
        status = self.search.status()
        log.info(
            "search: hybrid ready in %.1f s (%d tools, %d embedded, %d from cache; queries in %s"
            " through %s)",
            time.perf_counter() - started,
            status["tools"],
            status["embedded"],
            status["cached"],
            status["query_precision"],
            status["query_runtime"],
        )

    def _run_index_task(self, tools: list[ToolDocument] | None) -> None:
        """doit's index task alone: embed ``tools`` (None: those of the files it reads) that
        the store lacks (semantic search is ready)."""
        assert self.search.embedder is not None
        run_pipeline(
            self.config,
            self.layout,
            SnapshotSource({}),
            tasks=["index"],
            indexing=SearchIndexing(self.search.embedder, self.search.store, tools),
            stop=self._stop_building,
        )

    def _search_tools(self) -> list[ToolDocument] | None:
        """The tools search holds, which the last build made from the files the index task
        reads (None when the gateway keeps no search index: the task reads the files)."""
        if not self.search_index:
            return None
        return [d for d in self.search.documents if d.kind == "tool"]

    def _embed_missing(self, tools: list[ToolDocument]) -> None:
        """Embed and store the vectors of ``tools`` the store lacks, outside any build: the
        index task run after it (under the pipeline's lock) finds them stored."""
        from toolscript.search.engine import embed_missing

        assert self.search.embedder is not None
        embed_missing(tools, self.search.embedder, self.search.store)

    def _index_and_load(self) -> None:
        # The build (under the same lock) made these from the files the index task reads.
        self._run_index_task(self._search_tools())
        self.search.load_vectors()
        return_free_memory()  # what the index task read and dropped (tool documents, vectors)

    async def module_hash_built(self, wait: float = LISTED_CHANGE_WAIT) -> str:
        """The module's hash once it holds the tool lists as they are now (a server the config
        watch added and that connected, one removed; an edit it has not looked at yet),
        waiting up to ``wait`` seconds for the build under way: a run right after a tool file
        was added type-checked against the
        module without it, while list-servers already said it was connected. A build that
        waits for another process's (a ``doit`` by hand holding the cache's lock) is not
        waited for: the run goes on with what is served (``health``'s ``types.unbuilt`` says
        why a tool the change adds is missing), where each run waited the whole ``wait``."""
        with anyio.move_on_after(wait):
            await self.edits_applied()
            wanted = self._listed_changes
            if self._built_changes < wanted:
                async with anyio.create_task_group() as waiting:

                    async def built() -> None:
                        while self._built_changes < wanted:
                            await self._changes_built.wait()
                        waiting.cancel_scope.cancel()

                    async def held() -> None:
                        while not self.build_waits.is_set():
                            await anyio.sleep(BUILD_HELD_POLL)
                        waiting.cancel_scope.cancel()

                    waiting.start_soon(built)
                    waiting.start_soon(held)
        return self.artifacts.module_hash

    async def edits_applied(self) -> None:
        """A config (or tool file) saved since the watch last looked, applied: the watch looks
        each second, and a run right after the edit (the face's execute of a script using a
        server just added) was checked against the module without it, a search of that
        server's tools said it was not found."""
        while self._edited_since_watched():
            passed = self._watch_passed
            self._look_now.set()
            await passed.wait()

    def build_held_note(self) -> str | None:
        """Why the served module lacks a changed tool list: its build waits for another
        process's build of the cache; else None."""
        if self.first_build.is_set() and not self.module_is_current() and self.build_waits.is_set():
            return BUILD_HELD_NOTE.format(what="in the types")
        return None

    async def listed_changes_built(self, wait: float = LISTED_CHANGE_WAIT) -> str | None:
        """For search and get-types: wait (up to ``wait`` seconds) for the build of a tool
        list that changed, unless that build waits for another process's (a ``doit`` by
        hand holding the cache's lock), where each search waited the whole ``wait`` for
        it. None once built (or nothing to build), else why the answer may miss tools."""
        if self.first_build.is_set() and self.module_is_current() and self.embedding:
            return EMBEDDING_NOTE
        if not self.first_build.is_set() or self.module_is_current():
            return None
        # Again while another change came meanwhile (a second server connecting after the
        # first: the answer said the build was not done in 10 s, a moment after the edit).
        deadline = anyio.current_time() + wait
        while not self.module_is_current() and not self.build_waits.is_set():
            left = deadline - anyio.current_time()
            if left <= 0:
                break
            await self.module_hash_built(left)
        if self.module_is_current():
            return EMBEDDING_NOTE if self.embedding else None
        if self.build_waits.is_set():
            return BUILD_HELD_NOTE.format(what="searched")
        return f"a tool list changed and its build was not done in {wait:.0f} s"

    def module_is_current(self) -> bool:
        """Whether the served module took in every change of the servers' tool lists, the
        config's files as the watch last applied them (``module_hash_built``)."""
        return self._built_changes >= self._listed_changes and not self._edited_since_watched()

    def _edited_since_watched(self) -> bool:
        """Whether the config file or the tool files' folder changed since the watch last
        applied them. Not the trust records nor other clients' files it imports: Claude Code
        rewrites ~/.claude.json all session long, and each run would wait for the watch."""
        watched = self._watched
        if watched is None:
            return False
        now = self._config_fingerprints()
        has_folder = self.config.local_tools_dir is not None
        own = [0, len(now) - 1] if has_folder else [0]
        return len(now) != len(watched) or any(now[i] != watched[i] for i in own)

    async def rebuild_artifacts(self) -> None:
        """Run the doit pipeline on a snapshot of the live tool lists; reload what it made."""
        changes = self._listed_changes
        try:
            await self._rebuild_artifacts(functools.partial(self._mark_built, changes))
        finally:  # (a build that failed wakes the runs waiting too: they use what is served)
            self._mark_built(changes)

    def _mark_built(self, changes: int) -> None:
        """The module holds the tool lists as of ``changes``: the runs waiting for it go on."""
        if self._built_changes >= changes:
            return
        self._built_changes = changes
        self._changes_built.set()
        self._changes_built = anyio.Event()

    def _snapshot(self) -> SnapshotSource:
        """The live tool lists, their learned result types and offerings, to build from."""
        self._snapshot_taken = True
        return SnapshotSource(
            {
                name: list(up.tools.values()) if up.state == ServerState.CONNECTED else None
                for name, up in self.upstreams.items()
            },
            inferred={
                name: self.shapes.learned(name, list(up.tools.values()))
                for name, up in self.upstreams.items()
                if up.state == ServerState.CONNECTED
            },
            offered={
                name: dict(up.offered)
                for name, up in self.upstreams.items()
                if up.state == ServerState.CONNECTED and isinstance(up, ListedOfferings)
            },
        )

    async def _rebuild_artifacts(self, built: Callable[[], None]) -> None:
        """The build; ``built`` once the module is current, before the new tools' vectors
        are embedded for search."""
        started = time.perf_counter()
        try:
            async with self._pipeline_lock:
                # The tool lists and learned types as they are once the build before is done:
                # taken before the lock, a build that waited for it wrote what it saw then,
                # over the module the build before had made with a type learned meanwhile.
                snapshot = self._snapshot()
                # and the learned types it builds with are saved first, taken with it: a
                # standalone doit reads them from that file (built from an older one, it
                # fetched the server again and wrote the module without the types served).
                await self._save_learned(self.shapes.unsaved())
                result = await anyio.to_thread.run_sync(self._build, snapshot)
                if self.checker is not None:
                    self.checker.module_changed(
                        self.artifacts.module_hash, self.artifacts.module, self.script_sources()
                    )
                built()
            if self._unindexed is not None:  # a task of its own: the next build need not wait
                if self._tasks is not None:
                    self._tasks.start_soon(self._embed_unindexed, name="embedding")
                else:
                    await self._embed_unindexed()
        except BuildStopped:  # it stops: another process's build held the cache meanwhile
            log.info("artifacts: not built (stopping while another build held the cache)")
            return
        except OSError as exc:
            # Never fatal: what was built before is still served, and calls never needed it.
            log.error(
                "artifacts: cannot write the cache in %s (%s); still serving the previous build",
                self.layout.root,
                exc.strerror or exc,
            )
            return
        log.info(
            "artifacts: %d tasks ran in %.0f ms%s",
            len(result.executed),
            (time.perf_counter() - started) * 1000,
            f", {len(result.failures)} failed" if result.failures else "",
        )

    # -- saved scripts -------------------------------------------------------

    def script_calls(self) -> dict[tuple[str, str], str]:
        """How search hits of saved scripts are called, keyed like tools' (server "")."""
        return {
            ("", s.name): f"await scripts.{s.name}(input)  // {s.signature}"
            for s in self.saved_scripts
        }

    def script_sources(self) -> dict[str, str]:
        """The sources of the saved scripts the served module offers (as it was built)."""
        passing = set(self.script_verdicts.passing)
        return {s.name: s.source for s in self.saved_scripts if s.name in passing}

    def scripts_listing(self) -> dict[str, Any]:
        broken = self.script_verdicts.broken
        return {
            "directory": str(scripts_dir(self.config.project_dir)),
            "scripts": [
                {
                    "name": s.name,
                    "description": s.description,
                    "signature": s.signature,
                    "path": str(s.path),
                    "status": "broken" if s.name in broken else "ok",
                    "errors": broken.get(s.name, []),
                    "call": f"await scripts.{s.name}({{ ... }})",
                }
                for s in self.saved_scripts
            ],
            "warnings": self.script_verdicts.warnings,
        }

    async def save_script(
        self, name: str, code: str, description: str | None, force: bool
    ) -> dict[str, Any]:
        """Check ``code`` as saved script ``name`` with the others; write it when it checks."""
        check_name(name)
        if not has_default_export(code):
            raise ScriptCheckError(
                f"{name} was not saved: it has no default export",
                errors=[f"{SCRIPTS_DIRNAME}/{name}.ts: {CONTRACT_MESSAGE}"],
            )
        source = with_description(code, description) if description else code
        if len(source.encode()) > MAX_SCRIPT_BYTES:
            raise UsageError(
                f"{name} was not saved: it is over {MAX_SCRIPT_BYTES // 1024} KB, more than "
                "the gateway loads of a saved script",
                hint="keep data out of the script: read it from a file or a tool",
            )
        folder = scripts_dir(self.config.project_dir)
        path = folder / f"{name}.ts"
        if folder.is_symlink():  # a cloned repository's: saving would write through it
            raise UsageError(
                f"{name} was not saved: {folder} is a symbolic link (to {os.readlink(folder)})",
                hint=f"make {SCRIPTS_DIRNAME}/ a folder of the project, then save again",
            )
        async with self._saving:
            saved, _ = await anyio.to_thread.run_sync(load_saved, self.config.project_dir)
            clash = [s for s in saved if s.name.lower() == name.lower()]
            if clash and not force:
                raise ScriptExistsError(
                    f"a saved script named {clash[0].name} exists ({clash[0].path})",
                    hint="add --force to replace it",
                )
            others = [s for s in saved if s.name.lower() != name.lower()]
            if not clash and len(others) >= MAX_SAVED_SCRIPTS:
                raise UsageError(
                    f"{name} was not saved: the project has {len(others)} saved scripts, "
                    f"as many as the gateway saves ({MAX_SAVED_SCRIPTS})",
                    hint=f"remove the ones no longer used from {folder}, or replace one "
                    "(save it again under its name with --force)",
                )
            candidate = SavedScript.of(name, path, source)
            every = sorted([*others, candidate], key=lambda s: s.name)
            verdicts = await anyio.to_thread.run_sync(self._check_candidates, every)
            if name in verdicts.broken:
                raise ScriptCheckError(
                    f"{name} was not saved: it does not type-check against the current tools",
                    errors=verdicts.broken[name],
                )
            for old in clash:
                if old.path != path:
                    old.path.unlink(missing_ok=True)
            try:
                await anyio.to_thread.run_sync(_write_script, path, source)
            except OSError as exc:
                # a cloned repository on a read-only mount: its tools work, saving does not
                if folder.exists() and not folder.is_dir():
                    reason, hint = "it is not a folder", f"move {folder} away, then save again"
                elif is_storage_failure(exc):
                    reason = exc.strerror or str(exc)
                    hint = (
                        "saved scripts live in the project's folder: save in a copy you can "
                        "write, or run the script as a file (`toolscript FILE.ts`)"
                    )
                else:
                    raise
                raise StorageError(
                    f"{name} was not saved: toolscript cannot write {folder}: {reason}", hint=hint
                ) from exc
            # Built below: the config watch need not build it again when it sees the file.
            self._scripts_seen = await anyio.to_thread.run_sync(
                scripts_fingerprint, self.config.project_dir
            )
        already = set(self.script_verdicts.broken)
        await self.rebuild_artifacts()  # the scripts task finds this check's verdicts
        # Searched from this answer on: with semantic search, the switch to the build's
        # documents is the embedding task's, run after the build (a search right after the
        # save, the way an agent looks for it, found nothing for about 3 s). Done here if
        # that task has not begun, else waited for (it holds the embedding lock).
        await self._embed_unindexed()
        return {
            "name": name,
            "path": str(path),
            "description": candidate.description,
            "signature": candidate.signature,
            "replaced": bool(clash),
            # Scripts this one broke (they call it through `scripts`), not those broken before.
            "broken": {n: e for n, e in verdicts.broken.items() if n not in already},
            "module_hash": self.artifacts.module_hash,
        }

    def _check_candidates(self, scripts: list[SavedScript]) -> ScriptVerdicts:
        tools = read_artifact(self.layout.tools_only)
        return check_saved(tools, scripts, self.layout.save_check, None)

    # -- lookup --------------------------------------------------------------

    def upstream(self, server: str) -> Upstream:
        try:
            return self.upstreams[server]
        except KeyError:
            names = list(self.upstreams)
            raise ServerNotFoundError(
                f"server not found: {server!r}"
                + (f" (configured: {', '.join(names)})" if names else " (zero servers configured)"),
                suggestions=difflib.get_close_matches(server, names, n=3, cutoff=0.5),
                # An edit that added it did not load: say why, not only what still serves.
                hint=f"the config's last edit did not load, so the previous one still serves: "
                f"{self.config_error}"
                if self.config_error
                else None,
            ) from None

    def server_tools(self, server: str) -> list[dict[str, Any]]:
        """A server's tools with their policy, kept until the catalogue changes (a worker
        thread's: 2,000 tools take tens of ms). A server not connected now lists the tools
        it listed last (this gateway's, or the last build's when it never connected here:
        what search and get-types serve of it); one that never listed any is an error, not
        an empty list."""
        upstream = self.upstream(server)
        if upstream.state != ServerState.CONNECTED and not upstream.tools:
            disabled = upstream.state == ServerState.DISABLED  # offered nowhere, kept or not
            kept = [] if disabled else self._last_listing(upstream)
            if not kept:
                raise self._unavailable(upstream)
            return kept
        return self.tool_lists.get(
            self.catalogue,
            server,
            lambda: [
                tool | {"policy": self.decision(server, tool["name"])}
                for tool in upstream.tools.values()
            ],
        )

    def server_status(self, upstream: Upstream) -> dict[str, Any]:
        """``upstream``'s status, with ``last_known_tools`` when it lists none now (failed,
        connecting) and the last build kept its listing: what `list-tools`, search and
        get-types serve of it, which its live count of 0 hid."""
        status = upstream.status()
        if not status.get("tools") and upstream.state not in (
            ServerState.CONNECTED,
            ServerState.DISABLED,
        ):
            kept = len(self._last_listing(upstream))
            if kept:
                status["last_known_tools"] = kept
        return status

    def unsearched(self, server: str | None = None) -> list[dict[str, str]]:
        """The servers (``server`` alone, when given) search has no tool of yet: still
        connecting (after --ready-wait), none listed to this gateway or kept by the last
        build, each with its state. A failed one is not named at each search: list-servers
        and gateway status say why it failed."""
        return [
            {"name": name, "state": str(upstream.state)}
            for name, upstream in self.upstreams.items()
            if (server is None or name == server)
            and upstream.state in (ServerState.CONNECTING, ServerState.RECONNECTING)
            and not upstream.tools
            and not self._last_listing(upstream)
        ]

    def _last_listing(self, upstream: Upstream) -> list[dict[str, Any]]:
        """The tools the last build kept of a server that has not connected to this gateway
        (its fetch file: this user's build's listing, filtered by its entry; a cloned
        repository's is emptied by that build), each with its policy now, a denied one left
        out; none before the first build. Read at each ask: a failed server is asked rarely."""
        if not self.first_build.is_set():
            return []
        try:
            kept = json.loads(read_artifact(self.layout.server_tools(upstream.name)))
        except (OSError, ValueError):
            return []
        tools = []
        for tool in kept if isinstance(kept, list) else []:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            policy = self.config.decision(upstream.config, tool["name"], tool.get("annotations"))
            if policy != "deny":
                tools.append(tool | {"policy": policy})
        return tools

    def _unavailable(self, upstream: Upstream) -> ServerUnavailableError:
        name = upstream.name
        if upstream.state == ServerState.DISABLED:
            return ServerUnavailableError(
                f"server {name!r} is disabled in the config",
                hint=f'remove "disabled": true from its entry in {self.config_file}',
            )
        if upstream.state in (ServerState.CONNECTING, ServerState.RECONNECTING) and not (
            upstream.error
        ):
            return ServerUnavailableError(
                f"server {name!r} is still connecting",
                hint="try again in a moment; `toolscript gateway status` shows its progress",
            )
        if upstream.config.transport == "local":  # a tool file: what to fix is the file
            return ServerUnavailableError(
                f"server {name!r} is not available ({upstream.state}): "
                f"{upstream.error or 'no error was reported'}",
                hint=f"fix the tool file {upstream.config.command} (the gateway loads it "
                "again once it is saved); `toolscript gateway status` shows why it failed",
            )
        return ServerUnavailableError(
            f"server {name!r} is not available ({upstream.state}): "
            f"{upstream.error or 'no error was reported'}",
            hint=upstream.remedy
            or f"fix its entry in {self.config_file} (the gateway picks up the edit); "
            "`toolscript gateway status` shows its stderr",
        )

    def spelled_tool(self, qualified: str) -> str:
        """The ``server__tool`` a call asked as a script spells a tool the module lacks
        (``tools.s.dropTable`` asks ``s__dropTable``) stands for when the policy denies it,
        so the run's checks, replay and log name the tool; any other name as it is."""
        server, _, tool = qualified.partition(SEPARATOR)
        upstream = self.upstreams.get(server)
        if upstream is None or tool in upstream.tools:
            return qualified
        denied = denied_name(tool, upstream.config.policy, upstream.config.denies)
        return qualified if denied is None else f"{server}{SEPARATOR}{denied}"

    def tool(self, server: str, tool: str) -> tuple[Upstream, dict[str, Any]]:
        upstream = self.upstream(server)
        found = upstream.tools.get(tool)
        if found is not None:
            return upstream, found
        if upstream.state != ServerState.CONNECTED and not upstream.tools:
            raise self._unavailable(upstream)
        self._unless_denied(upstream, tool)
        spellings = {name: name for name in upstream.tools}
        raise _tool_not_found(upstream, tool, spellings, self.namespace_of(server))

    def namespace_of(self, server: str) -> str:
        """``server``'s name in scripts (``tools.<namespace>``), as the module has it."""
        found = (f.namespace for f in self.artifacts.fragments if f.server == server)
        return next(found, server)

    def _unless_denied(self, upstream: Upstream, tool: str) -> None:
        """Raise that ``tool`` is denied when the server's policy denies it (it is absent
        from the tools, the types and search: "not found" would send the user looking). A
        tool is found by its name or as scripts call it (``codegen.naming.denied_name``), as
        a script's type error finds it (``sandbox.policy_denial``)."""
        denied = denied_name(tool, upstream.config.policy, upstream.config.denies)
        if denied is not None:
            raise ToolDeniedError(
                f"{call_named(f'{upstream.name}__{denied}')} is denied by the policy of server "
                f"{upstream.name!r} "
                f"in {self.config_file}",
                hint='scripts cannot call it; change its rule under "policy" to allow it',
            )

    def fragments(self, server: str | None = None, tool: str | None = None) -> list[ToolFragment]:
        """Generated fragments, optionally of one server and one tool (original or camelCase)."""
        if server is None:
            if tool is not None:
                raise UsageError("a tool filter needs a server filter: ?server=NAME&tool=NAME")
            return list(self.artifacts.fragments)
        upstream = self.upstream(server)
        selected = [f for f in self.artifacts.fragments if f.server == server]
        if not selected and upstream.state != ServerState.CONNECTED:
            raise self._unavailable(upstream)
        if tool is None:
            return selected
        matching = [f for f in selected if tool in (f.tool, f.function)]
        if not matching:
            self._unless_denied(upstream, tool)
            spellings = {f.function: f.tool for f in selected} | {f.tool: f.tool for f in selected}
            raise _tool_not_found(upstream, tool, spellings, self.namespace_of(server))
        return matching

    def secrets(self) -> tuple[str, ...]:
        """What the run log, recent calls and errors mask: the config's secrets and those
        of each server as it connects (an OAuth sign-in's tokens, ``Upstream.secrets``)."""
        values = (*self.config.secrets, *(v for up in self.upstreams.values() for v in up.secrets))
        return tuple(dict.fromkeys(values))

    def all_tools(self) -> list[tuple[str, dict[str, Any]]]:
        return [(name, tool) for name, up in self.upstreams.items() for tool in up.tools.values()]

    # -- calls ---------------------------------------------------------------

    def validate(self, server: str, tool: dict[str, Any], arguments: Any) -> None:
        schema = tool.get("inputSchema") or {"type": "object"}
        key = (server, tool["name"])
        check = self._validators.get(key)
        if check is None or check.schema is not schema:
            check = self._validators[key] = ArgumentCheck(schema)
        found = check.errors(arguments)
        if found is None:  # a schema it cannot evaluate safely: the server checks them
            log.debug("%s.%s: arguments left to the server", server, tool["name"])
            return
        errors = sorted(found, key=lambda e: list(e.absolute_path))
        if errors:
            details = [
                {
                    "path": "/" + "/".join(str(p) for p in error.absolute_path),
                    "message": plain_message(error),
                }
                for error in errors
            ]
            summary = "; ".join(f"{d['path']}: {d['message']}" for d in details)
            raise ArgumentValidationError(
                f"invalid arguments for {server}.{tool['name']}: {summary}",
                errors=details,
            )

    def server_identity(self, qualified: str) -> str:
        """The identity of the server of ``server__tool`` as the config now has it (what an
        "always" approval is bound to); '' for a server it does not have."""
        upstream = self.upstreams.get(split_tool_name(qualified)[0])
        return "" if upstream is None else upstream.config.identity

    def decision(self, server: str, tool: str) -> str:
        """``allow``, ``ask`` or ``deny`` for calls of ``server__tool`` (raises when the tool
        is unknown or denied); a tool's is remembered until the config or the server's tools
        change. A resource's or prompt's (``resource:URI``, ``prompt:NAME``) is decided anew
        each time: a script names as many URIs as it likes, each as long as a request body,
        and kept they grew the gateway without bound (180 MB per 900 reads of 200 KB URIs)."""
        key = (server, tool)
        # The decisions of the config read below, or of an older one (a reload replaces the
        # dict after the config): a worker thread's decision is never kept past a reload.
        decisions = self._decisions
        found = decisions.get(key)
        if found is None:
            offering = self.upstream(server)
            if tool not in offering.tools and is_offering(tool):  # resource:URI, prompt:NAME
                return self.config.decision(offering.config, tool, READ_ONLY)
            upstream, spec = self.tool(server, tool)
            found = self.config.decision(upstream.config, tool, spec.get("annotations"))
            decisions[key] = found
        return found

    async def call(self, qualified: str, arguments: Any) -> tuple[str, Any]:
        """A call outside any run (the gateway's own token): an ``ask`` tool needs a tool
        approval on record."""
        server, tool_name = split_tool_name(qualified)
        if self.decision(server, tool_name) == "ask" and not await anyio.to_thread.run_sync(
            self.runs.runlog.tool_approved, qualified, self.server_identity(qualified)
        ):
            raise ApprovalRequiredError(
                f"{tool_named(qualified)} needs approval before it runs; the call was not made",
                hint=approve_commands(None, qualified),
                call={"tool": qualified},
            )
        return await self.make_call(qualified, arguments)

    async def connecting_waited(self, server: str) -> None:
        """Wait (up to ``ready_wait`` seconds) for a server still connecting with no tools
        yet, started or restarted by a config edit a moment ago, as exec waits for a server
        its script names: a call of it failed at once, 'still connecting' (an approved write
        whose server the edit restarted while the person was asked), and a search of its
        tools found none."""
        upstream = self.upstreams.get(server)
        if (
            upstream is None
            or upstream.tools
            or upstream.error
            or upstream.state not in (ServerState.CONNECTING, ServerState.RECONNECTING)
        ):
            return
        with anyio.move_on_after(self.ready_wait):
            await upstream.first_attempt_done.wait()

    async def make_call(
        self, qualified: str, arguments: Any, *, agents: bool = False
    ) -> tuple[str, Any]:
        """Validate and forward one call; ``(shape, value)`` per the result contract.
        ``agents``: a run of the agent's makes it (``Run.agents``), whose example the agent
        may be shown (``RecentCalls``)."""
        # The config the call is made under, for all it reads after the server answers: a
        # reload during the call (a server taken out with its token) leaves it masking
        # what that config knew, not what the next one does.
        config = self.config
        server, tool_name = split_tool_name(qualified)
        await self.connecting_waited(server)  # (restarted by an edit while it was approved)
        upstream, tool = self.tool(server, tool_name)
        self.validate(server, tool, arguments)
        result = await upstream.call_tool(tool_name, arguments)
        try:
            shape, value = tool_result(qualified, result)
        except ToolCallError as exc:  # an error text is a message: no configured secret in it
            secrets = (*config.secrets, *upstream.secrets)
            # but what the script sent, echoed ("no such file: <path>"), is left as it is:
            # masked, it said which of the script's guesses were runs of a secret
            sent = sent_text(arguments)
            raise ToolCallError(
                redact(exc.message, secrets, sent=sent),
                content=redact_value(exc.content, secrets, sent=sent),
            ) from None
        secrets = (*config.secrets, *upstream.secrets)
        if self.shapes.enabled and self.shapes.observe(qualified, tool, shape, value, secrets):
            self._types_learned = True  # built within a second, with whatever else is learned
        received = CALL_RECEIVED.get()  # a run's: its runs of these are not shown as written
        self.recent.note(
            qualified, arguments, value, agents=agents, secrets=secrets, received=received
        )
        return shape, value

    async def elicit(self, server: str, message: str, schema: Any, sent: str) -> dict[str, Any]:
        """A server asks the user something during a call (MCP elicitation): asked through
        the run making the call, when a person can answer it (an interactive exec on a
        terminal, the MCP face through its client's own elicitation). Raises UsageError,
        which the server hears as an error, where nobody can answer. The question and its
        form hold no secret: masked as a call's progress is, a run of one that its calls
        under way ``sent`` shown as sent (masked, it said which of a script's guesses were
        runs of a token), every run of one the run was handed masked."""
        runs = self.runs.calling(server)
        if len(runs) != 1:
            raise UsageError(
                f"server {server!r} asked the user something, but "
                + (
                    "no script's call of it is under way"
                    if not runs
                    else f"{len(runs)} scripts call it at once and it did not say which asks"
                )
                + ": nobody can answer, so the question is refused"
            )
        run = runs[0]
        if not run.interactive:
            raise UsageError(
                f"server {server!r} asked the user something during run {run.id}, but nobody "
                "can answer: the script runs without a terminal (or an MCP client that "
                "supports elicitation), so the question is refused",
                hint="run the script with `toolscript exec` on a terminal to answer it",
            )
        upstream = self.upstreams.get(server)
        secrets = (*self.config.secrets, *(upstream.secrets if upstream is not None else ()))
        message = redact(message, secrets, written=sent, received=run.received)
        shown = redact_value(schema, secrets, written=sent, received=run.received, by_name=False)
        answer = await self.runs.elicit(run, server, message, shown)
        return answered_as_offered(answer, schema, shown)

    # -- reporting -----------------------------------------------------------

    def health(self) -> dict[str, Any]:
        servers = {name: self.server_status(up) for name, up in self.upstreams.items()}
        enabled = [s for s in servers.values() if s["state"] != ServerState.DISABLED]
        healthy = all(s["state"] == ServerState.CONNECTED for s in enabled)
        return {
            "status": "ok"
            if healthy and self.config_error is None and not self.config.left_out
            else "degraded",
            "config": {
                "path": str(self.config_file),
                "error": self.config_error,
                "left_out": list(self.config.left_out),  # tool files not loaded, with why
            },
            "toolscript": {"version": __version__, "build": code_build()},
            "types": {
                "hash": self.artifacts.module_hash,
                "warnings": self.artifacts.warnings,
                "unbuilt": self.build_held_note(),
            },
            "packages": {
                "offered": [p["specifier"] for p in self.artifacts.packages],
                "error": self.artifacts.packages_error,
            },
            "uptime": round(time.time() - self.started_at, 3),
            "ready_wait": self.ready_wait,  # what exec waits at most for a server connecting
            "servers": servers,
            "tools": sum(s["tools"] for s in servers.values()),
            "search": self.search.status(),
            "checker": self.checker.status() if self.checker else {"state": "off"},
            "scripts": {
                "saved": len(self.saved_scripts),
                "broken": self.script_verdicts.broken,
                "warnings": self.script_verdicts.warnings,
            },
            "warnings": [
                f"{name}: {warning}" for name, s in servers.items() for warning in s["warnings"]
            ],
            "processes": self.processes(),
        }

    def processes(self) -> dict[str, Any]:
        """Resident memory (bytes) of toolscript's own processes (the gateway, the search
        workers with their role and whether torch is in them, the type checker) and of each
        server's process tree; ``total`` is toolscript's own."""
        gateway = memory_of(os.getpid())
        search = []
        if isinstance(self.search.embedder, EmbedderProcess):
            for worker in self.search.embedder.workers():
                memory = memory_of(worker["pid"])
                if memory is not None:
                    search.append({**worker, **memory})
        checker_pid = self.checker.pid if self.checker is not None else None
        checker = memory_of(checker_pid, tree=True) if checker_pid is not None else None
        servers: dict[str, Any] = {}
        for name, upstream in self.upstreams.items():
            pid = getattr(upstream, "server_pid", None)
            if pid is None and hasattr(upstream, "worker_pid"):
                pid = upstream.worker_pid()
            servers[name] = memory_of(pid, tree=True) if pid else None
        own = [gateway, *search, checker]
        return {
            "gateway": gateway,
            "search": search,
            "checker": checker,
            "servers": servers,
            "total": sum(memory["rss"] for memory in own if memory is not None),
        }


_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "object": "an object",
    "array": "an array",
    "boolean": "true or false",
    "null": "null",
}


def _shown(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return "an integer"
    kinds = {float: "a number", str: "a string", dict: "an object", list: "an array"}
    return kinds.get(type(value), type(value).__name__)


def _kind_fix(kinds: list[Any], value: Any) -> str:
    """How to write ``value`` as one of ``kinds`` where that is plain: a number or a list in
    quotes ("30" for 30, a model's habit), one string where a list of them goes."""
    if isinstance(value, str) and len(value) <= 200:
        try:
            meant = json.loads(value)
        except ValueError:
            meant = None
        fits = {
            "integer": isinstance(meant, int) and not isinstance(meant, bool),
            "number": isinstance(meant, int | float) and not isinstance(meant, bool),
            "boolean": isinstance(meant, bool),
            "array": isinstance(meant, list),
            "object": isinstance(meant, dict),
        }
        if any(fits.get(str(kind)) for kind in kinds):
            return f" (write {_shown(meant)}, without the quotes)"
    if "array" in kinds and isinstance(value, str | int | float) and not isinstance(value, bool):
        return f" (a list: {_shown([value])})"
    return ""


def plain_message(error: jsonschema.ValidationError) -> str:
    """What a tool argument's schema error says, in plain English ("must be at least 0, got
    -3"), for the common validators; jsonschema's own words for the rest."""
    rule, limit, value = error.validator, error.validator_value, error.instance
    got = f", got {_shown(value)}"
    if rule == "minimum":
        return f"must be at least {limit}{got}"
    if rule == "maximum":
        return f"must be at most {limit}{got}"
    if rule == "exclusiveMinimum":
        return f"must be greater than {limit}{got}"
    if rule == "exclusiveMaximum":
        return f"must be less than {limit}{got}"
    if rule in ("minLength", "maxLength") and isinstance(value, str):
        bound = "at least" if rule == "minLength" else "at most"
        plural = "" if limit == 1 else "s"
        return f"must be {bound} {limit} character{plural} long, got {len(value)}"
    if rule in ("minItems", "maxItems") and isinstance(value, list):
        bound = "at least" if rule == "minItems" else "at most"
        plural = "" if limit == 1 else "s"
        return f"must have {bound} {limit} item{plural}, got {len(value)}"
    if rule == "required" and isinstance(value, dict) and isinstance(limit, list):
        missing = [name for name in limit if name not in value]
        if missing:
            return f"missing required property {_shown(missing[0])}"
    if rule == "type":
        kinds = limit if isinstance(limit, list) else [limit]
        wanted = " or ".join(_TYPE_WORDS.get(str(kind), str(kind)) for kind in kinds)
        return f"must be {wanted}, got {_json_kind(value)}{_kind_fix(kinds, value)}"
    if rule == "enum" and isinstance(limit, list):
        return f"must be one of {', '.join(_shown(choice) for choice in limit)}{got}"
    if rule == "const":
        return f"must be {_shown(limit)}{got}"
    if rule == "pattern":
        return f"must match the pattern {limit}{got}"
    if rule == "additionalProperties" and isinstance(value, dict) and limit is False:
        schema = error.schema if isinstance(error.schema, dict) else {}
        allowed = list(schema.get("properties") or {})
        patterns = list(schema.get("patternProperties") or {})
        extras = [
            name
            for name in value
            if name not in allowed and not any(re.search(pattern, name) for pattern in patterns)
        ]
        if extras:
            names = ", ".join(_shown(name) for name in extras)
            unknown = f"unknown propert{'y' if len(extras) == 1 else 'ies'} {names}"
            return unknown + (f" (allowed: {', '.join(allowed)})" if allowed else "")
    return error.message


def answered_as_offered(answer: dict[str, Any], offered: Any, shown: Any) -> dict[str, Any]:
    """A person's answer to a server's question in the server's own terms. Its form was
    shown masked (a field's name, default or choice holding a secret read ``***``), so a
    field named as shown is the field the server named, and a value that is a masked default
    or choice as shown is the one the server offered: Enter on ``default "***"`` sent the
    server the literal ``***``. The server gets back only what it sent; the person never
    sees it."""
    content = answer.get("content")
    offered_fields = offered.get("properties") if isinstance(offered, dict) else None
    shown_fields = shown.get("properties") if isinstance(shown, dict) else None
    if not (
        isinstance(content, dict)
        and isinstance(offered_fields, dict)
        and isinstance(shown_fields, dict)
        and len(offered_fields) == len(shown_fields)
    ):
        return answer
    named = dict(zip(shown_fields, offered_fields, strict=True))  # masking keeps their order
    restored: dict[Any, Any] = {}
    for key, value in content.items():
        original = named.get(key, key)
        pairs = _offered_values(shown_fields.get(key), offered_fields.get(original))
        if isinstance(value, list):
            restored[original] = [_as_offered(item, pairs) for item in value]
        else:
            restored[original] = _as_offered(value, pairs)
    return answer | {"content": restored}


def _offered_values(shown: Any, offered: Any) -> list[tuple[Any, Any]]:
    """(as shown, as offered) for a field's default and choices the masking changed."""
    if not (isinstance(shown, dict) and isinstance(offered, dict)):
        return []
    pairs = [(shown.get("default"), offered.get("default"))]
    for spec_shown, spec_offered in ((shown, offered), (shown.get("items"), offered.get("items"))):
        if not (isinstance(spec_shown, dict) and isinstance(spec_offered, dict)):
            continue
        for key in ("enum", "oneOf", "anyOf"):
            listed, given = spec_shown.get(key), spec_offered.get(key)
            if isinstance(listed, list) and isinstance(given, list) and len(listed) == len(given):
                for one_shown, one_offered in zip(listed, given, strict=True):
                    if isinstance(one_shown, dict) and isinstance(one_offered, dict):
                        pairs.append((one_shown.get("const"), one_offered.get("const")))
                    else:
                        pairs.append((one_shown, one_offered))
    return [(seen, sent) for seen, sent in pairs if seen != sent]


def _as_offered(value: Any, pairs: list[tuple[Any, Any]]) -> Any:
    return next((sent for seen, sent in pairs if seen == value), value)
