"""Render the TypeScript client: per-tool fragments, then whole or filtered modules."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from toolscript.codegen.fingerprint import generator_fingerprint
from toolscript.codegen.naming import first_free, to_pascal_case
from toolscript.codegen.offered import PROMPTS, TEMPLATES, prompt_members, template_members
from toolscript.codegen.shapes import inferred_label
from toolscript.codegen.typescript import (
    TypeContext,
    alias_base,
    comment_text,
    doc_comment,
    property_key,
    ref_pointers,
    render_schema,
)
from toolscript.store.savedscripts import specifier

__all__ = [
    "ToolFragment",
    "TypeNames",
    "declared_members",
    "example_arguments",
    "generator_fingerprint",
    "recent_call_comment",
    "render_declarations",
    "render_module",
    "render_tool",
    "runtime_source",
    "runtime_type_names",
    "scripts_section",
    "type_names",
]


@dataclass(frozen=True)
class ToolFragment:
    """Everything generated for one tool."""

    server: str
    tool: str  # the MCP name
    namespace: str  # camelCase server
    function: str  # camelCase tool
    types: str  # Params/Result declarations (and $ref aliases)
    signature: str  # the method's declaration, for get-types
    method: str  # the method's implementation, for the client
    example: str  # a call expression with plausible arguments

    @property
    def qualified(self) -> str:
        return f"{self.server}__{self.tool}"

    def to_dict(self) -> dict[str, str]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, str]) -> ToolFragment:
        return cls(**data)


def runtime_source() -> str:
    """The fixed part of every module: ToolError, the result types, ``call``."""
    return resources.files("toolscript.templates").joinpath("runtime.ts").read_text()


def _annotation_line(tool: dict[str, Any]) -> str:
    annotations = tool.get("annotations") or {}
    flags = [
        label
        for key, label in (
            ("readOnlyHint", "read-only"),
            ("destructiveHint", "destructive"),
            ("idempotentHint", "idempotent"),
            ("openWorldHint", "open-world"),
        )
        if annotations.get(key) is True
    ]
    return ", ".join(flags)


def _method_doc(tool: dict[str, Any], indent: str) -> str:
    """The method's JSDoc: the tool's description, its hints in brackets after it."""
    lines = (tool.get("description") or tool.get("title") or "").strip().splitlines()
    flags = _annotation_line(tool)
    if flags and len(lines) == 1:
        lines[0] = f"{lines[0].rstrip()} [{flags}]"
    elif flags:
        lines.append(f"[{flags}]")
    return doc_comment(lines, indent)


def _takes_no_arguments(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return True
    return not schema.get("required")


@dataclass(frozen=True)
class TypeNames:
    """The type names one tool declares, unique across the whole module (``type_names``)."""

    params: str
    result: str
    input_aliases: dict[str, str] = field(default_factory=dict)  # $ref pointer -> name
    output_aliases: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TypeNames:
        return cls(**data)


def _input_schema(tool: dict[str, Any]) -> Any:
    return tool.get("inputSchema") or {"type": "object"}


@functools.cache
def runtime_type_names() -> frozenset[str]:
    """The types the runtime declares: no tool's type may take one of these names."""
    return frozenset(_DECLARED.findall(runtime_source()))


def type_names(tools: list[tuple[str, dict[str, Any]]]) -> list[TypeNames]:
    """Type names for ``(type base, tool)`` pairs (every tool of the module, in a fixed
    order), no two alike whatever the servers send: the runtime's names are taken first,
    then each tool's ``Params`` and ``Result`` in order, then each tool's ``$ref`` aliases.
    A name already taken gets the first free ``2``, ``3``, ... suffix."""
    taken = set(runtime_type_names())

    def claim(name: str) -> str:
        free = first_free(name, taken)
        taken.add(free)
        return free

    heads = [(claim(f"{base}Params"), claim(f"{base}Result")) for base, _ in tools]
    return [
        TypeNames(
            params,
            result,
            {p: claim(alias_base(base, p)) for p in ref_pointers(_input_schema(tool))},
            {p: claim(alias_base(result, p)) for p in ref_pointers(tool.get("outputSchema"))},
        )
        for (base, tool), (params, result) in zip(tools, heads, strict=True)
    ]


def render_tool(
    server: str,
    namespace: str,
    function: str,
    type_base: str,
    tool: dict[str, Any],
    names: TypeNames | None = None,
) -> ToolFragment:
    """Types, signature, implementation and example for one tool; its type names are
    ``names`` (unique module-wide), else made from ``type_base`` alone."""
    input_schema = _input_schema(tool)
    output_schema = tool.get("outputSchema")
    names = names or TypeNames(f"{type_base}Params", f"{type_base}Result")
    params_name, result_name = names.params, names.result
    qualified_name = f"{server}__{tool['name']}"
    declarations: list[str] = []

    reserved = {params_name, result_name}
    input_context = TypeContext(
        prefix=type_base, root=input_schema, reserved=reserved, given=names.input_aliases
    )
    params = render_schema(input_schema, input_context)
    if params in ("unknown", "{ [key: string]: unknown }") and not input_schema.get("properties"):
        params = (
            "Record<string, never>" if input_schema.get("additionalProperties") is False else params
        )
    declarations.append(f"export type {params_name} = {params};")
    declarations.extend(input_context.declarations)

    if isinstance(output_schema, dict):
        output_context = TypeContext(
            prefix=result_name, root=output_schema, reserved=reserved, given=names.output_aliases
        )
        result = render_schema(output_schema, output_context)
        learned = inferred_label(output_schema)
        if learned is not None:
            plural = "" if learned == "1" else "s"
            declarations.append(
                f"/** inferred from {comment_text(learned)} result{plural}: "
                "the server declares no outputSchema */"
            )
        declarations.append(f"export type {result_name} = {result};")
        declarations.extend(output_context.declarations)
    else:
        result_name = "ToolResult"  # no outputSchema: the result contract, no alias of its own

    optional = "?" if _takes_no_arguments(input_schema) else ""
    # In a type, `new(...)` would declare a constructor: the member named "new" is quoted.
    member = '"new"' if function == "new" else function
    header = f"{member}(params{optional}: {params_name}): Promise<{result_name}>"
    qualified = json.dumps(qualified_name)
    method = f"    {function}: (params) => call<{result_name}>({qualified}, params),"
    signature = _method_doc(tool, "    ") + f"    {header};"
    arguments = example_arguments(input_schema)
    rendered_arguments = ts_literal(arguments) if arguments else ""
    example = f"tools.{namespace}.{function}({rendered_arguments})"
    return ToolFragment(
        server=server,
        tool=tool["name"],
        namespace=namespace,
        function=function,
        types="\n".join(declarations),
        signature=signature,
        method=method,
        example=example,
    )


_DECLARED = re.compile(r"^export (?:type|interface|class) (\w+)", re.MULTILINE)

TOOL_RESULT_NOTE = (
    "// ToolResult = string | JsonObject | JsonValue[] | ContentBlock[] | null (no outputSchema)."
    "\n// A failed call throws ToolError (tool, kind, message)."
)


def _grouped(fragments: list[ToolFragment]) -> dict[str, list[ToolFragment]]:
    groups: dict[str, list[ToolFragment]] = {}
    for fragment in fragments:
        groups.setdefault(fragment.namespace, []).append(fragment)
    return groups


def render_module(
    fragments: list[ToolFragment],
    *,
    header: str = "",
    offering: list[tuple[str, str]] | None = None,
    offered: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """A complete module for Deno: runtime, types, and ``export const tools: Tools``;
    ``resources`` and ``prompts`` for the ``offering`` servers, typed by what each server
    offers (``offered``: its prompts and templates, by server; ``codegen/offered.py``).

    ``tools`` has a declared type, an interface per server: a script's check then resolves
    only the members it uses, where the type of a bare object literal made the checker
    build every tool's type for any script that touched ``tools`` (150 ms at 1,600 tools).
    """
    parts = [
        header or "// Generated by toolscript. Do not edit: it is rebuilt when tools change.",
        runtime_source(),
    ]
    parts.extend(fragment.types for fragment in fragments)
    groups = _grouped(fragments)
    taken = set(_DECLARED.findall("\n".join(parts)))
    root = first_free("Tools", taken)
    taken.add(root)
    interfaces: dict[str, str] = {}
    for namespace in groups:
        interfaces[namespace] = first_free(to_pascal_case(namespace) + "Tools", taken)
        taken.add(interfaces[namespace])
    members = "".join(f"  {namespace}: {name};\n" for namespace, name in interfaces.items())
    parts.append(f"/** Every tool, by server. */\nexport interface {root} {_braced(members)}")
    for namespace, group in groups.items():
        signatures = "\n".join(m.signature for m in group)
        parts.append(f"export interface {interfaces[namespace]} {{\n{signatures}\n}}")
    body = "".join(
        f"  {namespace}: {{\n" + "\n".join(m.method for m in group) + "\n  },\n"
        for namespace, group in groups.items()
    )
    parts.append(f"export const tools: {root} = {_braced(body)};")
    if groups:  # each server's tools answer a member they lack (``unlisted``)
        servers = {f.namespace: f.server for f in fragments}
        parts.append(
            "for (const [namespace, server] of Object.entries("
            f"{json.dumps(servers, separators=(',', ':'))})) {{\n"
            "  const all = tools as unknown as Record<string, object>;\n"
            "  all[namespace] = unlisted(server, all[namespace]);\n}"
        )
    if offering is None:
        offering = list({f.server: f.namespace for f in fragments}.items())
    parts.extend(_offerings_section(offering, taken, offered or {}))
    return "\n\n".join(parts) + "\n"


# value -> (the loose interface, the runtime's maker, the kind typed, the typed members,
# the members every server's interface has)
_OFFERINGS = {
    "resources": (
        "ServerResources",
        "serverResources",
        TEMPLATES,
        template_members,
        "  list(): Promise<{ resources: ResourceInfo[]; templates: ResourceTemplateInfo[] }>;\n"
        "  read(uri: string): Promise<ResourceContent[]>;\n",
    ),
    "prompts": (
        "ServerPrompts",
        "serverPrompts",
        PROMPTS,
        prompt_members,
        "  list(): Promise<PromptInfo[]>;\n",
    ),
}


def offered_interfaces(
    servers: list[tuple[str, str]], offered: Mapping[str, Mapping[str, Any]], taken: set[str]
) -> dict[str, dict[str, tuple[str, str]]]:
    """Each server's own ``resources`` and ``prompts`` interfaces, by value and namespace:
    ``(name, declaration)``, named apart from everything in ``taken``; a server whose list
    is unknown has none (the runtime's loose interface types it)."""
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for value, (_, _, kind, render, common) in _OFFERINGS.items():
        found[value] = {}
        for server, namespace in servers:
            members = render((offered.get(server) or {}).get(kind))
            if members is None:
                continue
            name = first_free(to_pascal_case(namespace) + to_pascal_case(value), taken)
            taken.add(name)
            found[value][namespace] = (name, f"export interface {name} {{\n{common}{members}}}")
    return found


def _offerings_section(
    servers: list[tuple[str, str]], taken: set[str], offered: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """``resources`` and ``prompts``, a member per server (``(server, namespace)``) that may
    offer them, typed by what it offers; the server's name is in the code only as a JSON
    string, what it offers only in types and comments (``codegen/offered.py``)."""
    parts: list[str] = []
    roots = {}
    for value in _OFFERINGS:
        roots[value] = first_free(to_pascal_case(value), taken)
        taken.add(roots[value])
    typed = offered_interfaces(servers, offered, taken)
    for value, (kind, make, _, _, _) in _OFFERINGS.items():
        interface, own = roots[value], typed[value]
        parts.extend(declaration for _, declaration in own.values())
        members = "".join(
            f"  {namespace}: {own[namespace][0] if namespace in own else kind};\n"
            for _, namespace in servers
        )
        body = "".join(
            f"  {namespace}: {make}({json.dumps(server)})"
            + (f" as {own[namespace][0]}" if namespace in own else "")
            + ",\n"
            for server, namespace in servers
        )
        parts.append(
            f"/** Each server's {value} (`{value}.<server>.list()`). */\n"
            f"export interface {interface} {_braced(members)}\n"
            f"export const {value}: {interface} = {_braced(body)};"
        )
    return parts


_TOOLS_BODY = re.compile(r"^export const tools: [\w$]+ = \{\n(.*?)^\};$", re.M | re.S)
_TOOLS_MEMBER = re.compile(r"^  ([\w$]+): \{$", re.M)


def module_namespaces(module: str) -> set[str]:
    """The namespaces (``tools.NAME``) a module ``render_module`` made offers."""
    found = _TOOLS_BODY.search(module)
    return set(_TOOLS_MEMBER.findall(found.group(1))) if found else set()


def _braced(lines: str) -> str:
    """``lines`` (each ending in a newline) inside braces; ``{}`` for none."""
    return f"{{\n{lines}}}" if lines else "{}"


def render_declarations(
    fragments: list[ToolFragment],
    notes: Mapping[str, str] | None = None,
    offered: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """Types and method signatures only (what ``get-types`` shows an agent); ``notes``
    (comments by ``server__tool``, as ``recent_call_comment`` writes them) follow a tool's
    types; ``offered`` (prompts and resource templates by namespace) adds the typed
    ``prompts`` and ``resources`` of the servers that offer some."""
    found = notes or {}
    parts = [
        fragment.types + (f"\n{note}" if (note := found.get(fragment.qualified)) else "")
        for fragment in fragments
    ]
    if any("Promise<ToolResult>" in fragment.signature for fragment in fragments):
        parts.insert(0, TOOL_RESULT_NOTE)
    body = []
    for namespace, members in _grouped(fragments).items():
        body.append(f"  {namespace}: {{\n" + "\n".join(m.signature for m in members) + "\n  };")
    parts.append("declare const tools: {\n" + "\n".join(body) + "\n};")
    parts.extend(_offered_declarations(offered or {}))
    return "\n\n".join(parts)


def _offered_declarations(offered: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``declare const prompts`` and ``resources`` for the namespaces that offer some: the
    typed members only (``list`` and ``read`` are every server's, and cost tokens)."""
    parts = []
    for value, (_, _, kind, render, _) in _OFFERINGS.items():
        body = []
        for namespace, lists in offered.items():
            if not lists.get(kind):  # unknown or none: nothing an agent could use
                continue
            members = render(lists[kind], "    ") or ""
            body.append(f"  {namespace}: {{\n{members}  }};")
        if body:
            parts.append(f"declare const {value}: {{\n" + "\n".join(body) + "\n};")
    return parts


def recent_call_comment(fragment: ToolFragment, arguments: str, result: str, cut: bool) -> str:
    """A recent call of the tool as a comment: ``arguments`` and ``result`` are JSON as the
    gateway kept them (redacted, trimmed) and what a server sent, so they are data,
    escaped by ``doc_comment`` (``comment_text``) like every server string in a comment."""
    call = (
        f"tools.{fragment.namespace}.{fragment.function}({'' if arguments == '{}' else arguments})"
    )
    trimmed = ", trimmed" if cut else ""
    lines = [
        f"A recent successful call (secrets redacted{trimmed}):",
        call,
        f"returned {result}",
    ]
    return doc_comment(lines, "").rstrip("\n")


def ts_literal(value: Any, indent: str = "") -> str:
    """A value as a TypeScript literal, keys unquoted where they are identifiers."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{property_key(str(k))}: {ts_literal(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f",\n{indent}}}"
    if isinstance(value, list) and value:
        return "[" + ", ".join(ts_literal(item, indent) for item in value) + "]"
    return json.dumps(value)


def example_arguments(schema: Any, depth: int = 0) -> Any:
    """Plausible arguments: every required property with a value its schema accepts."""
    if not isinstance(schema, dict) or depth > 6:
        return None
    value = _example_value(schema, "", depth)
    return value if isinstance(value, dict) else {}


def _example_value(schema: Any, name: str, depth: int) -> Any:
    if not isinstance(schema, dict):
        return None
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if isinstance(schema.get("examples"), list) and schema["examples"]:
        return schema["examples"][0]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            options = [o for o in schema[key] if isinstance(o, dict) and o.get("type") != "null"]
            return _example_value(options[0] if options else schema[key][0], name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") or {}
        required = [r for r in schema.get("required") or [] if r in properties]
        return {key: _example_value(properties[key], key, depth + 1) for key in required}
    if kind == "array":
        item = _example_value(schema.get("items"), name, depth + 1)
        return [] if item is None else [item]
    if kind in ("number", "integer"):
        minimum = schema.get("minimum", schema.get("exclusiveMinimum"))
        return minimum if isinstance(minimum, (int, float)) and not isinstance(minimum, bool) else 1
    if kind == "boolean":
        return True
    if kind == "string":
        return _example_string(schema, name)
    if kind == "null":
        return None
    return None


_FORMATS = {
    "date-time": "2025-01-01T12:00:00Z",
    "date": "2025-01-01",
    "time": "12:00:00",
    "email": "someone@example.com",
    "uri": "https://example.com",
    "url": "https://example.com",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def _example_string(schema: dict[str, Any], name: str) -> str:
    form = schema.get("format")
    if isinstance(form, str) and form in _FORMATS:
        return _FORMATS[form]
    lowered = name.lower()
    for hint, value in (
        ("url", "https://example.com"),
        ("uri", "https://example.com"),
        ("path", "/path/to/file"),
        ("email", "someone@example.com"),
        ("timezone", "Europe/London"),
        ("query", "search terms"),
        ("id", "id-123"),
        ("name", "example"),
    ):
        if hint in lowered:
            return value
    return f"<{name or 'value'}>"


def scripts_section(module: str, scripts: list[tuple[str, str, str]]) -> str:
    """The ``scripts`` object to append to ``module``: each saved script, given as
    ``(name, description, digest)``, typed as its default export and imported when first
    called (so a saved script may use ``scripts`` and the tools at its top level).

    The digests are in the text, so the module's hash changes with any script's source.
    """
    taken = set(_DECLARED.findall(module))
    interface = first_free("Scripts", taken)
    lines = [
        "// Saved scripts (the project's toolscripts/ folder): `await scripts.name({ ... })`.",
        *(f"// {name} {digest}" for name, _, digest in scripts),
        f"export interface {interface} {{",
    ]
    members = []
    for name, description, _ in scripts:
        doc = doc_comment([description], "  ") if description else ""
        imported = f"import({json.dumps(specifier(name))})"
        lines.append(f"{doc}  {name}: typeof {imported}.default;")
        members.append(
            f"  {name}: ((...args: Parameters<{interface}[{json.dumps(name)}]>) =>\n"
            f"    {imported}.then((m) => m.default(...args))"
            f") as {interface}[{json.dumps(name)}],"
        )
    lines.append("}")
    body = "\n".join(members)
    lines.append(
        f"export const scripts: {interface} = {{\n{body}\n}};"
        if members
        else f"export const scripts: {interface} = {{}};"
    )
    return "\n" + "\n".join(lines) + "\n"


MAX_MEMBERS_SHOWN = 30  # members of a type listed in a type error; the rest counted
MAX_MEMBER_SHOWN = 80  # characters of a member's name listed (a server names them)
# A type error naming one of the module's object types: "'tz' does not exist in type
# 'TimeGetCurrentTimeParams'", "Property 'time' does not exist on type '...Result'".
NAMED_TYPE = re.compile(r"(?:does not exist (?:in|on)|but required in) type '([A-Za-z_$][\w$]*)'")


def members_listed(members: list[str]) -> str:
    """`` (members: a, b, 3 more)``, said after a type error's type: a name too long cut."""
    shown = ", ".join(
        member if len(member) <= MAX_MEMBER_SHOWN else member[: MAX_MEMBER_SHOWN - 1] + "…"
        for member in members[:MAX_MEMBERS_SHOWN]
    )
    more = len(members) - MAX_MEMBERS_SHOWN
    return f" (members: {shown}{f', {more} more' if more > 0 else ''})"


def with_members(message: str, module: str) -> str:
    """``message`` (a type error) with the members of each type of ``module`` it names as
    missing a property listed after it."""

    def listed(found: re.Match[str]) -> str:
        members = declared_members(module, found[1])
        return found[0] + members_listed(members) if members else found[0]

    return NAMED_TYPE.sub(listed, message)


# A member of a declared object type or interface, as the generator writes them: its
# indent, its key (a name, or a JSON string), "?" when optional, then ":" or a method's "(".
_MEMBER = re.compile(r'( +)([A-Za-z_$][\w$]*|"(?:[^"\\]|\\.)*")(\??)[:(]')
# How each kind is declared: its header and its closing line. Its members are indented
# alike (as its first one), nested types' members further.
_DECLARED_KINDS = (("export type {} = {{", "};"), ("export interface {} {{", "}"))


def declared_members(module: str, name: str) -> list[str] | None:
    """The members of the object type or interface ``name`` that ``module`` declares
    (``export type NAME = { ... };``, ``export interface NAME { ... }``), an optional one
    marked ``?``; None when it declares no such type. Comments are skipped: a description's
    own lines may look like members."""
    declared = (
        (found, closing)
        for header, closing in _DECLARED_KINDS
        if (found := re.search("^" + re.escape(header.format(name)) + "\n", module, re.M))
    )
    found, closing = next(declared, (None, ""))
    if found is None:
        return None
    members: list[str] = []
    indent: str | None = None
    in_comment = False
    start = found.end()
    while start < len(module):  # line by line, not splitting the (large) rest of the module
        end = module.find("\n", start)
        end = len(module) if end == -1 else end
        line, start = module[start:end], end + 1
        if in_comment:
            in_comment = "*/" not in line
            continue
        if line == closing:
            return members
        if line.lstrip().startswith("/**"):
            in_comment = "*/" not in line
            continue
        member = _MEMBER.match(line)
        if member is None:
            continue
        indent = indent or member[1]
        if member[1] == indent:
            members.append(member[2] + member[3])
    return None  # not closed: not a type this module's generator wrote
