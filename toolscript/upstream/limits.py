"""Bounds on the size of what a server lists, so one server's strings never cost the others.

Pure functions over the JSON of a listing (``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list``) and of ``initialize`` (its
``instructions``), applied where it arrives, before anything keeps it: every string of a
listing is untrusted data, and what is kept goes into the generated module that every
script's type check reads. A text past its bound is cut with a visible marker; a schema
too large or too deep to type is served open (any arguments, no result type) with a note
in the tool's description; an entry whose identity (a tool's or prompt's name, a
resource's URI) is past its bound is skipped, since a cut name calls nothing (no real one
is: MCP asks for names of at most 128 characters). Nothing here drops a whole server.
Each bound is many times the largest seen in real servers (the pinned servers of
``tests/servers`` and the public tool corpus: 3,866 characters of a tool's description,
7,293 of an input schema, 10 levels, 169 values of an enum, 43 of a name).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolscript.upstream.tolerant import ANY_ARGUMENTS

__all__ = [
    "BRIEF_LIMIT",
    "ENTRY_LIMIT",
    "ENUM_LIMIT",
    "FORM_FIELDS",
    "FORM_LIMIT",
    "LISTING_LIMIT",
    "LIST_CHANGED",
    "NAME_LIMIT",
    "NOTICE_RATE",
    "QUESTION_LIMIT",
    "REQUEST_RATE",
    "SCHEMA_LIMIT",
    "TEXT_LIMIT",
    "Cuts",
    "NoticeFlood",
    "RateWindow",
    "RequestFlood",
    "bound_listing",
    "bound_schema",
    "cut_text",
    "form_refused",
    "listing_or_error",
]

TEXT_LIMIT = 32_768  # characters of a description, title or the server's instructions
# characters of a server's question (elicitation) shown in a prompt, on a terminal or in an
# MCP client's dialog: a screen or two, what a person reads before answering
QUESTION_LIMIT = 4_096
# A question's form (its requested schema, flat fields a person fills in one by one): at
# most this many fields, and characters as JSON; a larger one is refused to the server
FORM_FIELDS = 100
FORM_LIMIT = 65_536
BRIEF_LIMIT = 1_024  # characters of each text of an entry past its listing's LISTING_LIMIT
NAME_LIMIT = 256  # characters of a tool, prompt, argument, resource or template name
URI_LIMIT = 8_192  # characters of a resource's URI or a template's URI template
VALUE_LIMIT = 4_096  # characters (as JSON) of a schema's default or of one of its examples
ENUM_LIMIT = 2_000  # values of one enum typed as a union
SCHEMA_LIMIT = 262_144  # characters (as JSON) of one tool's input or output schema
SCHEMA_DEPTH = 64  # levels of nesting in one schema
SCHEMA_NODES = 20_000  # objects and arrays in one schema
FIELD_LIMIT = 65_536  # characters (as JSON) of any other field of an entry (icons, _meta)
# Characters (as JSON) of one listing, its pages together: past it each entry is brief
# (short texts, open schemas), past twice it the rest are skipped.
LISTING_LIMIT = 16 * 1024 * 1024
# Entries of one listing typed into the module (tools, prompts, templates; its pages
# together): past it the rest are skipped. Small entries pass every other bound, and
# 100,000 tools of 100 characters each made a 20 MB module that every script loads, a type
# checker of gigabytes and an hour of embedding (20,000: a 4 MB module, 0.95 GB checker,
# exec 1.1-1.5 s). The bench's largest catalogue is 1,600 tools of 113 servers.
ENTRY_LIMIT = 2_000
_COUNTED = frozenset({"tools/list", "prompts/list", "resources/templates/list"})
# Notifications a server may send in a second (its stdio as it is read; over HTTP or SSE as
# the gateway's session reads them): past it, the rest of that second are dropped before
# the SDK handles them, said once (``NoticeFlood``). A
# flood of 2,000 a second (list_changed, progress) took 30% of a core of the gateway to
# check and handle; a real server sends a few (progress during a call, one per change).
NOTICE_RATE = 200
# The notifications that say a listing changed: past the rate, one of each kind a second is
# still let through (dropped, a change said amid a flood of progress was never listed).
LIST_CHANGED = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    }
)


class NoticeFlood(Exception):  # what a read stream passes on, not an error
    """In a server's read stream once, when its notifications first go past
    ``NOTICE_RATE`` a second (those past it are dropped)."""


# Requests a server may send the gateway in a second (read as notifications are): pings,
# questions for the user, roots, sampling, each answered (or refused) by the gateway. Past
# it, the rest of that second are dropped unanswered, said once (``RequestFlood``). 2,800
# pings a second took 30% of a core, questions refused one by one 90%; a real server asks
# one question at a time and pings every few seconds.
REQUEST_RATE = 50


class RequestFlood(Exception):  # what a read stream passes on, not an error
    """In a server's read stream once, when its requests first go past ``REQUEST_RATE`` a
    second (those past it are dropped, never answered)."""


class RateWindow:
    """``rate`` messages a second of a server's (``NOTICE_RATE`` notifications, or
    ``REQUEST_RATE`` requests), in a window that starts with the first of it; past it,
    still the first of each kind of ``LIST_CHANGED`` in the window: the gateway
    lists again once for any number of them, and a change said amid a flood of progress
    would otherwise never be listed."""

    def __init__(self, rate: int = NOTICE_RATE) -> None:
        self.rate = rate
        self.window = float("-inf")
        self.used = 0
        self.changes_past: set[str] = set()  # kinds of LIST_CHANGED let past the rate
        self.dropped = 0  # in all

    def admit(self, now: float, method: Any = None) -> bool:
        if now - self.window >= 1.0:
            self.window, self.used = now, 0
            self.changes_past.clear()
        if self.used < self.rate:
            self.used += 1
            return True
        if isinstance(method, str) and method in LIST_CHANGED and method not in self.changes_past:
            self.changes_past.add(method)
            return True
        self.dropped += 1
        return False


_TEXT_KEYS = ("description", "title", "$comment")
# Keywords whose value maps names to schemas (the map itself is no schema).
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# Keywords whose value is data, not schemas: never walked (their size counts in the whole).
_DATA_KEYS = frozenset({"enum", "const", "default", "examples", "required"})
_ENTRY_TEXT = ("description", "title")
# Fields of an entry bounded on their own; any other (arguments, annotations, icons, _meta)
# is held to FIELD_LIMIT as a whole, after its texts are cut.
_BOUNDED_ABOVE = frozenset(
    {"name", "uri", "uriTemplate", "title", "description", "inputSchema", "outputSchema"}
)
# listing method -> (the list in its result, what one entry is called, its identifying field)
_LISTINGS = {
    "tools/list": ("tools", "tool", "name"),
    "prompts/list": ("prompts", "prompt", "name"),
    "resources/list": ("resources", "resource", "uri"),
    "resources/templates/list": ("resourceTemplates", "resource template", "uriTemplate"),
}


def form_refused(schema: Any) -> str | None:
    """Why a server's question's form (``requestedSchema``) is not put to a person: over
    ``FORM_FIELDS`` fields or ``FORM_LIMIT`` characters (200,000 fields, 29 MB, were a
    prompt the gateway held and masked for seconds, and asked one field at a time); None
    for a form a person can fill in."""
    fields = schema.get("properties") if isinstance(schema, dict) else None
    count = len(fields) if isinstance(fields, dict) else 0
    if count > FORM_FIELDS:
        return f"its form has {count:,} fields, over the {FORM_FIELDS} a person is asked"
    size = len(json.dumps(schema, ensure_ascii=False, default=str))
    if size > FORM_LIMIT:
        return f"its form is {size:,} characters as JSON, over the {FORM_LIMIT:,} a person is asked"
    return None


def cut_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text``, or its first ``limit`` characters and a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [cut: {len(text) - limit:,} more characters]"


@dataclass
class Cuts:
    """What bounding a listing cut, skipped or left open, by kind (``"tool descriptions"``):
    how many, the largest, and the bound; one warning line per kind."""

    found: dict[str, list[int]] = field(default_factory=dict)  # kind -> [count, largest]
    actions: dict[str, tuple[str, str]] = field(default_factory=dict)  # kind -> (done, unit)
    spent: int = 0  # characters of the listing's entries kept, its earlier pages' included
    listed: int = 0  # entries of the listing seen, its earlier pages' included

    def note(self, kind: str, size: int, action: str, unit: str = "characters") -> None:
        count, largest = self.found.get(kind, [0, 0])
        self.found[kind] = [count + 1, max(largest, size)]
        self.actions[kind] = (action, unit)

    def warnings(self) -> dict[str, str]:
        """kind -> its warning line."""
        lines = {}
        for kind, (count, largest) in self.found.items():
            action, unit = self.actions[kind]
            lines[kind] = f"{kind}: {count} {action}" + (
                f"; the largest had {largest:,} {unit}" if unit else ""
            )
        return lines


def _unwanted(entry: Any, wanted: Callable[[str], bool]) -> bool:
    name = entry.get("name") if isinstance(entry, dict) else None
    # (a name past its bound is skipped further on, unmatched: patterns cost by its length)
    return isinstance(name, str) and len(name) <= NAME_LIMIT and not wanted(name)


def bound_listing(
    method: str,
    result: Any,
    spent: int = 0,
    listed: int = 0,
    *,
    wanted: Callable[[str], bool] | None = None,
) -> tuple[Any, Cuts]:
    """``result`` (of ``method``: a listing or ``initialize``) with every string and schema
    held to its bound, and what was cut; anything not understood is left to the repairs.
    ``spent`` and ``listed``: characters the listing's earlier pages kept and entries they
    held (``Cuts.spent`` and ``Cuts.listed`` after this one). ``wanted``: whether the config
    lets a tool of that name through: one it does not is left out before anything counts it
    (the config's include or exclude, its policy's deny), so the ``ENTRY_LIMIT`` tools kept
    are of those the user asked for."""
    cuts = Cuts(spent=spent, listed=listed)
    if not isinstance(result, dict):
        return result, cuts
    if method == "initialize":
        instructions = result.get("instructions")
        if isinstance(instructions, str) and len(instructions) > TEXT_LIMIT:
            cuts.note("instructions", len(instructions), f"over {TEXT_LIMIT:,} characters cut")
            result = result | {"instructions": cut_text(instructions)}
        return result, cuts
    if method not in _LISTINGS:
        return result, cuts
    key, what, identity = _LISTINGS[method]
    entries = result.get(key)
    if not isinstance(entries, list):
        return result, cuts
    kept: list[Any] = []
    counted = method in _COUNTED
    left_out = False  # an entry the config does not want
    for entry in entries:
        if wanted is not None and _unwanted(entry, wanted):
            left_out = True
            continue
        if counted and cuts.listed >= ENTRY_LIMIT:
            cuts.note(f"{what}s past the first {ENTRY_LIMIT:,}", 0, "skipped", "")
            continue
        cuts.listed += 1
        if not isinstance(entry, dict):
            kept.append(entry)
            continue
        if cuts.spent > 2 * LISTING_LIMIT:  # even brief entries: the rest cannot be kept
            cuts.note(f"{what}s", cuts.spent, "past what one listing may hold skipped", "")
            continue
        if _outsized_identity(entry, what, identity, cuts):
            continue
        brief = cuts.spent > LISTING_LIMIT
        bounded = _Entry(dict(entry), what, cuts, brief, identity != "name").bounded()
        kept.append(bounded)
        cuts.spent += _size(bounded) or LISTING_LIMIT
    if not cuts.found and not left_out:  # the listing as it came: nothing to copy
        return result, cuts
    return result | {key: kept}, cuts


def _outsized_identity(entry: dict[str, Any], what: str, identity: str, cuts: Cuts) -> bool:
    """Whether what identifies ``entry`` (a tool's or prompt's name, a resource's URI, a
    template's URI template) or a prompt argument's name is past its bound: cut, it would
    name nothing the server knows, so the entry is skipped."""
    names = [(identity, entry.get(identity))]
    arguments = entry.get("arguments")
    if isinstance(arguments, list):
        names += [("argument name", a.get("name")) for a in arguments if isinstance(a, dict)]
    for field_name, value in names:
        limit = NAME_LIMIT if field_name in ("name", "argument name") else URI_LIMIT
        if isinstance(value, str) and len(value) > limit:
            cuts.note(
                f"{what} {field_name}s",
                len(value),
                f"over {limit:,} characters skipped, with their {what}",
            )
            return True
    return False


@dataclass
class _Entry:
    """One listed tool, prompt, resource or template (a copy) being held to its bounds;
    ``brief``: past its listing's bound, so its texts are cut short and its schemas open."""

    entry: dict[str, Any]
    what: str
    cuts: Cuts
    brief: bool
    named_for_display: bool  # a resource's or template's name: a text, its URI the identity

    def bounded(self) -> dict[str, Any]:
        self.entry = self._texts(self.entry, self.what)
        name = self.entry.get("name")
        if self.named_for_display and isinstance(name, str) and len(name) > NAME_LIMIT:
            self.cuts.note(f"{self.what} names", len(name), f"over {NAME_LIMIT:,} characters cut")
            self.entry["name"] = cut_text(name, NAME_LIMIT)
        notes = [note for key in ("inputSchema", "outputSchema") if (note := self._schema(key))]
        if notes:
            description = self.entry.get("description")
            before = f"{description}\n\n" if isinstance(description, str) and description else ""
            self.entry["description"] = before + " ".join(notes)
        annotations = self.entry.get("annotations")
        if isinstance(annotations, dict):
            self.entry["annotations"] = self._texts(annotations, f"{self.what} annotation")
        arguments = self.entry.get("arguments")
        if isinstance(arguments, list):
            self.entry["arguments"] = [
                self._texts(argument, f"{self.what} argument")
                if isinstance(argument, dict)
                else argument
                for argument in arguments
            ]
        for key in [key for key in self.entry if key not in _BOUNDED_ABOVE]:
            size = _size(self.entry[key])
            if size is None or size > FIELD_LIMIT:
                self.cuts.note(
                    f"other {self.what} fields",
                    size or 0,
                    f"over {FIELD_LIMIT:,} characters dropped",
                )
                self.entry.pop(key)
        return self.entry

    def _texts(self, holder: dict[str, Any], kind: str) -> dict[str, Any]:
        """``holder`` with its description and title cut to their bound (a copy if cut)."""
        limit = BRIEF_LIMIT if self.brief else TEXT_LIMIT
        for key in _ENTRY_TEXT:
            text = holder.get(key)
            if isinstance(text, str) and len(text) > limit:
                self.cuts.note(f"{kind} {key}s", len(text), f"over {limit:,} characters cut")
                holder = holder | {key: cut_text(text, limit)}
        return holder

    def _schema(self, key: str) -> str | None:
        """Bound the entry's input or output schema; the note its description then gets."""
        schema = self.entry.get(key)
        if not isinstance(schema, dict):
            return None
        if self.brief:  # a small schema is kept whole, a larger one left open
            size = _size(schema)
            small = size is not None and size <= BRIEF_LIMIT
            bounded, why = (
                (schema if small else None),
                (f"past the {LISTING_LIMIT:,} characters its listing may hold"),
            )
        else:
            bounded, why = bound_schema(schema, self.cuts)
        if bounded is not None:
            self.entry[key] = bounded
            return None
        side = "input" if key == "inputSchema" else "output"
        self.cuts.note(
            f"{self.what} {side} schemas",
            _size(schema) or 0,
            f"too large to type, served open with a note in the {self.what}'s description",
        )
        if key == "inputSchema":
            self.entry[key] = dict(ANY_ARGUMENTS)
            return f"[arguments not typed: the server's input schema is {why}]"
        self.entry.pop(key)
        return f"[result not typed: the server's output schema is {why}]"


class _TooLarge(Exception):
    """A schema past SCHEMA_DEPTH or SCHEMA_NODES: left open."""


def bound_schema(schema: dict[str, Any], cuts: Cuts) -> tuple[dict[str, Any] | None, str]:
    """``schema`` with its texts cut, its outsized defaults and examples dropped and its
    outsized enums widened to their type, or None and why when what is left is still too
    large or too deep to type."""
    walk = _SchemaWalk(cuts)
    try:
        bounded = walk.schema(schema, 0)
    except _TooLarge as exc:
        return None, str(exc)
    size = _size(bounded)
    if size is None or size > SCHEMA_LIMIT:
        return None, f"over {SCHEMA_LIMIT:,} characters"
    assert isinstance(bounded, dict)
    return bounded, ""


@dataclass
class _SchemaWalk:
    cuts: Cuts
    nodes: int = 0

    def schema(self, node: Any, depth: int) -> Any:
        if isinstance(node, list):
            self._enter(depth)
            return [self.schema(item, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        self._enter(depth)
        bounded: dict[str, Any] = {}
        for key, value in node.items():
            if key in _TEXT_KEYS and isinstance(value, str):
                if len(value) > TEXT_LIMIT:
                    self.cuts.note(
                        "parameter descriptions", len(value), f"over {TEXT_LIMIT:,} characters cut"
                    )
                    value = cut_text(value)
                bounded[key] = value
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                self._enter(depth + 1)
                bounded[key] = {name: self.schema(sub, depth + 2) for name, sub in value.items()}
            elif key in _DATA_KEYS:
                kept = self._data(key, value)
                if kept is not _DROPPED:
                    bounded[key] = kept
            else:
                bounded[key] = self.schema(value, depth + 1)
        if "enum" in node and "enum" not in bounded:
            note = f"[one of {len(node['enum']):,} values, not typed: over {ENUM_LIMIT:,}]"
            described = bounded.get("description")
            bounded["description"] = (
                f"{described}\n{note}" if isinstance(described, str) and described else note
            )
        return bounded

    def _data(self, key: str, value: Any) -> Any:
        if key == "enum" and isinstance(value, list) and len(value) > ENUM_LIMIT:
            self.cuts.note(
                "enums",
                len(value),
                f"of over {ENUM_LIMIT:,} values widened to their type",
                "values",
            )
            return _DROPPED
        if key == "default":
            size = _size(value)
            if size is None or size > VALUE_LIMIT:
                self.cuts.note(
                    "defaults and examples", size or 0, f"over {VALUE_LIMIT:,} characters dropped"
                )
                return _DROPPED
        if key == "examples" and isinstance(value, list):
            kept = []
            for example in value:
                size = _size(example)
                if size is None or size > VALUE_LIMIT:
                    self.cuts.note(
                        "defaults and examples",
                        size or 0,
                        f"over {VALUE_LIMIT:,} characters dropped",
                    )
                else:
                    kept.append(example)
            return kept
        return value

    def _enter(self, depth: int) -> None:
        """One more object or array, at ``depth``; raises past the bounds of depth and size."""
        self.nodes += 1
        if depth > SCHEMA_DEPTH:
            raise _TooLarge(f"nested over {SCHEMA_DEPTH} levels deep")
        if self.nodes > SCHEMA_NODES:
            raise _TooLarge(f"over {SCHEMA_NODES:,} objects and arrays")


_DROPPED = object()


def _size(value: Any) -> int | None:
    """Characters of ``value`` as JSON (None: too deep to write)."""
    try:
        return len(json.dumps(value))
    except (RecursionError, TypeError, ValueError):
        return None


def listing_or_error(decoded: Any, depth: int) -> Any:
    """A message read with what is deeper than ``depth`` levels empty, as it may be used: a
    listing's answer as read, any other answer its request's error (its result would be
    used changed); a request or notification as read."""
    if isinstance(decoded, dict) and "id" in decoded and "result" in decoded:
        result = decoded["result"]
        if not (isinstance(result, dict) and _LISTING_KEYS.intersection(result)):
            too_deep = f"the server's answer is nested more than {depth} levels deep"
            error = {"code": -32603, "message": too_deep}
            return {"jsonrpc": "2.0", "id": decoded["id"], "error": error}
    return decoded


# What a listing's answer holds (``tools/list``, ``prompts/list``, ``resources/list``,
# ``resources/templates/list``): read with its deepest parts empty rather than refused.
_LISTING_KEYS = frozenset({"tools", "prompts", "resources", "resourceTemplates"})
