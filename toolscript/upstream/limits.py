"""Bounds on the size of what a server lists, so one server's strings never cost the others.

Pure functions over the JSON of a listing (``tools/list``, ``prompts/list``,
``resources/list``, ``resources/templates/list``) and of ``initialize`` (its
``instructions``), applied where it arrives, before anything keeps it: every string of a
listing is untrusted data, and what is kept goes into the generated module that every
script's type check reads. A text past its bound is cut with a visible marker; a schema
too large or too deep to type is served open (any arguments, no result type) with a note
in the tool's description; an entry whose name or URI is past its bound (no real one is:
MCP asks for names of at most 128 characters) is skipped, since a cut name calls nothing.
Nothing here drops a whole server. Each bound is many times the largest seen in real
servers (``bench/hostile_sizes.py`` says which).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENUM_LIMIT",
    "LISTING_LIMIT",
    "NAME_LIMIT",
    "SCHEMA_LIMIT",
    "TEXT_LIMIT",
    "Cuts",
    "bound_listing",
    "bound_schema",
    "cut_text",
]

TEXT_LIMIT = 32_768  # characters of a description, title or the server's instructions
NAME_LIMIT = 256  # characters of a tool, prompt, argument or resource name
URI_LIMIT = 8_192  # characters of a resource's URI or a template's URI template
VALUE_LIMIT = 4_096  # characters (as JSON) of a schema's default or of one of its examples
ENUM_LIMIT = 2_000  # values of one enum typed as a union
SCHEMA_LIMIT = 262_144  # characters (as JSON) of one tool's input or output schema
SCHEMA_DEPTH = 64  # levels of nesting in one schema
SCHEMA_NODES = 20_000  # objects and arrays in one schema
FIELD_LIMIT = 65_536  # characters (as JSON) of any other field of an entry (icons, _meta)
LISTING_LIMIT = 16 * 1024 * 1024  # characters (as JSON) of one page of a listing

ANY_ARGUMENTS: dict[str, Any] = {"type": "object", "additionalProperties": True}

_TEXT_KEYS = ("description", "title", "$comment")
# Keywords whose value maps names to schemas (the map itself is no schema).
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# Keywords whose value is data, not schemas: never walked (their size counts in the whole).
_DATA_KEYS = frozenset({"enum", "const", "default", "examples", "required"})
_ENTRY_TEXT = ("description", "title")
# Fields of an entry bounded on their own; any other field is held to FIELD_LIMIT.
_KNOWN = frozenset(
    {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
    | {"arguments", "uri", "uriTemplate", "mimeType", "size"}
)
# listing method -> (the list in its result, what one entry is called, its identifying field)
_LISTINGS = {
    "tools/list": ("tools", "tool", "name"),
    "prompts/list": ("prompts", "prompt", "name"),
    "resources/list": ("resources", "resource", "uri"),
    "resources/templates/list": ("resourceTemplates", "resource template", "uriTemplate"),
}


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

    def note(self, kind: str, size: int, action: str, unit: str = "characters") -> None:
        count, largest = self.found.get(kind, [0, 0])
        self.found[kind] = [count + 1, max(largest, size)]
        self.actions[kind] = (action, unit)

    def warnings(self) -> dict[str, str]:
        """kind -> its warning line."""
        lines = {}
        for kind, (count, largest) in self.found.items():
            action, unit = self.actions[kind]
            lines[kind] = f"{kind}: {count} {action}; the largest had {largest:,} {unit}"
        return lines


def bound_listing(method: str, result: Any) -> tuple[Any, Cuts]:
    """``result`` (of ``method``: a listing or ``initialize``) with every string and schema
    held to its bound, and what was cut; anything not understood is left to the repairs."""
    cuts = Cuts()
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
    spent = 0
    for entry in entries:
        if not isinstance(entry, dict):
            kept.append(entry)
            continue
        bounded = _bound_entry(entry, what, identity, cuts, spent > LISTING_LIMIT)
        if bounded is not None:
            kept.append(bounded)
            spent += _size(bounded) or LISTING_LIMIT
    if not cuts.found:  # the listing as it came: nothing to copy
        return result, cuts
    return result | {key: kept}, cuts


def _bound_entry(
    entry: dict[str, Any], what: str, identity: str, cuts: Cuts, over_budget: bool
) -> dict[str, Any] | None:
    """One listed tool, prompt, resource or template held to its bounds (None: skipped)."""
    limit = URI_LIMIT if identity != "name" else NAME_LIMIT
    for key, key_limit in ((identity, limit), ("name", NAME_LIMIT)):
        value = entry.get(key)
        if isinstance(value, str) and len(value) > key_limit:
            cuts.note(
                f"{what} {'names' if key == 'name' else key + 's'}",
                len(value),
                f"over {key_limit:,} characters skipped, with their {what}",
            )
            return None
    entry = dict(entry)
    for key in _ENTRY_TEXT:
        text = entry.get(key)
        if isinstance(text, str) and len(text) > TEXT_LIMIT:
            cuts.note(f"{what} {key}s", len(text), f"over {TEXT_LIMIT:,} characters cut")
            entry[key] = cut_text(text)
    notes: list[str] = []
    for key in ("inputSchema", "outputSchema"):
        schema = entry.get(key)
        if not isinstance(schema, dict):
            continue
        bounded, why = (
            (None, f"past the {LISTING_LIMIT:,} characters its listing may hold")
            if over_budget
            else bound_schema(schema, cuts)
        )
        if bounded is not None:
            entry[key] = bounded
            continue
        cuts.note(
            f"{what} {'input' if key == 'inputSchema' else 'output'} schemas",
            _size(schema) or 0,
            f"too large to type, served open with a note in the {what}'s description",
        )
        if key == "inputSchema":
            entry[key] = dict(ANY_ARGUMENTS)
            notes.append(f"[arguments not typed: the server's input schema is {why}]")
        else:
            entry.pop(key)
            notes.append(f"[result not typed: the server's output schema is {why}]")
    if notes:
        description = entry.get("description")
        before = description + "\n\n" if isinstance(description, str) and description else ""
        entry["description"] = before + " ".join(notes)
    annotations = entry.get("annotations")
    if isinstance(annotations, dict):
        title = annotations.get("title")
        if isinstance(title, str) and len(title) > TEXT_LIMIT:
            cuts.note(f"{what} titles", len(title), f"over {TEXT_LIMIT:,} characters cut")
            entry["annotations"] = annotations | {"title": cut_text(title)}
    arguments = entry.get("arguments")
    if isinstance(arguments, list):
        for argument in arguments:
            name = argument.get("name") if isinstance(argument, dict) else None
            if isinstance(name, str) and len(name) > NAME_LIMIT:
                cuts.note(
                    f"{what} argument names",
                    len(name),
                    f"over {NAME_LIMIT:,} characters skipped, with their {what}",
                )
                return None
        entry["arguments"] = [_bound_argument(argument, what, cuts) for argument in arguments]
    for key in [key for key in entry if key not in _KNOWN]:
        size = _size(entry[key])
        if size is None or size > FIELD_LIMIT:
            cuts.note(f"other {what} fields", size or 0, f"over {FIELD_LIMIT:,} characters dropped")
            entry.pop(key)
    return entry


def _bound_argument(argument: Any, what: str, cuts: Cuts) -> Any:
    if not isinstance(argument, dict):
        return argument
    for key in _ENTRY_TEXT:
        text = argument.get(key)
        if isinstance(text, str) and len(text) > TEXT_LIMIT:
            cuts.note(f"{what} argument {key}s", len(text), f"over {TEXT_LIMIT:,} characters cut")
            argument = argument | {key: cut_text(text)}
    return argument


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
