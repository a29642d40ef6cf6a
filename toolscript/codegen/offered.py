"""What a server offers besides tools, typed: its prompts as overloads of ``get`` (each
name a string literal type, its arguments an object type) and its resource templates as
overloads of ``template`` (the URI template or its name, its variables an object type);
and RFC 6570 URI templates read and expanded.

A server's offerings are ``{"prompts": [...], "resourceTemplates": [...]}`` as the fetch
task keeps them; a kind that is absent is unknown (the server was never reached), and is
typed loosely, as every server was before its lists were fetched. Every string a server
sent reaches the code as a JSON string literal or, escaped, in a comment: data, never code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from toolscript.codegen.typescript import doc_comment, member_notes, member_type, property_key

__all__ = [
    "PROMPTS",
    "TEMPLATES",
    "expand_template",
    "offered_entries",
    "prompt_members",
    "template_members",
    "template_parameters",
    "template_variables",
]

PROMPTS, TEMPLATES = "prompts", "resourceTemplates"

# What the module's types read of each listed item: other fields (icons, _meta) changing
# leave the artifacts as they are.
_KEPT = {
    PROMPTS: ("name", "title", "description", "arguments"),
    TEMPLATES: ("uriTemplate", "name", "title", "description", "mimeType"),
}
_ARGUMENT_KEPT = ("name", "title", "description", "required")
_SORT_KEY = {PROMPTS: "name", TEMPLATES: "uriTemplate"}


def offered_entries(kind: str, items: Any) -> list[dict[str, Any]]:
    """What the artifacts keep of a server's prompts or templates: the fields types use,
    one item per name (the first), sorted; an item without a string name is dropped."""
    key = _SORT_KEY[kind]
    kept: dict[str, dict[str, Any]] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get(key), str):
            continue
        entry = {field: item[field] for field in _KEPT[kind] if item.get(field) is not None}
        if kind == PROMPTS:
            arguments = [
                {field: a[field] for field in _ARGUMENT_KEPT if a.get(field) is not None}
                for a in entry.pop("arguments", None) or []
                if isinstance(a, dict) and isinstance(a.get("name"), str)
            ]
            if arguments:
                entry["arguments"] = arguments
        kept.setdefault(item[key], entry)
    return [kept[name] for name in sorted(kept)]


# -- prompts ----------------------------------------------------------------------------

_PROMPT_RESULT = "Promise<PromptResult>"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _object_type(members: list[tuple[str, bool, str]], indent: str) -> str:
    """``{ name: string; ... }`` from ``(name, required, description)``, one a line."""
    inner = indent + "  "
    lines = [
        doc_comment(description.strip().splitlines() + member_notes(name), inner)
        + f"{inner}{property_key(name)}{'' if need else '?'}: "
        f"{member_type(name, 'string', not need)};"
        for name, need, description in members
    ]
    return "{\n" + "\n".join(lines) + f"\n{indent}}}"


def prompt_members(prompts: list[dict[str, Any]] | None, indent: str = "  ") -> str | None:
    """The ``get`` overloads of a server's prompts, one per prompt (None: the list is
    unknown). A prompt's required arguments are required, the others optional, all strings
    (what MCP prompt arguments are); a server with no prompts takes no name at all."""
    if prompts is None:
        return None
    if not prompts:
        return f"{indent}get(name: never, args?: Record<string, never>): {_PROMPT_RESULT};\n"
    overloads = []
    for prompt in prompts:
        arguments: dict[str, tuple[str, bool, str]] = {}
        for argument in prompt.get("arguments") or []:
            name = argument["name"]
            about = _text(argument.get("description")) or _text(argument.get("title"))
            arguments.setdefault(name, (name, argument.get("required") is True, about))
        if not arguments:
            taken = "args?: Record<string, never>"
        else:
            optional = "" if any(need for _, need, _ in arguments.values()) else "?"
            taken = f"args{optional}: {_object_type(list(arguments.values()), indent)}"
        lines = _text(prompt.get("description")) or _text(prompt.get("title"))
        overloads.append(
            doc_comment(lines.strip().splitlines(), indent)
            + f"{indent}get(name: {_string(prompt['name'])}, {taken}): {_PROMPT_RESULT};\n"
        )
    return "".join(overloads)


def _string(text: str) -> str:
    """``text`` as a TypeScript string literal (and literal type): JSON, every character
    past ASCII escaped, so no quote, backslash, newline or line separator ends it."""
    return json.dumps(text, ensure_ascii=True)


# -- resource templates -----------------------------------------------------------------

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_OPERATORS = "+#./;?&"
# RFC 6570 section 3.2.1: operator -> (first, separator, named, if empty, reserved allowed)
_EXPANSION: dict[str, tuple[str, str, bool, str, bool]] = {
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}
# A query's parameters and a fragment: left out when not given (a URI needs neither).
_OPTIONAL_OPERATORS = ("?", "&", "#")
_RESERVED = ":/?#[]@!$&'()*+,;="
_PERCENT = re.compile(r"(%[0-9A-Fa-f]{2})")


def template_variables(template: str) -> list[tuple[str, bool]]:
    """The variables of an RFC 6570 URI template, each once, with whether a URI needs it:
    ``x://{id}{?lang}`` -> ``[("id", True), ("lang", False)]``."""
    found: dict[str, bool] = {}
    for expression in _EXPRESSION.findall(template):
        operator = expression[:1] if expression[:1] in _OPERATORS else ""
        for variable in expression[len(operator) :].split(","):
            name, _ = _varspec(variable)
            if name:
                found[name] = found.get(name, False) or operator not in _OPTIONAL_OPERATORS
    return list(found.items())


def _varspec(variable: str) -> tuple[str, str]:
    """A variable's name and prefix length (``a:3`` -> a, 3; the explode ``*`` dropped),
    read alike for the types and the expansion, whatever the order of ``:`` and ``*``."""
    spec, _, prefix = variable.partition(":")
    return spec.rstrip("*").strip(), prefix.rstrip("*").strip()


def template_parameters(template: str) -> list[str]:
    """The variables of an RFC 6570 URI template: ``file:///{path}{?a,b*}`` -> path, a, b."""
    return [name for name, _ in template_variables(template)]


def _encoded(value: str, reserved: bool) -> str:
    if not reserved:
        return quote(value, safe="")
    # Reserved expansion keeps reserved characters and percent-encoded triplets.
    return "".join(
        part if _PERCENT.fullmatch(part) else quote(part, safe=_RESERVED)
        for part in _PERCENT.split(value)
    )


def expand_template(template: str, values: Mapping[str, str]) -> str:
    """``template`` with ``values`` in (RFC 6570 levels 1 to 3, and prefixes, for string
    values): ``{id}`` percent-encodes all but unreserved characters, ``{+path}`` keeps
    reserved ones; a variable without a value is left out, as the RFC says."""

    def expand(match: re.Match[str]) -> str:
        expression = match.group(1)
        operator = expression[:1] if expression[:1] in _OPERATORS else ""
        first, separator, named, if_empty, reserved = _EXPANSION[operator]
        parts = []
        for variable in expression[len(operator) :].split(","):
            name, prefix = _varspec(variable)
            if name not in values:
                continue
            value = str(values[name])
            if prefix.isdigit():
                value = value[: int(prefix)]
            encoded = _encoded(value, reserved)
            if named:
                encoded = f"{name}{'=' + encoded if encoded else if_empty}"
            parts.append(encoded)
        return first + separator.join(parts) if parts else ""

    return _EXPRESSION.sub(expand, template)


def template_members(templates: list[dict[str, Any]] | None, indent: str = "  ") -> str | None:
    """The ``template`` overloads of a server's resource templates (None: unknown): each
    takes the URI template, or its name where no other template has that name, and an
    object of its variables (those of a query, ``{?q}``, or a fragment, ``{#f}``, optional)."""
    if templates is None:
        return None
    if not templates:
        return (
            f"{indent}template(template: never, params?: Record<string, never>): "
            "Promise<ResourceContent[]>;\n"
        )
    uris = {template["uriTemplate"] for template in templates}
    names = [_text(template.get("name")) for template in templates]
    overloads = []
    for template, name in zip(templates, names, strict=True):
        uri = template["uriTemplate"]
        chosen = [_string(uri)]
        if name and name != uri and names.count(name) == 1 and name not in uris:
            chosen.append(_string(name))
        variables = template_variables(uri)
        if variables:
            needed = "" if any(need for _, need in variables) else "?"
            params = f"params{needed}: " + _object_type(
                [(variable, need, "") for variable, need in variables], indent
            )
        else:
            params = "params?: Record<string, never>"
        about = _text(template.get("description")) or _text(template.get("title"))
        overloads.append(
            doc_comment(about.strip().splitlines(), indent)
            + f"{indent}template(template: {' | '.join(chosen)}, {params}): "
            "Promise<ResourceContent[]>;\n"
        )
    return "".join(overloads)
