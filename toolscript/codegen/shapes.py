"""Result types learned from real results: the JSON shape of values (never the values), merged
over samples, as a JSON Schema the TypeScript generator renders.

A shape is ``{"n": samples, "types": {kind: detail}}`` where kind is ``string``, ``number``,
``boolean``, ``null``, ``object`` (detail: ``{"n": objects seen, "fields": {name: shape}}``)
or ``array`` (detail: ``{"items": shape or None}``). A field seen in every object is required,
the rest optional; kinds that differ become a union; array elements are merged. An object
one of whose keys is data (an email address, a path or URL, a number, a date, a UUID, a
token: ``data_key``) is a map: its keys are never kept, its values are merged as one shape
(detail: ``{"n", "fields": {}, "values": shape}``, rendered ``{ [key: string]: T }``), so a
result keyed by a person's data teaches no field named after it. Depth,
fields per object, field names' length, elements looked at and shapes in all are capped
(``bounded``); past a cap the type is open (unknown), never an error.

Inferred types check scripts, they never validate results: every object keeps an index
signature (``[key: string]: unknown``), so a field no sample had is not a type error.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = [
    "INFERRED_KEY",
    "OWN_KEY_PREFIX",
    "answer_types",
    "bounded",
    "data_key",
    "inferred_label",
    "merge",
    "sample_label",
    "shape_of",
    "size",
    "to_schema",
    "without_own_keys",
]

# On a generated outputSchema: how many results taught it. Only toolscript's own store
# (gateway/inferred.py) sets it; the fetch task drops every key with OWN_KEY_PREFIX that a
# server sent (``without_own_keys``) before adding what the store learned.
INFERRED_KEY = "x-toolscript-inferred"
OWN_KEY_PREFIX = "x-toolscript-"
MAX_DEPTH = 8
MAX_FIELDS = 100  # per object
MAX_ELEMENTS = 50  # of an array, looked at
MAX_KEY_LENGTH = 100  # characters of a field name; an object with a longer one is left open
MAX_NODES = 1000  # shapes (fields and array items, nested) in what one tool's results teach
MAX_SCANNED = 10 * MAX_NODES  # values one result is read for, before the rest is left open
OPEN = "open"  # a kind for what is past a cap: rendered as unknown
# Keys that are data, not field names: what a map is keyed by (``data_key``).
_DATA_KEY = re.compile(
    r"[^@\s]+@[^@\s]+\.[^@\s]+"  # an email address
    r"|[a-z][a-z0-9+.-]*://.*|[/~\\].*|\.{1,2}[/\\].*|[A-Za-z]:[/\\].*"  # a URL or a path
    r"|[-+(]?[0-9][0-9.,:_ ()/-]*"  # a number, a date, a time, a version, a phone number
    r"|.*\s.*"  # words with a space between them: a name, a title, a person's column
    r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",  # a UUID
    re.DOTALL,
)
_TOKEN = re.compile(r"[A-Za-z0-9+/=_.-]{20,}")
# camelCase words: a first word in lower case, then capitalised words of 3 letters or more
_FIRST_WORD, _WORD = re.compile(r"^[a-z]+"), re.compile(r"[A-Z][a-z]{2,}")


def _camel_words(name: str) -> bool:
    """Whether ``name`` reads as camelCase words with a few digits between them
    (``base64EncodedContent``, ``p95LatencyMilliseconds``): two capitalised words or more,
    and words hold 80 % of its letters (a random token's short runs do not)."""
    words = _WORD.findall(name)
    if len(words) < 2:
        return False
    first = _FIRST_WORD.match(name)
    worded = sum(map(len, words)) + (len(first.group()) if first else 0)
    return worded * 5 >= sum(c.isalpha() for c in name) * 4


def _token(name: str) -> bool:
    """20 characters or more of a token's alphabet that do not read as words: 4 digits or
    more, or, with no separator between words, 2 digits or half of the letters upper case
    (a long camelCase field name has neither, or reads as words: ``_camel_words``)."""
    if _TOKEN.fullmatch(name) is None or _camel_words(name):
        return False
    digits = sum(c.isdigit() for c in name)
    if digits >= 4:
        return True
    letters = [c for c in name if c.isalpha()]
    if not letters or any(c in "_.- " for c in name):
        return False
    return digits >= 2 or sum(c.isupper() for c in letters) * 2 >= len(letters)


def data_key(name: str) -> bool:
    """Whether an object's key is data (the object a map): an email address, a URL or path,
    a number, date or phone number, words with a space between them (a person's name, a
    column of theirs), a UUID, or a token (``_token``: a field name of a real API is words).
    An object of more than ``MAX_FIELDS`` keys is a map too (``_keyed_by_data``)."""
    return _DATA_KEY.fullmatch(name) is not None or _token(name)


def _keyed_by_data(keys: Any, hidden: Callable[[str], bool] | None = None) -> bool:
    """An object is a map: one of its ``keys`` is data (or ``hidden``: one no type may
    name), or they are more than an object's fields may be (a server's results keyed by
    user names, one learned per call, each kept as a field up to the cap)."""
    return (
        len(keys) > MAX_FIELDS
        or any(data_key(str(key)) for key in keys)
        or (hidden is not None and any(hidden(str(key)) for key in keys))
    )


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


def shape_of(
    value: Any, nodes: int = MAX_NODES, *, hidden: Callable[[str], bool] | None = None
) -> dict[str, Any]:
    """The shape of one JSON value, within every cap (``nodes`` shapes at most). An object
    with a key ``hidden`` says no type may name (one holding a secret) is a map, as one
    keyed by data is: its keys are never kept."""
    return bounded(_scan(value, 0, [MAX_SCANNED], hidden), nodes)


def _scan(
    value: Any, depth: int, left: list[int], hidden: Callable[[str], bool] | None = None
) -> dict[str, Any]:
    kind = _kind(value)
    left[0] -= 1
    if kind in ("object", "array") and (depth >= MAX_DEPTH or left[0] < 0):
        return {"n": 1, "types": {OPEN: {}}}
    if kind == "object":
        if _keyed_by_data(value, hidden):
            values: dict[str, Any] | None = None
            for item in list(value.values())[:MAX_ELEMENTS]:
                if left[0] <= 0:
                    break
                values = merge(values, _scan(item, depth + 1, left, hidden))
            return {"n": 1, "types": {"object": {"n": 1, "fields": {}, "values": values}}}
        fields: dict[str, Any] = {}
        detail: dict[str, Any] = {"n": 1, "fields": fields}
        for key, item in value.items():
            name = str(key)
            if len(fields) >= MAX_FIELDS or len(name) > MAX_KEY_LENGTH or left[0] <= 0:
                detail["open"] = True
                continue
            fields[name] = _scan(item, depth + 1, left, hidden)
        return {"n": 1, "types": {"object": detail}}
    if kind == "array":
        items: dict[str, Any] | None = None
        for item in value[:MAX_ELEMENTS]:
            if left[0] <= 0:
                break
            items = merge(items, _scan(item, depth + 1, left, hidden))
        return {"n": 1, "types": {"array": {"items": items}}}
    return {"n": 1, "types": {kind: {}}}


def bounded(shape: Any, nodes: int = MAX_NODES) -> dict[str, Any]:
    """``shape`` within every cap: depth, fields per object, field names' length and
    ``nodes`` shapes in all. Breadth first, so what is past the budget is the deepest and
    the latest learned; it is left open (``unknown``, each object keeps its index
    signature). Whatever is not a shape (a damaged file) becomes open too. A map's values
    (its own, and the fields of an object it takes the place of) are merged as they are
    bounded, in the same walk: a node of the walk stands for the shapes it merges."""
    left = nodes - 1
    root = _node([shape])
    queue: deque[tuple[list[Any], dict[str, Any], int]] = deque([([shape], root, 0)])
    while queue:
        sources, target, depth = queue.popleft()
        kinds = [
            s["types"] for s in sources if isinstance(s, dict) and isinstance(s.get("types"), dict)
        ]
        if not kinds or left < 0:
            target["types"] = {OPEN: {}}
            continue
        for kind in dict.fromkeys(kind for found in kinds for kind in found):
            details = [found[kind] for found in kinds if kind in found]
            past_depth = kind in ("object", "array") and depth >= MAX_DEPTH
            if kind not in _KINDS or not all(isinstance(d, dict) for d in details) or past_depth:
                target["types"][OPEN] = {}
            elif kind == "object":
                named: dict[str, list[Any]] = {}  # each field's shapes, by name
                for detail in details:
                    fields = detail.get("fields")
                    for name, field in (fields if isinstance(fields, dict) else {}).items():
                        named.setdefault(str(name), []).append(field)
                kept: dict[str, Any] = {}
                trimmed: dict[str, Any] = {"n": sum(map(_count, details)), "fields": kept}
                if any("values" in detail for detail in details) or _keyed_by_data(named):
                    # a map (or a stored object keyed by data, learned before maps were)
                    parts = [d.get("values") for d in details] + [
                        field for found in named.values() for field in found
                    ]
                    parts = [
                        s for s in parts if isinstance(s, dict) and isinstance(s.get("types"), dict)
                    ]
                    trimmed["values"] = None
                    if parts and left > 0:
                        left -= 1
                        trimmed["values"] = _node(parts)
                        queue.append((parts, trimmed["values"], depth + 1))
                    target["types"]["object"] = trimmed
                    continue
                for name, found in named.items():
                    if len(kept) >= MAX_FIELDS or len(name) > MAX_KEY_LENGTH or left <= 0:
                        trimmed["open"] = True
                        continue
                    left -= 1
                    kept[name] = _node(found)
                    queue.append((found, kept[name], depth + 1))
                if any(detail.get("open") for detail in details):
                    trimmed["open"] = True
                target["types"]["object"] = trimmed
            elif kind == "array":
                items = [d["items"] for d in details if d.get("items") is not None]
                if not items or left <= 0:  # no items: unknown[]
                    target["types"]["array"] = {"items": None}
                else:
                    left -= 1
                    child = _node(items)
                    target["types"]["array"] = {"items": child}
                    queue.append((items, child, depth + 1))
            else:
                target["types"][kind] = {}
    return root


_KINDS = frozenset({"string", "number", "boolean", "null", "object", "array", OPEN})


def _map_values(detail: dict[str, Any]) -> dict[str, Any] | None:
    """A map's values as one shape: its own, merged with the fields of an object it takes
    the place of (shapes, as ``merge`` takes them; its caller bounds what it makes)."""
    merged: dict[str, Any] | None = detail.get("values")
    for field in detail["fields"].values():
        merged = merge(merged, field)
    return merged


def _count(shape: Any) -> int:
    found = shape.get("n") if isinstance(shape, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else 1


def _node(shapes: list[Any]) -> dict[str, Any]:
    """A node of ``bounded``'s walk, for the shapes it merges (their kinds filled in later)."""
    return {"n": sum(map(_count, shapes)), "types": {}}


def size(shape: dict[str, Any] | None) -> int:
    """How many shapes ``shape`` holds (itself, fields and array items, nested)."""
    total, stack = 0, [shape]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        total += 1
        for kind, detail in node.get("types", {}).items():
            if kind == "object":
                stack.extend(detail.get("fields", {}).values())
                stack.append(detail.get("values"))
            elif kind == "array":
                stack.append(detail.get("items"))
    return total


def merge(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two shapes as one: kinds united, object fields counted, array elements merged."""
    if a is None or b is None:
        return b if a is None else a
    types: dict[str, Any] = {}
    for kind in {**a["types"], **b["types"]}:
        left, right = a["types"].get(kind), b["types"].get(kind)
        if left is None or right is None:
            types[kind] = left if right is None else right
        elif kind == "object" and (
            "values" in left
            or "values" in right
            or len({*left["fields"], *right["fields"]}) > MAX_FIELDS  # keyed by data
        ):
            values = merge(_map_values(left), _map_values(right))
            types[kind] = {"n": left["n"] + right["n"], "fields": {}, "values": values}
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


def answer_types(shape: dict[str, Any]) -> dict[str, Any]:
    """The shape of a tool's answers as its type: a plain-text answer (the only source of a
    ``string`` at the top: structured content is an object, and text is parsed as JSON only
    when it holds an object or an array) is left out once the tool answered with anything
    else, since many servers answer an error as text without ``isError``. A type never makes
    a correct script fail: ``r.a + 1`` stays right after one answer such as "rate limited"."""
    kinds = shape.get("types") or {}
    if "string" in kinds and any(kind not in ("string", "null") for kind in kinds):
        return {**shape, "types": {kind: kinds[kind] for kind in kinds if kind != "string"}}
    return shape


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
    if kind == "object" and "values" in detail:
        values = detail["values"]
        return {"type": "object", "additionalProperties": to_schema(values) if values else True}
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
