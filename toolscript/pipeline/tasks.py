"""The artifact pipeline as doit tasks: fetch -> names -> types -> module, and the catalogue.

Every task is a plain dict. A task re-runs only when the *content* it reads
changed: fetching compares the canonical JSON of a server's live tool list with
what is on disk, and the later tasks depend on those files by checksum, so a
server whose tools did not change leaves everything downstream up to date.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from doit.tools import config_changed

from toolscript.cachefiles import discard_if_damaged
from toolscript.codegen.module import (
    ToolFragment,
    generator_fingerprint,
    render_module,
    render_tool,
)
from toolscript.codegen.naming import assign_names, to_pascal_case
from toolscript.config import Config, ServerConfig
from toolscript.pipeline.artifacts import (
    CacheLayout,
    canonical_json,
    content_hash,
    write_if_changed,
)
from toolscript.search.engine import embed_missing
from toolscript.search.semantic import NEEDS_EXTRA, Embedder, EmbeddingStore, semantic_installed
from toolscript.search.text import ToolDocument, document_for

__all__ = [
    "PipelineResult",
    "SearchIndexing",
    "ToolSource",
    "build_tasks",
    "load_documents",
    "run_pipeline",
]

log = logging.getLogger("toolscript.pipeline")
_RUN_LOCK = threading.Lock()
ARTIFACT_TASKS = ["fetch", "names", "types", "module", "catalogue"]
TASK_ORDER = [*ARTIFACT_TASKS, "index"]


class ToolSource(Protocol):
    """Where fetching gets tool lists: the gateway's live sessions, or fresh connections."""

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        """The server's tools, or None when it is unavailable (keep what is on disk)."""


@dataclass
class SearchIndexing:
    """What the index task embeds with; None in build_tasks means a model of its own."""

    embedder: Embedder
    store: EmbeddingStore


def load_documents(layout: CacheLayout, servers: list[ServerConfig]) -> list[ToolDocument]:
    """Search documents for every tool the fetch task wrote."""
    documents = []
    for server in servers:
        path = layout.server_tools(server.name)
        if not path.exists():
            continue
        for tool in _read_json(path):
            documents.append(document_for(server.name, server.description, tool))
    return documents


@dataclass
class PipelineResult:
    code: int
    executed: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def _runtime_template() -> Path:
    return Path(str(resources.files("toolscript.templates").joinpath("runtime.ts")))


def _filtered(server: ServerConfig, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept = [tool for tool in tools if server.allows_tool(tool["name"])]
    return sorted(kept, key=lambda tool: tool["name"])


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def build_tasks(
    config: Config,
    layout: CacheLayout,
    source: ToolSource,
    indexing: SearchIndexing | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """A doit namespace (``task_*`` generators and ``DOIT_CONFIG``) for ``config``."""
    servers = list(config.enabled_servers)
    runtime = _runtime_template()
    layout.root.mkdir(parents=True, exist_ok=True)  # doit opens its database there
    memo: dict[str, list[dict[str, Any]] | None] = {}

    def live(server: ServerConfig) -> list[dict[str, Any]] | None:
        if server.name not in memo:
            tools = source.tools(server.name)
            memo[server.name] = None if tools is None else _filtered(server, tools)
        return memo[server.name]

    def fetch_uptodate(server: ServerConfig) -> Callable[[], bool]:
        def check() -> bool:
            target = layout.server_tools(server.name)
            tools = live(server)
            if tools is None:
                return target.exists()
            try:
                return target.read_text(encoding="utf-8") == canonical_json(tools)
            except (OSError, UnicodeDecodeError):  # missing or damaged: fetch again
                return False

        return check

    def fetch(server: ServerConfig) -> None:
        tools = live(server)
        target = layout.server_tools(server.name)
        if tools is None and target.exists():
            return
        write_if_changed(target, canonical_json(tools or []))

    def task_fetch() -> Iterator[dict[str, Any]]:
        """Fetch each server's tool list (filtered) as canonical JSON."""
        yield {"basename": "fetch", "name": None, "doc": "fetch each server's tool schemas"}
        for server in servers:
            yield {
                "basename": "fetch",
                "name": server.name,
                "actions": [(fetch, [server])],
                "targets": [layout.server_tools(server.name)],
                "uptodate": [fetch_uptodate(server)],
                "clean": True,
                "verbosity": 0,
            }

    def names() -> None:
        namespaces = assign_names([s.name for s in servers], what="server")
        warnings = list(namespaces.warnings)
        whole: dict[str, Any] = {}
        type_bases: set[str] = set()
        for server in servers:
            tools = _read_json(layout.server_tools(server.name))
            functions = assign_names(
                [tool["name"] for tool in tools], what=f"tool of {server.name!r}"
            )
            warnings.extend(functions.warnings)
            namespace = namespaces.names[server.name]
            entry: dict[str, Any] = {"namespace": namespace, "tools": {}}
            for original, function in sorted(functions.names.items()):
                base = to_pascal_case(namespace) + function[0].upper() + function[1:]
                candidate, counter = base, 2
                while candidate in type_bases:
                    candidate, counter = f"{base}{counter}", counter + 1
                if candidate != base:
                    warnings.append(
                        f"type name {base!r} taken; {server.name}__{original} uses {candidate!r}"
                    )
                type_bases.add(candidate)
                entry["tools"][original] = {"function": function, "type": candidate}
            write_if_changed(layout.server_names(server.name), canonical_json(entry))
            whole[server.name] = entry
        for warning in warnings:
            log.warning("naming: %s", warning)
        write_if_changed(layout.names, canonical_json({"servers": whole, "warnings": warnings}))

    def task_names() -> dict[str, Any]:
        """Normalize server and tool names to TypeScript identifiers (no collisions)."""
        return {
            "actions": [names],
            "file_dep": [layout.server_tools(s.name) for s in servers],
            "targets": [layout.names, *(layout.server_names(s.name) for s in servers)],
            "uptodate": [
                config_changed(
                    {"servers": [s.name for s in servers], "generator": generator_fingerprint()}
                )
            ],
            "clean": True,
            "verbosity": 0,
        }

    def types(server: ServerConfig) -> None:
        tools = _read_json(layout.server_tools(server.name))
        naming = _read_json(layout.server_names(server.name))
        fragments = [_fragment(server.name, naming, tool) for tool in tools]
        write_if_changed(
            layout.server_fragments(server.name),
            canonical_json([fragment.to_dict() for fragment in fragments]),
        )
        write_if_changed(
            layout.server_module(server.name),
            render_module(
                fragments, header=f"// Generated by toolscript for server {server.name!r}."
            ),
        )

    def task_types() -> Iterator[dict[str, Any]]:
        """Generate TypeScript types and client methods, per server."""
        yield {"basename": "types", "name": None, "doc": "generate TypeScript per server"}
        for server in servers:
            yield {
                "basename": "types",
                "name": server.name,
                "actions": [(types, [server])],
                "file_dep": [
                    layout.server_tools(server.name),
                    layout.server_names(server.name),
                    runtime,
                ],
                "targets": [
                    layout.server_fragments(server.name),
                    layout.server_module(server.name),
                ],
                "uptodate": [config_changed({"generator": generator_fingerprint()})],
                "clean": True,
                "verbosity": 0,
            }

    def module() -> None:
        fragments: list[ToolFragment] = []
        for server in servers:
            fragments.extend(
                ToolFragment.from_dict(item)
                for item in _read_json(layout.server_fragments(server.name))
            )
        write_if_changed(layout.module, render_module(fragments))

    def task_module() -> dict[str, Any]:
        """Merge every server's fragments into tools.ts."""
        return {
            "actions": [module],
            "file_dep": [layout.server_fragments(s.name) for s in servers] + [runtime],
            "targets": [layout.module],
            "uptodate": [
                config_changed(
                    {"servers": [s.name for s in servers], "generator": generator_fingerprint()}
                )
            ],
            "clean": True,
            "verbosity": 0,
        }

    def catalogue() -> None:
        _write_catalogue(layout, servers)

    def task_catalogue() -> dict[str, Any]:
        """Build catalogue.db: servers and tools with content hashes, names and schemas."""
        return {
            "actions": [catalogue],
            "file_dep": [layout.server_tools(s.name) for s in servers]
            + [layout.server_names(s.name) for s in servers],
            "targets": [layout.catalogue],
            "uptodate": [config_changed({"servers": [s.summary() for s in servers]})],
            "clean": True,
            "verbosity": 0,
        }

    def index() -> None:
        if indexing is None and not semantic_installed():  # keyword search needs no index
            EmbeddingStore(layout.embeddings)  # the (empty) target, so the task is up to date
            log.warning("index: skipped, %s", NEEDS_EXTRA)
            return
        chosen = indexing or SearchIndexing(Embedder(model), EmbeddingStore(layout.embeddings))
        documents = load_documents(layout, servers)
        embedded = embed_missing(documents, chosen.embedder, chosen.store, _progress_reporter())
        log.info(
            "index: %d tools, %d embedded with %s",
            len(documents),
            embedded,
            chosen.embedder.model_id,
        )

    def task_index() -> dict[str, Any]:
        """Embed new or changed tools for semantic search (cached by content hash and model)."""
        return {
            "actions": [index],
            "file_dep": [layout.server_tools(s.name) for s in servers],
            "targets": [layout.embeddings],
            "uptodate": [
                config_changed(
                    {
                        "model": (indexing.embedder.requested if indexing else model) or "default",
                        # Installing the extra later makes the index due.
                        "semantic": indexing is not None or semantic_installed(),
                    }
                )
            ],
            "clean": True,
            "verbosity": 1,  # its warnings (a model that fell back, no extra) reach the terminal
        }

    return {
        "task_fetch": task_fetch,
        "task_index": task_index,
        "task_names": task_names,
        "task_types": task_types,
        "task_module": task_module,
        "task_catalogue": task_catalogue,
        "DOIT_CONFIG": {
            "backend": "sqlite3",
            "dep_file": str(layout.dep_file),
            "default_tasks": TASK_ORDER,
            "verbosity": 0,
        },
    }


def _fragment(server: str, naming: dict[str, Any], tool: dict[str, Any]) -> ToolFragment:
    names = naming["tools"][tool["name"]]
    try:
        return render_tool(server, naming["namespace"], names["function"], names["type"], tool)
    except Exception as exc:  # one bad tool never breaks the others
        log.warning("types: %s__%s: %s; typed as unknown", server, tool["name"], exc)
        return render_tool(
            server,
            naming["namespace"],
            names["function"],
            names["type"],
            {"name": tool["name"], "description": f"(schema could not be converted: {exc})"},
        )


def _write_catalogue(layout: CacheLayout, servers: list[ServerConfig]) -> None:
    import sqlite_utils

    database = sqlite_utils.Database(layout.catalogue)
    server_rows, tool_rows = [], []
    for server in servers:
        tools = _read_json(layout.server_tools(server.name))
        naming = _read_json(layout.server_names(server.name))
        server_rows.append(
            {
                "name": server.name,
                "namespace": naming["namespace"],
                "transport": server.transport,
                "description": server.description,
                "tool_count": len(tools),
                "content_hash": content_hash(tools),
            }
        )
        for tool in tools:
            names = naming["tools"][tool["name"]]
            tool_rows.append(
                {
                    "id": f"{server.name}__{tool['name']}",
                    "server": server.name,
                    "name": tool["name"],
                    "function": names["function"],
                    "type_name": names["type"],
                    "title": tool.get("title"),
                    "description": tool.get("description", ""),
                    "input_schema": json.dumps(tool.get("inputSchema")),
                    "output_schema": json.dumps(tool.get("outputSchema")),
                    "annotations": json.dumps(tool.get("annotations")),
                    "content_hash": content_hash(tool),
                }
            )
    with database.conn:
        servers_table = database.table("servers")
        tools_table = database.table("tools")
        servers_table.delete_where()
        tools_table.delete_where()
        if server_rows:
            servers_table.insert_all(server_rows, pk="name")
        if tool_rows:
            tools_table.insert_all(tool_rows, pk="id", foreign_keys=[("server", "servers", "name")])
    if not tools_table.exists():
        tools_table.create(
            {
                "id": str,
                "server": str,
                "name": str,
                "function": str,
                "type_name": str,
                "title": str,
                "description": str,
                "input_schema": str,
                "output_schema": str,
                "annotations": str,
                "content_hash": str,
            },
            pk="id",
        )
    if not servers_table.exists():
        servers_table.create(
            {
                "name": str,
                "namespace": str,
                "transport": str,
                "description": str,
                "tool_count": int,
                "content_hash": str,
            },
            pk="name",
        )


def _progress_reporter() -> Callable[[int, int], None] | None:
    """A progress bar on a terminal for indexing that takes more than a moment.

    doit captures a task's sys.stdout and sys.stderr, so the bar goes to the process's own
    stderr (``sys.__stderr__``), the terminal of `doit` or of `toolscript gateway start`.
    """
    import sys

    terminal = sys.__stderr__
    if terminal is None or not terminal.isatty():
        return lambda done, total: log.info("index: embedded %d/%d tools", done, total)
    from rich.console import Console
    from rich.progress import Progress

    progress = Progress(console=Console(file=terminal), transient=True)
    task_id = progress.add_task("embedding tools", total=None)

    def report(done: int, total: int) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task_id, completed=done, total=total)
        if done >= total:
            progress.stop()

    return report


def run_pipeline(
    config: Config,
    layout: CacheLayout,
    source: ToolSource,
    *,
    tasks: list[str] | None = None,
    command: str = "run",
    indexing: SearchIndexing | None = None,
) -> PipelineResult:
    """Run doit in-process (loader API); returns which tasks executed and what failed."""
    from doit.cmd_base import ModuleTaskLoader
    from doit.doit_cmd import DoitMain
    from doit.reporter import ConsoleReporter

    result = PipelineResult(code=0)

    class Recorder(ConsoleReporter):  # type: ignore[misc]
        def execute_task(self, task: Any) -> None:
            if task.actions:
                result.executed.append(task.name)

        def add_failure(self, task: Any, fail: Any) -> None:
            result.failures.append(f"{task.name}: {fail.get_msg()}")

        def runtime_error(self, msg: str) -> None:
            result.failures.append(msg)

        def skip_uptodate(self, task: Any) -> None:
            pass

        def skip_ignore(self, task: Any) -> None:
            pass

        def complete_run(self) -> None:
            pass

    if tasks is None:
        tasks = TASK_ORDER if indexing is not None else ARTIFACT_TASKS
    namespace = build_tasks(config, layout, source, indexing)
    namespace["DOIT_CONFIG"]["reporter"] = Recorder
    for database in (layout.dep_file, layout.catalogue):
        discard_if_damaged(database)
    with _RUN_LOCK:
        main = DoitMain(ModuleTaskLoader(namespace), config_filenames=())
        main.config["GLOBAL"]["outfile"] = io.StringIO()
        result.code = main.run([command, *tasks])
    for failure in result.failures:
        log.error("pipeline: %s", failure.strip())
    return result
