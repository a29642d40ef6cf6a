"""Repair what servers that bend the MCP spec send, so one bad entry never costs a whole server.

Pure functions over the JSON a server sent, before the SDK's models see it: a tool
list keeps every usable tool (a missing or non-object ``inputSchema`` becomes an
object schema that takes any arguments, a property that is no schema takes any value;
a nameless or duplicate tool is skipped), and a call result keeps whatever content can
be read. A tool list is made to pass the stricter model of every protocol version the
SDK checks a listing against (``mcp_types.methods.SERVER_RESULTS``), not only the
version-free ``mcp_types.Tool``. Each repair is described by one warning line naming
the tool.
"""

from __future__ import annotations

import json
import typing
from functools import cache
from typing import Any

import mcp_types
from mcp_types.methods import SERVER_RESULTS
from pydantic import BaseModel, TypeAdapter, ValidationError

__all__ = [
    "ANY_ARGUMENTS",
    "CAPABILITIES_REPAIRED",
    "repair_call_result",
    "repair_initialize",
    "repair_listing",
    "repair_tool_list",
]

ANY_ARGUMENTS: dict[str, Any] = {"type": "object", "additionalProperties": True}
# How the warning of an initialize whose capabilities were missing (or no object) begins.
CAPABILITIES_REPAIRED = "initialize: capabilities"

_CONTENT_TYPES = {"text", "image", "audio", "resource", "resource_link"}


def repair_tool_list(result: Any) -> tuple[dict[str, Any], list[str]]:
    """A ``tools/list`` result the SDK accepts, and one warning per repaired or skipped tool."""
    if not isinstance(result, dict):
        return {"tools": []}, [
            f"the tool list is not an object ({type(result).__name__}); no tools"
        ]
    said: list[str | int] = []  # a warning, or the index of a tool whose problems it says
    raw_tools = result.get("tools")
    if not isinstance(raw_tools, list):
        said.append("the tool list has no 'tools' array; no tools")
        raw_tools = []
    tools: list[dict[str, Any]] = []
    problems: list[list[str]] = []  # each tool's
    seen: set[str] = set()
    for position, raw in enumerate(raw_tools):
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name.strip():
            said.append(f"tool #{position + 1} has no name; skipped")
            continue
        if name in seen:
            said.append(f"tool {name!r} is listed twice; the second one is skipped")
            continue
        seen.add(name)
        assert isinstance(raw, dict)
        tool, found = _repair_tool(raw)
        tool, dropped = _conform(mcp_types.Tool, tool, replaceable={"inputSchema": ANY_ARGUMENTS})
        said.append(len(tools))
        tools.append(tool)
        problems.append(found + [f"{field} is not valid MCP; ignored" for field in dropped])
    # The SDK checks a listing against its protocol version's models too, stricter than
    # mcp_types.Tool: the whole list at once (the usual case passes), else tool by tool.
    for model, adapter in _listed_tool_checks():
        if tools and not _passes(adapter, tools):
            for index, tool in enumerate(tools):
                tools[index], dropped = _conform(
                    model, tool, replaceable={"inputSchema": ANY_ARGUMENTS}
                )
                problems[index] += [f"{field} is not valid MCP; ignored" for field in dropped]
    warnings = []
    for item in said:
        if isinstance(item, str):
            warnings.append(item)
        elif problems[item]:
            named = tools[item]["name"]
            warnings.append(f"tool {named!r}: " + "; ".join(dict.fromkeys(problems[item])))
    repaired = {key: value for key, value in result.items() if key != "tools"}
    repaired["tools"] = tools
    cursor = repaired.get("nextCursor")
    if cursor is not None and not isinstance(cursor, str):
        warnings.append("the tool list's nextCursor is not a string; later pages are not fetched")
        repaired.pop("nextCursor")
    return repaired, warnings


@cache
def _listed_tool_checks() -> tuple[tuple[type[BaseModel], TypeAdapter[Any]], ...]:
    """The tool model of each protocol version's ``tools/list`` result, as the SDK checks
    a listing (one tool it refuses would cost the server all its tools), with a check of a
    whole list of them."""
    return tuple(
        (model, TypeAdapter(list[model]))  # type: ignore[valid-type]
        for model in _listed_models("tools/list", "tools")
    )


def _passes(adapter: TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value, by_name=False)
    except ValidationError:
        return False
    return True


@cache
def _listed_models(method: str, key: str) -> tuple[type[BaseModel], ...]:
    """The model of an entry of ``key`` in each protocol version's ``method`` result."""
    models: dict[type[BaseModel], None] = {}
    for (listed, _version), listing in SERVER_RESULTS.items():
        fields = getattr(listing, "model_fields", {})
        for name, field in fields.items() if listed == method else ():
            if key in (name, field.alias):
                for model in typing.get_args(field.annotation):
                    if isinstance(model, type) and issubclass(model, BaseModel):
                        models[model] = None
    return tuple(models)


# What a listing other than tools holds: its key, what an entry is called, and the field
# that names it (``upstream/limits.py`` reads the same).
_OTHER_LISTINGS: dict[str, tuple[str, str, str, type[BaseModel]]] = {
    "prompts/list": ("prompts", "prompt", "name", mcp_types.Prompt),
    "resources/list": ("resources", "resource", "uri", mcp_types.Resource),
    "resources/templates/list": (
        "resourceTemplates",
        "resource template",
        "uriTemplate",
        mcp_types.ResourceTemplate,
    ),
}


def repair_initialize(result: Any) -> tuple[Any, list[str]]:
    """An ``initialize`` result the SDK accepts when a server left out what clients such
    as Claude Code do without (``capabilities``, ``serverInfo`` or its ``version``), and
    what was filled in; a result with no ``protocolVersion`` is left to fail."""
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        return result, []
    repaired, problems = dict(result), []
    if not isinstance(repaired.get("capabilities"), dict):
        what = "missing" if "capabilities" not in repaired else "not an object"
        repaired["capabilities"] = {}
        problems.append(
            f"{CAPABILITIES_REPAIRED} {what}; its prompts and resources are asked for, and"
            " served where it answers"
        )
    info = repaired.get("serverInfo")
    info = dict(info) if isinstance(info, dict) else {}
    for field, stand_in in (("name", "unnamed"), ("version", "unknown")):
        if not isinstance(info.get(field), str):
            info[field] = stand_in
            problems.append(f"initialize: serverInfo.{field} missing; served as {stand_in!r}")
    repaired["serverInfo"] = info
    models: tuple[type[BaseModel], ...] = (
        mcp_types.InitializeResult,
        *_result_models("initialize"),
    )
    for model in models:
        repaired, dropped = _conform(model, repaired, replaceable={"capabilities": {}})
        problems += [f"initialize: {field} is not valid MCP; ignored" for field in dropped]
    return (repaired, problems) if problems else (result, [])


@cache
def _result_models(method: str) -> tuple[type[BaseModel], ...]:
    """The model of each protocol version's ``method`` result."""
    models: dict[type[BaseModel], None] = {}
    for (listed, _version), model in SERVER_RESULTS.items():
        if listed == method and isinstance(model, type) and issubclass(model, BaseModel):
            models[model] = None
    return tuple(models)


def repair_listing(method: str, result: Any) -> tuple[Any, list[str]]:
    """A listing's result (``tools/list``, ``prompts/list``, ``resources/list``,
    ``resources/templates/list``) the SDK accepts, and one warning per repaired or skipped
    entry; an ``initialize`` result repaired (``repair_initialize``); any other as it is."""
    if method == "tools/list":
        return repair_tool_list(result)
    if method == "initialize":
        return repair_initialize(result)
    if method not in _OTHER_LISTINGS or not isinstance(result, dict):
        return result, []
    key, what, identity, monolith = _OTHER_LISTINGS[method]
    entries = result.get(key)
    if not isinstance(entries, list):
        return {**result, key: []}, [f"the {what} list has no {key!r} array; none"]
    models = (monolith, *_listed_models(method, key))
    kept: list[Any] = []
    warnings: list[str] = []
    for position, raw in enumerate(entries):
        named = raw.get(identity) if isinstance(raw, dict) else None
        if not isinstance(named, str) or not named.strip():
            warnings.append(f"{what} #{position + 1} has no {identity}; skipped")
            continue
        assert isinstance(raw, dict)
        entry, problems = raw, []
        for model in models:
            entry, dropped = _conform(model, entry, replaceable={})
            problems += [f"{field} is not valid MCP; ignored" for field in dropped]
        if not all(_valid(model, entry) for model in models):
            warnings.append(f"{what} {named!r} is not valid MCP; skipped")
            continue
        kept.append(entry)
        if problems:
            warnings.append(f"{what} {named!r}: " + "; ".join(problems))
    return {**result, key: kept}, warnings


def _valid(model: type[BaseModel], data: dict[str, Any]) -> bool:
    try:
        model.model_validate(data, by_name=False)
    except ValidationError:
        return False
    return True


def _repair_tool(raw: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    tool = dict(raw)
    problems: list[str] = []
    schema = tool.get("inputSchema")
    fixed, note = _object_schema(schema)
    if fixed is None:
        what = "missing" if schema is None else _describe_schema(schema)
        problems.append(f"inputSchema is {what}; served as an object that takes any arguments")
        tool["inputSchema"] = dict(ANY_ARGUMENTS)
    elif note:
        problems.append(f"inputSchema: {note}")
        tool["inputSchema"] = fixed
    if "outputSchema" in tool:
        output = tool["outputSchema"]
        fixed_output, note = _object_schema(output)
        if fixed_output is None:
            if output is not None:
                problems.append(f"outputSchema is {_describe_schema(output)}; ignored")
            tool.pop("outputSchema")
        else:
            if note:
                problems.append(f"outputSchema: {note}")
            tool["outputSchema"] = fixed_output
    for field in ("description", "title"):
        value = tool.get(field)
        if value is not None and not isinstance(value, str):
            problems.append(f"{field} is not a string; ignored")
            tool.pop(field)
    if "annotations" in tool and not isinstance(tool["annotations"], dict | None):
        problems.append("annotations are not an object; ignored")
        tool.pop("annotations")
    return tool, problems


def _object_schema(schema: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``schema`` when it is a usable object schema, else a repaired copy (with what was
    repaired) or None when nothing of it can be used."""
    if not isinstance(schema, dict) or not schema:
        return None, None
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, dict):
        return None, None
    notes = []
    if isinstance(properties, dict):
        unusable = {
            key: value for key, value in properties.items() if not isinstance(value, dict | bool)
        }
        if unusable:
            schema = {**schema, "properties": {**properties, **{key: {} for key in unusable}}}
            named = ", ".join(
                f"{json.dumps(key)} ({json.dumps(value, default=str)[:40]})"
                for key, value in list(unusable.items())[:5]
            )
            more = f" and {len(unusable) - 5} more" if len(unusable) > 5 else ""
            notes.append(f"not a schema: property {named}{more}; it takes any value")
    if "$schema" in schema and not isinstance(schema["$schema"], str):
        schema = {key: value for key, value in schema.items() if key != "$schema"}
        notes.append('its "$schema" is not a string; ignored')
    required = schema.get("required")
    if required is not None and not (
        isinstance(required, list) and all(isinstance(item, str) for item in required)
    ):
        schema = {key: value for key, value in schema.items() if key != "required"}
        notes.append('its "required" is not a list of names; ignored')
    kind = schema.get("type")
    if kind is None and isinstance(properties, dict):
        schema = {"type": "object", **schema}
        notes.append('it lacks "type": "object"; served as an object schema')
    elif kind != "object":
        return None, None
    return schema, "; ".join(notes) or None


def _describe_schema(schema: Any) -> str:
    if not isinstance(schema, dict):
        return f"not an object ({type(schema).__name__})"
    if not schema:
        return "empty ({})"
    properties = schema.get("properties")
    if properties is not None and not isinstance(properties, dict):
        return f'of "properties" that are not an object ({type(properties).__name__})'
    if "type" not in schema:
        return 'without "type"'
    return f"of type {json.dumps(schema.get('type'))}, not an object"


def repair_call_result(result: Any, *, conform: bool = True) -> tuple[dict[str, Any], list[str]]:
    """A ``tools/call`` result whose content can be read, and what was repaired; with
    ``conform`` also every field the SDK's model would refuse is dropped (it costs a
    validation, which results that go to the gateway as JSON do without)."""
    if not isinstance(result, dict):
        return {"content": [_text(result)]}, ["the result is not an object; served as text"]
    repaired = dict(result)
    problems: list[str] = []
    content = repaired.get("content")
    if content is None:
        repaired["content"] = []
        if "structuredContent" not in repaired:
            problems.append("the result has no content")
    elif not isinstance(content, list):
        repaired["content"] = [_text(content)]
        problems.append("content is not a list; served as text")
    else:
        items = []
        for item in content:
            if _readable_content(item):
                items.append(item)
            else:
                items.append(_text(item))
                problems.append("a content item is not valid MCP content; served as text")
        repaired["content"] = items
    structured = repaired.get("structuredContent")
    if structured is not None and not isinstance(structured, dict):
        repaired["structuredContent"] = {"result": structured}
        problems.append("structuredContent is not an object; served as {result: ...}")
    error = repaired.get("isError")
    if error is not None and not isinstance(error, bool):
        repaired["isError"] = bool(error)
    if conform:
        repaired, dropped = _conform(mcp_types.CallToolResult, repaired, replaceable={})
        problems += [f"{field} is not valid MCP; ignored" for field in dropped]
    return repaired, problems


def _conform(
    model: type[BaseModel], data: dict[str, Any], *, replaceable: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """``data`` less the top-level fields ``model`` rejects (content items become text and
    fields in ``replaceable`` take their stand-in), with the names of what was changed."""
    changed: list[str] = []
    for _ in range(3):
        try:
            model.model_validate(data, by_name=False)
        except ValidationError as exc:
            locations = [error["loc"] for error in exc.errors() if error["loc"]]
        else:
            return data, list(dict.fromkeys(changed))
        data = dict(data)
        for location in locations:
            field = str(location[0])
            if field == "content" and len(location) > 1 and isinstance(location[1], int):
                items = list(data["content"])
                item = items[location[1]]
                if not (
                    isinstance(item, dict)
                    and item.get("type") == "text"
                    and set(item) <= {"type", "text"}
                ):
                    text = item.get("text") if isinstance(item, dict) else None
                    items[location[1]] = (
                        {"type": "text", "text": text} if isinstance(text, str) else _text(item)
                    )
                    data["content"] = items
                    changed.append(f"content item {location[1] + 1}")
            elif field in replaceable:
                data[field] = dict(replaceable[field])
                changed.append(field)
            elif field in data and field not in ("name", "content"):
                data.pop(field)
                changed.append(field)
    return data, list(dict.fromkeys(changed))


def _readable_content(item: Any) -> bool:
    if not isinstance(item, dict) or item.get("type") not in _CONTENT_TYPES:
        return False
    kind = item["type"]
    if kind == "text":
        return isinstance(item.get("text"), str)
    if kind in ("image", "audio"):
        return isinstance(item.get("data"), str) and isinstance(item.get("mimeType"), str)
    if kind == "resource":
        resource = item.get("resource")
        return isinstance(resource, dict) and isinstance(resource.get("uri"), str)
    return isinstance(item.get("uri"), str) and isinstance(item.get("name"), str)


def _text(value: Any) -> dict[str, Any]:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return {"type": "text", "text": text}
