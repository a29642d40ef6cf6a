"""``fetch:<server>``: each server's tool list, filtered and sorted by name (``listed_json``:
each tool's keys in the server's order), and beside it what else it offers that scripts
see typed: its prompts and resource templates (``offered/<server>.json``, the fields types
read; a kind absent: not known yet). The module task depends on that file by checksum, so
a prompt that changed rebuilds the module and leaves the tools' names and types as built.

What a server sends is data: any ``x-toolscript-*`` key of its own is dropped
(``without_own_keys``), and only then do tools without an outputSchema get the result type
the gateway learned, the one source of the inferred marker.

Up to date when the live list equals the file byte for byte, so a server whose tools
did not change leaves every later task up to date. An unreachable server keeps its file,
when this user's build wrote it (``target_digests``, keyed by the user's own key): a cloned
repository's ``servers/<s>.json`` for a server not reached yet (one waiting for a sign-in)
was a tool list the server never sent, past every bound ``upstream/limits.py`` puts on one.
Where asking means starting the server (standalone ``doit``: ``ToolSource.starts_servers``),
a server is not asked again while what could change its list did not: its settings (command,
args, env, URL, filters, a local tool's file), the result types learned for it, and a file
written from a successful answer; ``doit -a fetch`` asks every server anyway.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from doit.tools import config_changed

from toolscript.codegen.offered import PROMPTS, TEMPLATES, offered_entries
from toolscript.codegen.shapes import INFERRED_KEY, without_own_keys
from toolscript.config import ServerConfig
from toolscript.pipeline.artifacts import listed_json, read_artifact, write_if_changed
from toolscript.pipeline.tasks.settings import (
    SubtasksUpToDate,
    TaskSettings,
    digest_key,
    target_digests,
    targets_as_built,
)
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.paths import user_cache_dir

__all__ = ["FetchTasks", "ToolSource"]

log = logging.getLogger("toolscript.pipeline")

KINDS = (PROMPTS, TEMPLATES)
VOUCHED = "toolscript.vouched"  # the task's ``meta`` key `vouched` notes its verdict under


class ToolSource(Protocol):
    """Where fetching gets tool lists: the gateway's live sessions, or fresh connections."""

    # True when asking for tools starts the servers: a server whose settings did not change
    # is then not asked again (the fetch task's file stands for its answer).
    starts_servers: bool

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        """The server's tools, or None when it is unavailable (keep what is on disk)."""

    def inferred(self, server: str) -> dict[str, dict[str, Any]]:
        """The outputSchemas toolscript learned for the server's tools, by tool name."""

    def offered(self, server: str) -> dict[str, list[dict[str, Any]]] | None:
        """Its prompts and resource templates by kind, or None when unknown (keep the file)."""


class FetchTasks:
    def __init__(self, settings: TaskSettings, source: ToolSource) -> None:
        self.settings, self.source = settings, source
        self._live: dict[str, list[dict[str, Any]] | None] = {}

    def tasks(self) -> Iterator[dict[str, Any]]:
        """Fetch each server's tool list (filtered)."""
        yield {
            "basename": "fetch",
            "name": None,
            "uptodate": [SubtasksUpToDate()],
            "doc": "fetch each server's tool schemas",
        }
        for server in self.settings.servers:
            yield {
                "basename": "fetch",
                "name": server.name,
                "actions": [(self.fetch, [server])],
                "targets": [
                    self.settings.layout.server_tools(server.name),
                    self.settings.layout.server_offered(server.name),
                ],
                "uptodate": [
                    (self.vouched, [server]),
                    config_changed(settings_digest(server)),
                    (self.up_to_date, [server]),
                ],
                "clean": True,
                "verbosity": 0,
            }

    def live(self, server: ServerConfig) -> list[dict[str, Any]] | None:
        """The server's tools that its config allows, asked once per run."""
        if server.name not in self._live:
            tools = self.source.tools(server.name)
            self._live[server.name] = (
                None
                if tools is None
                else sorted(
                    (
                        self._with_learned(server.name, without_own_keys(tool))
                        for tool in tools
                        if server.allows_tool(tool["name"])
                    ),
                    key=lambda tool: tool["name"],
                )
            )
        return self._live[server.name]

    def live_offered(self, server: ServerConfig) -> str | None:
        """What the offered file should hold now (None: unknown, keep the file)."""
        offered = self.source.offered(server.name)
        if offered is None:
            return None
        return listed_json(
            {kind: offered_entries(kind, offered[kind]) for kind in KINDS if kind in offered}
        )

    def _with_learned(self, server: str, tool: dict[str, Any]) -> dict[str, Any]:
        if tool.get("outputSchema") is not None:
            return tool
        learned = self.source.inferred(server).get(tool["name"])
        return tool if learned is None else tool | {"outputSchema": learned}

    def vouched(self, task: Any, values: dict[str, Any], server: ServerConfig) -> bool:
        """Whether the server's files are as this user's build wrote them, noted in the
        task's ``meta`` for `fetch` (the first of its uptodate checks, run before it). Not
        in this object: `doit -n N` runs the action in a worker forked before the checks,
        which gets the task's data, never this object's state (an unreachable server's own
        kept tools were judged planted there, and emptied)."""
        as_built = targets_as_built(task, values)
        task.meta = {**(task.meta or {}), VOUCHED: as_built}
        return as_built

    def up_to_date(self, task: Any, values: dict[str, Any], server: ServerConfig) -> bool:
        target = self.settings.layout.server_tools(server.name)
        offered = self.settings.layout.server_offered(server.name)
        if self.source.starts_servers:
            return (
                values.get("reached") is True
                and offered.exists()
                and self._relearned(server, target)
            )
        tools = self.live(server)
        if values.get("reached") is False and tools is not None:
            # Built while the server was (re)starting: once it answers, record that it was
            # reached, or a standalone `doit` sees this task out of date and starts it.
            return False
        live_offered = self.live_offered(server)
        if not (offered.exists() if live_offered is None else _holds(offered, live_offered)):
            return False
        return target.exists() if tools is None else _holds(target, listed_json(tools))

    def _relearned(self, server: ServerConfig, target: Path) -> bool:
        """Whether the file holds its tools with the result types learned now (without
        asking the server: its tools are those of the file)."""
        try:
            text = read_artifact(target)
        except (OSError, ValueError):  # missing or damaged: fetch again
            return False
        kept = _tools_of(text)
        if kept is None:  # damaged: fetch again
            return False
        as_sent = [_without_learned(tool) for tool in kept]
        return text == listed_json([self._with_learned(server.name, tool) for tool in as_sent])

    def fetch(self, server: ServerConfig, task: Any) -> dict[str, Any]:
        tools = self.live(server)
        target = self.settings.layout.server_tools(server.name)
        offered, live_offered = self.settings.layout.server_offered(server.name), None
        if tools is not None:
            live_offered = self.live_offered(server)
        vouched = (task.meta or {}).get(VOUCHED) is True
        if live_offered is not None or not offered.exists() or not vouched:
            write_if_changed(offered, live_offered or listed_json({}))
        if tools is None and target.exists() and not vouched:
            # Not this user's build's (a cloned repository's): no tools until it answers.
            _warn_unvouched(server.name, target)
            write_if_changed(target, listed_json([]))
            return {"reached": False, **target_digests([target, offered])}
        if tools is None and target.exists():
            # Not reached now (restarting with its new entry): the tools it listed before, as
            # the entry's filters and policy let them through now, or a tool a reload denies
            # stays in the module until the server answers again (never, if it fails).
            try:
                kept = _tools_of(read_artifact(target))
            except (OSError, ValueError):  # unreadable: the next fetch that reaches it writes it
                kept = None
            if kept is not None:
                allowed = [tool for tool in kept if server.allows_tool(str(tool.get("name")))]
                if len(allowed) < len(kept):
                    write_if_changed(target, listed_json(allowed))
            return {"reached": False, **target_digests([target, offered])}
        write_if_changed(target, listed_json(tools or []))
        return {"reached": tools is not None, **target_digests([target, offered])}


def _warn_unvouched(server: str, target: Path) -> None:
    """Say, once (the emptied file is this build's after), that an unreachable server's kept
    tool list is not used: this user's builds did not write it (a cloned repository's
    ``.toolscript/``), and nothing checked what it holds."""
    try:
        kept = _tools_of(read_artifact(target))
    except (OSError, ValueError):
        kept = None
    if not kept:
        return  # no tools to lose
    log.warning(
        "server %r is not reachable, and the tool list kept for it (%s, %d tool%s) was not "
        "written by your own build (a cloned repository's?), so it is not used: %r offers "
        "no tools until it answers. `toolscript gateway status` says why it is away; once it "
        "answers, the gateway (or `doit`) fetches its tools",
        server,
        target,
        len(kept),
        "" if len(kept) == 1 else "s",
        server,
    )


def _tools_of(text: str) -> list[dict[str, Any]] | None:
    """The tools a server's file holds (its ``text``); None when it holds no list of them."""
    try:
        kept = json.loads(text)
    except ValueError:
        return None
    if not isinstance(kept, list) or not all(isinstance(tool, dict) for tool in kept):
        return None
    return kept


def _holds(path: Path, text: str) -> bool:
    try:
        return read_artifact(path) == text
    except (OSError, UnicodeDecodeError):  # missing or damaged: fetch again
        return False


def _without_learned(tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool.get("outputSchema")
    if isinstance(schema, dict) and INFERRED_KEY in schema:
        return {key: value for key, value in tool.items() if key != "outputSchema"}
    return tool


def digest_settings(server: ServerConfig) -> dict[str, Any]:
    """What decides a server's tool list, as ``settings_digest`` hashes it."""
    return {
        "transport": server.transport,
        "command": server.command,
        "args": list(server.args),
        "env": sorted(server.env.items()),
        "cwd": str(server.cwd) if server.cwd else None,
        "url": server.url,
        "headers": sorted(server.headers.items()),
        "include": list(server.include_tools),
        "exclude": list(server.exclude_tools),
        "policy": sorted(server.policy.items()),
        "settings": dict(server.settings),
        "oauth": repr(server.oauth),
    }


def settings_digest(server: ServerConfig) -> str:
    """A digest of what decides a server's tool list: how it is reached (env and header
    values included, hashed, never kept), its filters, and a local tool's file. Keyed by the
    user's own ``digest_key``: ``.doit.db`` keeps it in the project, readable by others
    (0644), and a plain SHA-256 of settings the config names but for the secret let anyone
    holding the file test guesses of an ``env`` or header value offline."""
    settings = digest_settings(server)
    digest = hmac.new(
        digest_key(user_cache_dir()),
        json.dumps(settings, sort_keys=True, default=str).encode(),
        hashlib.sha256,
    )
    if server.transport == "local" and server.command:
        try:
            # A regular file's bytes only: a FIFO put in localTools.dir stalled every build
            # after it (a tool a server added was never served), /dev/zero was read for ever.
            digest.update(read_regular_file(Path(server.command), 64 * 1024 * 1024))
        except OSError:
            digest.update(b"\0missing")
    return digest.hexdigest()
