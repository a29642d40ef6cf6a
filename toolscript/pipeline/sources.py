"""Tool sources for the pipeline: a snapshot of the gateway's sessions, or fresh connections
with the result types the project's gateways learned (so standalone ``doit`` builds what the
gateway builds)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolscript.codegen.shapes import INFERRED_KEY, answer_types, sample_label, to_schema
from toolscript.config import Config, ServerConfig
from toolscript.plumbing.boundedread import read_state_file
from toolscript.plumbing.paths import project_state_dir
from toolscript.store.outputs import visible_controls

__all__ = [
    "RESULT_SHAPES_FILE",
    "ConnectingSource",
    "SnapshotSource",
    "learned_schema",
    "stored_result_types",
]


RESULT_SHAPES_FILE = "result-shapes.json"  # in the project's state dir (gateway/inferred.py)
# Its key for each server's identity when its results were learned (no ``__``: no tool's).
IDENTITIES_KEY = "identities"


def learned_schema(shape: dict[str, Any]) -> dict[str, Any]:
    """The outputSchema a learned result shape gives, marked as inferred ({}: no type); a
    plain-text answer never widens what structured answers taught (``answer_types``)."""
    schema = to_schema(answer_types(shape))
    return schema | {INFERRED_KEY: sample_label(shape["n"])} if schema else {}


def stored_result_types(
    state_dir: Path, identities: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """The result types a project's gateways learned and kept, by ``server__tool``: what the
    gateway adds to its tool lists when it builds; none of a server learned under another
    identity than ``identities`` gives it (the config repointed it since). Unreadable: none
    (the gateway says why)."""
    try:
        found = json.loads(read_state_file(state_dir / RESULT_SHAPES_FILE))
    except (OSError, ValueError, RecursionError):
        return {}
    bound = found.get(IDENTITIES_KEY) if isinstance(found, dict) else None
    bound = bound if isinstance(bound, dict) else {}
    now = identities or {}
    schemas: dict[str, dict[str, Any]] = {}
    for qualified, shape in found.items() if isinstance(found, dict) else ():
        if not isinstance(shape, dict) or shape.get("opaque") or "n" not in shape:
            continue
        server = qualified.partition("__")[0]
        if server in bound and server in now and bound[server] != now[server]:
            continue
        try:
            schema = learned_schema(shape)
        except (KeyError, TypeError, ValueError):  # edited by hand: the gateway trims it
            continue
        if schema:
            schemas[qualified] = schema
    return schemas


Offered = dict[str, list[dict[str, Any]]]  # kind ("prompts", "resourceTemplates") -> items


class SnapshotSource:
    """Tool lists captured from live sessions (None for a server that is not connected),
    the result types the gateway learned (``inferred``: server -> tool -> outputSchema), and
    what else each server offers (``offered``: its prompts and resource templates by kind;
    a server or kind absent: unknown)."""

    starts_servers = False

    def __init__(
        self,
        tools: Mapping[str, list[dict[str, Any]] | None],
        inferred: Mapping[str, dict[str, dict[str, Any]]] | None = None,
        offered: Mapping[str, Offered | None] | None = None,
    ) -> None:
        self._tools = dict(tools)
        self._inferred = dict(inferred or {})
        self._offered = dict(offered or {})

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        return self._tools.get(server)

    def offered(self, server: str) -> Offered | None:
        return self._offered.get(server)

    def inferred(self, server: str) -> dict[str, dict[str, Any]]:
        return self._inferred.get(server, {})


def unreachable_warning(name: str, error: str, server: ServerConfig | None = None) -> str:
    """What standalone ``doit`` says of a server it could not reach: why, and what its
    types are meanwhile; of one not started for an unset variable, which to set; of a tool
    file, to fix the file."""
    kept = "its types are those of the last build that reached it (none: no tools)"
    unset = server.unset_error(rerun="doit") if server is not None else None
    if unset is not None:
        return f"toolscript: warning: {name}: {unset}; meanwhile {kept}\n"
    fix = "fix its entry"
    if server is not None and server.transport == "local":
        fix = f"fix the tool file {server.command}"
    return (
        f"toolscript: warning: {name}: not reachable ({visible_controls(error[:500])}); "
        f"{kept}; {fix} and run doit again\n"
    )


def _say(text: str) -> None:
    """A warning on the real stderr: doit captures a task's own output and shows it only
    when the task fails, and an unreachable server fails no task."""
    stream = sys.__stderr__ or sys.stderr
    stream.write(text)
    stream.flush()


class ConnectingSource:
    """Connects to every server once, on first use, for standalone ``doit``; the result types
    are those the project's gateways learned (none when the config turns learning off)."""

    starts_servers = True

    def __init__(self, config: Config, *, connect_timeout: float = 30.0) -> None:
        self._config = config
        self._connect_timeout = connect_timeout
        self._listed: dict[str, tuple[list[dict[str, Any]] | None, Offered | None]] | None = None
        self._learned: dict[str, dict[str, Any]] | None = None

    def _lists(self, server: str) -> tuple[list[dict[str, Any]] | None, Offered | None]:
        if self._listed is None:
            import anyio

            from toolscript.upstream.connect import fetch_lists_once

            errors: dict[str, str] = {}
            self._listed = anyio.run(
                lambda: fetch_lists_once(
                    list(self._config.enabled_servers),
                    connect_timeout=self._connect_timeout,
                    errors=errors,
                )
            )
            entries = {entry.name: entry for entry in self._config.servers}
            for name, (tools, _) in self._listed.items():
                if tools is None:
                    _say(unreachable_warning(name, errors.get(name, ""), entries.get(name)))
        return self._listed.get(server, (None, None))

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        return self._lists(server)[0]

    def offered(self, server: str) -> Offered | None:
        return self._lists(server)[1]

    def inferred(self, server: str) -> dict[str, dict[str, Any]]:
        if self._learned is None:
            self._learned = (
                stored_result_types(
                    project_state_dir(self._config.project_dir),
                    {entry.name: entry.identity for entry in self._config.servers},
                )
                if self._config.infer_results
                else {}
            )
        prefix = f"{server}__"
        return {
            qualified[len(prefix) :]: schema
            for qualified, schema in self._learned.items()
            if qualified.startswith(prefix)
        }
