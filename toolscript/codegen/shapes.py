"""Result types learned from real results: the JSON shape of values (never the values), merged
over samples, as a JSON Schema the TypeScript generator renders.

A shape is ``{"n": samples, "types": {kind: detail}}`` where kind is ``string``, ``number``,
``boolean``, ``null``, ``object`` (detail: ``{"n": objects seen, "fields": {name: shape}}``)
or ``array`` (detail: ``{"items": shape or None}``). A field seen in every object is required,
the rest optional; kinds that differ become a union; array elements are merged. Depth,
fields per object and elements looked at are capped; past a cap the type is open (unknown).

Inferred types check scripts, they never validate results: every object keeps an index
signature (``[key: string]: unknown``), so a field no sample had is not a type error.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "INFERRED_KEY",
    "OWN_KEY_PREFIX",
    "inferred_label",
    "merge",
    "sample_label",
    "shape_of",
    "to_schema",
    "without_own_keys",
]

# On a generated outputSchema: how many results taught it. Only toolscript's own store
# (gateway/inferred.py) sets it; the fetch task drops every key with OWN_KEY_PREFIX that a
# server sent (``without_own_keys``) before adding what the store learned.
INFERRED_KEY = "x-toolscript-inferred"
OWN_KEY_PREFIX = "x-toolscript-"
MAX_DEPTH = 8
MAX_FIELDS = 100
MAX_ELEMENTS = 50
OPEN = "open"  # a kind for what is past a cap: rendered as unknown


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return OPEN


def shape_of(value: Any, depth: int = 0) -> dict[str, Any]:
    """The shape of one JSON value."""
    kind = _kind(value)
    if depth >= MAX_DEPTH and kind in ("object", "array"):
        return {"n": 1, "types": {OPEN: {}}}
    if kind == "object":
        fields: dict[str, Any] = {}
        for number, (key, item) in enumerate(value.items()):
            if number >= MAX_FIELDS:
                return {"n": 1, "types": {"object": {"n": 1, "fields": fields, "open": True}}}
            fields[str(key)] = shape_of(item, depth + 1)
        return {"n": 1, "types": {"object": {"n": 1, "fields": fields}}}
    if kind == "array":
        items: dict[str, Any] | None = None
        for item in value[:MAX_ELEMENTS]:
            one = shape_of(item, depth + 1)
            items = merge(items, one)
        return {"n": 1, "types": {"array": {"items": items}}}
    return {"n": 1, "types": {kind: {}}}


def merge(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two shapes as one: kinds united, object fields counted, array elements merged."""
    if a is None or b is None:
        return b if a is None else a
    types: dict[str, Any] = {}
    for kind in {**a["types"], **b["types"]}:
        left, right = a["types"].get(kind), b["types"].get(kind)
        if left is None or right is None:
            types[kind] = left if right is None else right
        elif kind == "object":
            names = {**left["fields"], **right["fields"]}
            fields = {
                name: merge(left["fields"].get(name), right["fields"].get(name)) for name in names
            }
            merged: dict[str, Any] = {"n": left["n"] + right["n"], "fields": fields}
            if left.get("open") or right.get("open") or len(fields) > MAX_FIELDS:
                merged["open"] = True
            types[kind] = merged
        elif kind == "array":
            types[kind] = {"items": merge(left["items"], right["items"])}
        else:
            types[kind] = {}
    return {"n": a["n"] + b["n"], "types": types}


def to_schema(shape: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON Schema of a shape (no shape: anything)."""
    if shape is None:
        return {}
    members = [_kind_schema(kind, detail) for kind, detail in sorted(shape["types"].items())]
    if any(member == {} for member in members):
        return {}
    return members[0] if len(members) == 1 else {"anyOf": members}


def _kind_schema(kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    if kind == OPEN:
        return {}
    if kind == "object":
        fields = detail["fields"]
        return {
            "type": "object",
            "properties": {name: to_schema(field) for name, field in fields.items()},
            "required": [name for name, field in fields.items() if field["n"] >= detail["n"]],
            "additionalProperties": True,
        }
    if kind == "array":
        items = detail["items"]
        return {"type": "array", "items": to_schema(items)} if items else {"type": "array"}
    return {"type": kind}


_STEPS = (1000, 300, 100, 30, 10, 3)
_LABEL = re.compile(r"[0-9]{1,9}\+?")


def sample_label(samples: int) -> str:
    """How many results taught a type, in steps (1, 2, 3+, 10+, 30+, 100+, 300+, 1000+): the
    module changes when the type or the step does, not with every call."""
    for step in _STEPS:
        if samples >= step:
            return f"{step}+"
    return str(samples)


def inferred_label(schema: dict[str, Any]) -> str | None:
    """The sample label of an inferred outputSchema; None when unmarked or not a label
    ``sample_label`` makes (then nothing of it is written into the module)."""
    label = schema.get(INFERRED_KEY)
    return label if isinstance(label, str) and _LABEL.fullmatch(label) else None


def without_own_keys(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as a server sent it minus any ``x-toolscript-*`` key, on the tool and on its
    schemas: markers of toolscript's own are never taken from a server."""

    def clean(value: Any) -> Any:
        if not isinstance(value, dict) or not any(_is_own(key) for key in value):
            return value
        return {key: item for key, item in value.items() if not _is_own(key)}

    cleaned: dict[str, Any] = clean(tool)
    for key in ("inputSchema", "outputSchema"):
        if key in cleaned and clean(cleaned[key]) is not cleaned[key]:
            cleaned = {**cleaned, key: clean(cleaned[key])}
    return cleaned


def _is_own(key: Any) -> bool:
    return isinstance(key, str) and key.lower().startswith(OWN_KEY_PREFIX)
