"""JSON Schema to TypeScript type expressions (pure functions, no I/O).

Covers what MCP servers send: objects (required/optional, additionalProperties,
patternProperties), arrays and tuples (items, prefixItems), enum, const,
anyOf/oneOf (unions), allOf (intersections), type arrays, local ``$ref`` (to
``$defs``/``definitions`` or any JSON pointer, recursion included), boolean and
empty schemas (``unknown``), formats and annotations as JSDoc. Whatever it cannot
express becomes ``unknown`` with a comment for that node only.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from toolscript.codegen.naming import first_free, to_pascal_case

__all__ = [
    "TypeContext",
    "alias_base",
    "comment_text",
    "doc_comment",
    "jsdoc",
    "member_notes",
    "member_type",
    "ref_pointers",
    "render_schema",
]

MAX_DEPTH = 24
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_PRIMITIVES = {
    "string": "string",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "null": "null",
}


@dataclass
class TypeContext:
    """Named types produced while rendering one tool's schemas (``$ref`` targets)."""

    prefix: str
    root: Any = None
    aliases: dict[str, str] = field(default_factory=dict)  # pointer -> alias name
    declarations: list[str] = field(default_factory=list)
    reserved: set[str] = field(default_factory=set)  # names the caller already uses
    given: dict[str, str] = field(default_factory=dict)  # pointer -> name unique module-wide
    # Aliases whose declaration is being rendered with no object or array between it and
    # here: a $ref to one of them is a cycle of plain aliases (``type A = A``, ``type A = B;
    # type B = A``, ``allOf: [{"$ref": "#"}]``), which TypeScript refuses (TS2456), and one
    # such alias failed the whole module's check: every script of every server.
    direct: frozenset[str] = frozenset()

    def alias_for(self, pointer: str) -> str | None:
        if pointer in self.aliases:
            return self.aliases[pointer]
        target = _resolve_pointer(self.root, pointer)
        if target is _MISSING:
            return None
        name = self.given.get(pointer) or first_free(
            alias_base(self.prefix, pointer), self.reserved
        )
        self.reserved.add(name)
        self.aliases[pointer] = name
        outer, self.direct = self.direct, self.direct | {pointer}
        try:
            body = render_schema(target, self, 0)
        finally:
            self.direct = outer
        named = pointer.rsplit("/", 1)[-1]
        self.declarations.append(f"{jsdoc(target, named=named)}export type {name} = {body};")
        return name


_MISSING = object()


def alias_base(prefix: str, pointer: str) -> str:
    """The name a ``$ref`` alias starts from: ``prefix`` and the pointer's last part."""
    last = pointer.rstrip("/").rsplit("/", 1)[-1] or "Root"
    return prefix + to_pascal_case(last.replace("~1", "/").replace("~0", "~"))


def ref_pointers(schema: Any) -> list[str]:
    """Every local ``$ref`` in ``schema`` that resolves in it, once each, in document order:
    the aliases rendering it may declare (the names task names them module-wide)."""
    found: dict[str, None] = {}
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and _resolve_pointer(schema, ref) is not _MISSING:
                found.setdefault(ref)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return list(found)


def _resolve_pointer(root: Any, pointer: str) -> Any:
    if not pointer.startswith("#"):
        return _MISSING
    node = root
    for raw in pointer[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _literal(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "number"  # NaN and Infinity (Python's JSON reads them) are no literal types
    if isinstance(value, (str, int, float, bool)) or value is None:
        return json.dumps(value)
    return "unknown /* non-scalar const */"


def comment_text(text: str) -> str:
    """``text`` safe inside a ``/* */`` comment: the one escape for whatever a server sent
    (descriptions, titles, formats, defaults, examples, ``$ref`` names, markers) that
    codegen writes into a comment. Only ``*/`` ends a block comment; it becomes ``*\\/``
    (the inserted backslash can never form a new ``*/``)."""
    return text.replace("*/", "*\\/")


def _spelled(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).casefold()


def jsdoc(
    schema: Any, indent: str = "", notes: list[str] | None = None, named: str | None = None
) -> str:
    """A JSDoc block (then ``indent``) from description, format, default, examples,
    deprecated, then ``notes``. Without a description the title stands in, unless it only
    spells ``named`` again (the property or definition it documents): pydantic titles every
    field so (``is_dst`` -> ``Is Dst``, a model by its class name), which told a reader
    nothing and cost a line a member."""
    if not isinstance(schema, dict):
        schema = {}
    lines: list[str] = []
    description = schema.get("description")
    if not (isinstance(description, str) and description.strip()):
        title = schema.get("title")
        redundant = (
            isinstance(title, str) and named is not None and _spelled(title) == _spelled(named)
        )
        description = None if redundant else title
    if isinstance(description, str) and description.strip():
        lines.extend(description.strip().splitlines())
    if isinstance(schema.get("format"), str):
        lines.append(f"@format {schema['format']}")
    if "default" in schema:
        lines.append(f"@default {json.dumps(schema['default'])}")
    examples = schema.get("examples")
    if isinstance(examples, list):
        lines.extend(f"@example {json.dumps(example)}" for example in examples[:3])
    if schema.get("deprecated") is True:
        lines.append("@deprecated")
    lines.extend(notes or [])
    comment = doc_comment(lines, indent)
    return comment[len(indent) :] + indent if comment else ""


def doc_comment(lines: list[str], indent: str) -> str:
    """``lines`` as a JSDoc block at ``indent`` (then a newline); empty for no lines.

    One line stays on one line; longer text goes in as it is, without a `` * `` gutter or
    indentation of its own and with runs of blank lines squeezed, so a description costs
    about its own length (types are what an agent reads).
    """
    kept: list[str] = []
    for line in lines:
        line = comment_text(line.rstrip())
        if line or (kept and kept[-1]):
            kept.append(line)
    while kept and not kept[-1]:
        kept.pop()
    if not kept:
        return ""
    if len(kept) == 1:
        return f"{indent}/** {kept[0].strip()} */\n"
    return f"{indent}/**\n" + "\n".join(kept) + f"\n{indent} */\n"


def _union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(parts))
    if "unknown" in unique:
        return "unknown"
    if len(unique) == 1:
        return unique[0]
    return " | ".join(f"({p})" if " & " in p or "=>" in p else p for p in unique)


def _intersection(parts: list[str]) -> str:
    unique = [p for p in dict.fromkeys(parts) if p != "unknown"]
    if not unique:
        return "unknown"
    if len(unique) == 1:
        return unique[0]
    return " & ".join(f"({p})" if " | " in p else p for p in unique)


def render_schema(schema: Any, context: TypeContext, depth: int = 0) -> str:
    """The TypeScript type expression for ``schema``."""
    if schema is True or schema == {}:
        return "unknown"
    if schema is False:
        return "never"
    if not isinstance(schema, dict):
        return "unknown /* not a schema */"
    if depth > MAX_DEPTH:
        return "unknown /* nested too deeply */"
    try:
        return _render(schema, context, depth)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        return f"unknown /* {comment_text(type(exc).__name__)}: unsupported schema */"


def _render(schema: dict[str, Any], context: TypeContext, depth: int) -> str:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref in context.direct:
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "description", "title")}
        circular = f"unknown /* circular $ref {comment_text(ref)} */"
        return _intersection([circular, _render(rest, context, depth + 1)]) if rest else circular
    if isinstance(ref, str):
        alias = context.alias_for(ref)
        base = alias if alias else f"unknown /* unresolved $ref {comment_text(ref)} */"
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "description", "title")}
        if rest and alias:
            return _intersection([base, _render(rest, context, depth + 1)])
        return base
    if "const" in schema:
        return _literal(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _union([_literal(value) for value in schema["enum"]])

    parts: list[str] = []
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            parts.append(_union([render_schema(option, context, depth + 1) for option in options]))
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and all_of:
        parts.append(_intersection([render_schema(item, context, depth + 1) for item in all_of]))

    own = _render_own(schema, context, depth)
    if own is not None:
        parts.insert(0, own)
    if not parts:
        return "unknown"
    result = _intersection(parts)
    if schema.get("nullable") is True:
        result = _union([result, "null"])
    return result


def _render_own(schema: dict[str, Any], context: TypeContext, depth: int) -> str | None:
    """The type from ``type`` (and object/array keywords), or None when absent."""
    declared = schema.get("type")
    types: list[str]
    if isinstance(declared, str):
        types = [declared]
    elif isinstance(declared, list):
        types = [t for t in declared if isinstance(t, str)]
    elif any(k in schema for k in ("properties", "additionalProperties", "patternProperties")):
        types = ["object"]
    elif any(k in schema for k in ("items", "prefixItems")):
        types = ["array"]
    else:
        return None
    rendered: list[str] = []
    for kind in types:
        if kind in ("object", "array"):
            # A member or an element may name any alias: TypeScript resolves it lazily.
            outer, context.direct = context.direct, frozenset()
            try:
                shaped = _object if kind == "object" else _array
                rendered.append(shaped(schema, context, depth))
            finally:
                context.direct = outer
        elif kind in _PRIMITIVES:
            rendered.append(_PRIMITIVES[kind])
        else:
            rendered.append(f"unknown /* unknown type {comment_text(str(kind))} */")
    return _union(rendered) if rendered else "unknown"


def property_key(name: str) -> str:
    return name if _IDENTIFIER.match(name) else json.dumps(name)


# What every object has (TypeScript's `Object` interface): an object literal leaving out a
# member of one of these names still has it, a function, so no literal leaving out an optional
# member so named would be accepted as the type's unless that member also takes the function.
_OBJECT_MEMBERS = frozenset(
    {
        "constructor",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "toString",
        "valueOf",
    }
)
_PROTO_NOTE = (
    'Give it as ["__proto__"]: value (a plain __proto__: in an object literal sets its '
    "prototype and is not sent)."
)


def member_type(name: str, rendered: str, optional: bool) -> str:
    """The type of an object type's member ``name``: ``rendered``, or for an optional member
    named as one every object inherits (``toString``), that or what it inherits."""
    if optional and name in _OBJECT_MEMBERS:
        return f"{rendered} | Object[{json.dumps(name)}]"
    return rendered


def member_notes(name: str) -> list[str]:
    """What a member's doc comment adds for its name: how to give a ``__proto__``."""
    return [_PROTO_NOTE] if name == "__proto__" else []


def _object(schema: dict[str, Any], context: TypeContext, depth: int) -> str:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required_set = set(required) if isinstance(required, list) else set()
    indent = "  " * (depth + 1)
    lines: list[str] = []
    for name, subschema in properties.items():
        optional = name not in required_set
        rendered = member_type(name, render_schema(subschema, context, depth + 1), optional)
        lines.append(
            f"{jsdoc(subschema, indent, member_notes(name), name)}{property_key(name)}"
            f"{'?' if optional else ''}: {rendered};"
        )
    for name in sorted(required_set - set(properties)):
        if isinstance(name, str):
            lines.append(f"{property_key(name)}: unknown;")
    extra = schema.get("additionalProperties")
    patterns = schema.get("patternProperties")
    index: str | None = None
    if isinstance(patterns, dict) and patterns:
        index = "unknown"
    if extra is True:
        index = "unknown"
    elif isinstance(extra, dict):
        value = render_schema(extra, context, depth + 1)
        index = value if not properties else "unknown"
    if index is not None:
        if not properties and not lines:
            return f"{{ [key: string]: {index} }}"
        lines.append(f"[key: string]: {index};")
    if not lines:
        return "Record<string, never>" if extra is False else "{ [key: string]: unknown }"
    closing = "  " * depth
    return "{\n" + "\n".join(f"{indent}{line}" for line in lines) + f"\n{closing}}}"


def _array(schema: dict[str, Any], context: TypeContext, depth: int) -> str:
    prefix = schema.get("prefixItems")
    items = schema.get("items")
    if isinstance(items, list):  # draft-07 tuples
        prefix, items = items, schema.get("additionalItems", True)
    if isinstance(prefix, list) and prefix:
        members = [render_schema(item, context, depth + 1) for item in prefix]
        min_items = schema.get("minItems", len(members))
        rendered = [
            member if i < (min_items if isinstance(min_items, int) else 0) else f"{member}?"
            for i, member in enumerate(members)
        ]
        if items is not False:
            rest = "unknown" if items in (None, True) else render_schema(items, context, depth + 1)
            rendered.append(f"...{_wrap_array(rest)}[]")
        return "[" + ", ".join(rendered) + "]"
    if items is None or items is True:
        return "unknown[]"
    return f"{_wrap_array(render_schema(items, context, depth + 1))}[]"


def _wrap_array(element: str) -> str:
    return (
        f"({element})"
        if any(c in element for c in " |&") and not element.startswith("{")
        else element
    )
