"""Result types learned from the results the gateway proxies, for tools with no outputSchema.

Only shapes are kept (``codegen/shapes.py``), never values, in ``result-shapes.json`` in the
project's state directory (0600). What is learned is capped per tool (``shapes.MAX_NODES``,
with depth, fields and name lengths) and per server (``MAX_SERVER_NODES``): a server that
answers with ever new keys cannot grow the module or the file without bound; a tool past
its server's cap keeps ``ToolResult``, and a stored file past the caps is trimmed on load. A result whose shape changes the type (or the step of its
sample count) asks for a types build; the generated module then gives the tool that type,
marked as inferred, in place of ``ToolResult``. Results of several text blocks or of
non-text content keep ``ToolResult``.

Each server's identity (``ServerConfig.identity``) is kept beside what its results taught
(the file's ``identities``): what was learned under another identity (the config repointed
the server while no gateway ran) is dropped when the file is loaded, as a live reload drops
it. A file of before the identities keeps what it holds and binds it at its next save.

A plain-text answer (many servers answer an error as text, without ``isError``) is kept
but never widens a type learned from structured or JSON answers: a type never makes a
correct script fail (``answer_types``). A damaged or wrongly structured file is set aside
(``cachefiles.set_aside``) with one warning naming it, and types are learned again.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolscript.codegen.shapes import (
    MAX_NODES,
    OPEN,
    bounded,
    merge,
    shape_of,
    size,
)
from toolscript.pipeline.sources import IDENTITIES_KEY, RESULT_SHAPES_FILE, learned_schema
from toolscript.plumbing.boundedread import read_state_file
from toolscript.plumbing.cachefiles import set_aside
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.redact import may_hold_secret

__all__ = ["ResultShapes"]

log = logging.getLogger("toolscript.inferred")

FILE_NAME = RESULT_SHAPES_FILE  # standalone doit reads it too (pipeline/sources.py)
_RECORDED = frozenset({"structured", "json", "text", "empty"})  # result shapes with a type
OPAQUE = {"opaque": True}
MAX_SERVER_NODES = 4 * MAX_NODES  # shapes learned for all of one server's tools together
MAX_NAME_LENGTH = 256  # characters of server__tool: a longer name teaches nothing


class ResultShapes:
    """The shapes of each tool's results, by ``server__tool``."""

    def __init__(
        self,
        state_dir: Path | None,
        enabled: bool = True,
        identities: Mapping[str, str] | None = None,
    ) -> None:
        self.path = state_dir / FILE_NAME if state_dir is not None else None
        self.enabled = enabled
        self._sizes: dict[str, int] = {}  # shapes each tool holds, for the server's cap
        self._server_sizes: dict[str, int] = {}
        self.dirty = False
        # each server's identity, as what its results taught is bound to it (saved with it)
        self.identities: dict[str, str] = {}
        self.shapes: dict[str, dict[str, Any]] = self._load(identities or {}) if enabled else {}
        self.identities.update(identities or {})
        self._schemas: dict[str, dict[str, Any]] = {}
        self._taken = self._written = 0  # the texts ``unsaved`` numbered, and the last written
        self._writing = threading.Lock()

    def _load(self, identities: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return {}
        try:
            found = json.loads(read_state_file(self.path))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, RecursionError) as exc:
            return self._set_aside(f"unreadable: {exc}")
        bound = found.pop(IDENTITIES_KEY, {}) if isinstance(found, dict) else {}
        problem = _wrong_structure(found)
        if problem is not None:
            return self._set_aside(problem)
        stored = {
            str(server): identity
            for server, identity in (bound.items() if isinstance(bound, dict) else ())
            if isinstance(identity, str)
        }
        self.identities = stored
        # A file from before the caps, or edited, is brought within them (and saved so).
        kept: dict[str, dict[str, Any]] = {}
        for qualified, shape in sorted(found.items()):
            if len(qualified) > MAX_NAME_LENGTH:
                continue
            server = qualified.partition("__")[0]
            if server in stored and server in identities and stored[server] != identities[server]:
                continue  # learned from another program the entry named then
            if shape.get("opaque"):
                kept[qualified] = OPAQUE
                continue
            room = self._room(qualified)
            if room > 0:
                kept[qualified] = bounded(shape, room)
                self._count(qualified, kept[qualified])
        self.dirty = kept != found
        return kept

    def _set_aside(self, reason: str) -> dict[str, dict[str, Any]]:
        """A file that is no store of shapes: kept beside itself for a look, learned again."""
        assert self.path is not None
        try:
            set_aside(self.path, f"{reason}; result types are learned again")
        except OSError as exc:
            log.warning("%s is damaged (%s); result types are learned again", self.path, exc)
        return {}

    def _room(self, qualified: str) -> int:
        """How many shapes ``qualified`` may hold: its own cap, and what its server's cap
        leaves beside the server's other tools."""
        server = qualified.partition("__")[0]
        others = self._server_sizes.get(server, 0) - self._sizes.get(qualified, 0)
        return min(MAX_NODES, MAX_SERVER_NODES - others)

    def _count(self, qualified: str, shape: dict[str, Any] | None) -> None:
        server = qualified.partition("__")[0]
        now = size(shape) if shape is not None else 0
        before = self._sizes.pop(qualified, 0)
        if now:
            self._sizes[qualified] = now
        self._server_sizes[server] = self._server_sizes.get(server, 0) - before + now

    def observe(
        self,
        qualified: str,
        tool: dict[str, Any],
        kind: str,
        value: Any,
        secrets: Iterable[str] = (),
    ) -> bool:
        """Note one successful result; True when the tool's inferred type changed. An object
        keyed by one of ``secrets`` (or a run of one) is learned as a map: a field named by
        it was in the module, get-types and this file."""
        if not self.enabled or tool.get("outputSchema") is not None:
            return False
        if len(qualified) > MAX_NAME_LENGTH:
            return False
        old = self.shapes.get(qualified)
        if old is not None and old.get("opaque"):
            return False
        self.dirty = True
        if kind not in _RECORDED:
            self.shapes[qualified] = OPAQUE
            self._count(qualified, None)
            self._schemas.pop(qualified, None)
            return old is not None
        room = self._room(qualified)
        known = tuple(sorted(set(secrets)))
        hidden = (lambda key: may_hold_secret(key, known)) if known else None
        new = bounded(merge(old, shape_of(value, max(room, 1), hidden=hidden)), max(room, 1))
        if room <= 0:  # the server's cap is reached: this tool keeps ToolResult
            new = {"n": new["n"], "types": {OPEN: {}}}
        self.shapes[qualified] = new
        self._count(qualified, new)
        before = self._schemas.get(qualified)
        if before is None and old is not None:
            before = self._schema(old)
        after = self._schema(new)
        self._schemas[qualified] = after
        return before != after

    @staticmethod
    def _schema(shape: dict[str, Any]) -> dict[str, Any]:
        return learned_schema(shape)  # as standalone doit reads the saved shapes

    def schema_for(self, qualified: str) -> dict[str, Any] | None:
        """The inferred outputSchema of a tool (None: nothing learned, or no type to give)."""
        if not self.enabled:
            return None
        found = self._schemas.get(qualified)
        if found is None:
            shape = self.shapes.get(qualified)
            if shape is None or shape.get("opaque"):
                return None
            found = self._schemas[qualified] = self._schema(shape)
        return found or None

    def learned(self, server: str, tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The inferred outputSchemas of a server's tools that declare none, by tool name
        (the fetch task adds them to the tool list after dropping a server's own markers)."""
        if not self.enabled or not self.shapes:
            return {}
        found: dict[str, dict[str, Any]] = {}
        for tool in tools:
            if tool.get("outputSchema") is None:
                schema = self.schema_for(f"{server}__{tool['name']}")
                if schema is not None:
                    found[tool["name"]] = schema
        return found

    def with_inferred(self, server: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A server's tools with inferred outputSchemas where they declare none."""
        learned = self.learned(server, tools)
        return [
            tool | {"outputSchema": learned[tool["name"]]} if tool["name"] in learned else tool
            for tool in tools
        ]

    def forget(self, server: str) -> bool:
        """Drop what ``server``'s tools taught (the config removed it, or points its entry at
        another program: another server's results must not type its tools); True when there
        was something."""
        prefix = f"{server}__"
        dropped = [qualified for qualified in self.shapes if qualified.startswith(prefix)]
        for qualified in dropped:
            del self.shapes[qualified]
            self._count(qualified, None)
            self._schemas.pop(qualified, None)
        self._server_sizes.pop(server, None)
        self.dirty = self.dirty or bool(dropped)
        return bool(dropped)

    def save(self) -> None:
        self.write(self.unsaved())

    def unsaved(self) -> tuple[int, str] | None:
        """The file's text as what was learned is now, numbered, when it changed since it
        was last taken (None: nothing to write). Taken on the event loop, as a build's
        snapshot is (what a build types, the file holds); written in a thread (``write``)."""
        if self.path is None or not self.dirty:
            return None
        self.dirty = False
        servers = {qualified.partition("__")[0] for qualified in self.shapes}
        bound = {s: self.identities[s] for s in sorted(servers) if s in self.identities}
        stored = {**self.shapes, IDENTITIES_KEY: bound} if bound else self.shapes
        self._taken += 1
        return self._taken, json.dumps(stored, separators=(",", ":"))

    def write(self, unsaved: tuple[int, str] | None) -> None:
        """Write what ``unsaved`` gave, unless a text taken after it was written already
        (two threads writing: the older never lands last); a failure leaves it unsaved."""
        if self.path is None or unsaved is None:
            return
        number, text = unsaved
        with self._writing:
            if number < self._written:
                return
            try:
                write_private(self.path, text)
            except OSError:
                self.dirty = True
                raise
            self._written = number


def _wrong_structure(found: Any) -> str | None:
    """What makes ``found`` no store of shapes (``{"server__tool": shape}``); None when it is
    one. Shapes that are only damaged inside are trimmed on load instead."""
    if not isinstance(found, dict):
        return f"a JSON {type(found).__name__}, not an object of shapes"
    for qualified, shape in found.items():
        if not isinstance(shape, dict):
            return f"the entry {qualified[:MAX_NAME_LENGTH]!r} is a {type(shape).__name__}, not a shape"
    return None
