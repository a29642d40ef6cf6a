"""What MCP servers offer besides tools: resources (and their templates) and prompts, as the
gateway serves them to scripts, the CLI and the MCP face; and ``describe``, one tool's
parameters and result as JSON Schema and as TypeScript.

A resource read and a prompt get are checked like tool calls: the server's ``policy`` rules
match ``resource:URI`` and ``prompt:NAME`` (``policy.offering_name``), both read-only to the
``policy.ask`` setting; in a run they go through ``RunBook.call``, so they are counted,
replayed, approved and kept in the run log as ``server__resource:URI``.
Everything a server sends here is data: it is answered as JSON, never written into code.
"""

from __future__ import annotations

import difflib
import time
from typing import TYPE_CHECKING, Any

import anyio

from toolscript.codegen.module import render_declarations
from toolscript.codegen.offered import (
    PROMPTS,
    TEMPLATES,
    expand_template,
    template_parameters,
    template_variables,
)
from toolscript.codegen.typescript import property_key
from toolscript.errors import ApprovalRequiredError, NotFoundError, ToolDeniedError, UsageError
from toolscript.gateway.runbook import Answered, approve_commands, call_named
from toolscript.policy import offering_name
from toolscript.upstream.base import ListedOfferings, Offerings, ServerState

if TYPE_CHECKING:
    from toolscript.gateway.core import Gateway

__all__ = [
    "KINDS",
    "describe",
    "get_prompt",
    "list_prompts",
    "list_resources",
    "read_resource",
    "search_offerings",
    "template_parameters",
    "template_uri",
]

KINDS = ("tool", "resource", "prompt", "all")  # what search may look through
LISTING_TTL = 30.0  # seconds a server's listing serves search before it is asked again
# Seconds search waits for one server's listing: one that does not answer by then (a server
# hanging on prompts/list) offers nothing to search for LISTING_TTL, and holds up no search.
LISTING_WAIT = 5.0


def _offering_upstream(gateway: Gateway, server: str) -> Offerings:
    upstream = gateway.upstream(server)
    if not isinstance(upstream, Offerings):
        raise NotFoundError(
            f"server {server!r} is a tool file: it offers tools only, no resources or prompts"
        )
    if upstream.state == ServerState.DISABLED:
        raise gateway._unavailable(upstream)
    return upstream


async def list_resources(gateway: Gateway, server: str) -> dict[str, Any]:
    """``{"resources": [...], "templates": [...]}``, each template with its ``parameters``."""
    upstream = _offering_upstream(gateway, server)
    listed = await upstream.request("resources/list")
    try:
        templates = (await upstream.request("resources/templates/list")).get(
            "resourceTemplates", []
        )
    except NotFoundError:
        templates = []
    await _noted(upstream, TEMPLATES, templates)
    for template in templates:
        template["parameters"] = template_parameters(str(template.get("uriTemplate", "")))
    return {"resources": listed.get("resources", []), "templates": templates}


async def list_prompts(gateway: Gateway, server: str) -> dict[str, Any]:
    """``{"prompts": [{name, description?, arguments?}, ...]}``."""
    upstream = _offering_upstream(gateway, server)
    listed = await upstream.request("prompts/list")
    await _noted(upstream, PROMPTS, listed.get("prompts", []))
    return {"prompts": listed.get("prompts", [])}


async def _noted(upstream: Offerings, kind: str, items: list[dict[str, Any]]) -> None:
    """A live listing reaches the module's types as a list_changed would (a server that
    changed its prompts without saying so)."""
    if isinstance(upstream, ListedOfferings):
        await upstream.note_offered(kind, [dict(item) for item in items])


async def template_uri(gateway: Gateway, server: str, template: str, params: dict[str, Any]) -> str:
    """The URI one of the server's resource templates (its URI template, or its name when
    no other template has it) gives with ``params``, each percent-encoded (RFC 6570).
    Raises for a template the server does not list, a parameter it does not take, or one
    its URIs need that is missing."""
    upstream = _offering_upstream(gateway, server)
    known = upstream.offered.get(TEMPLATES) if isinstance(upstream, ListedOfferings) else None
    templates = [t for t in known or [] if isinstance(t.get("uriTemplate"), str)]
    if not any(template in (t["uriTemplate"], t.get("name")) for t in templates):
        templates = (await list_resources(gateway, server))["templates"]
    uris = [str(t.get("uriTemplate", "")) for t in templates]
    named = [u for u, t in zip(uris, templates, strict=True) if t.get("name") == template]
    if template in uris:
        uri_template = template
    elif len(named) == 1:
        uri_template = named[0]
    else:
        close = difflib.get_close_matches(template, uris, n=3, cutoff=0.5)
        raise NotFoundError(
            f"server {server!r} has no resource template {template!r}"
            + (" (several have that name: give its URI template)" if named else ""),
            hint=(f"did you mean {', '.join(map(repr, close))}? " if close else "")
            + f"`toolscript list-resources {server}` lists its templates",
        )
    variables = dict(template_variables(uri_template))
    unknown = sorted(set(params) - set(variables))
    missing = [name for name, needed in variables.items() if needed and name not in params]
    untyped = [
        f"{name} ({type(value).__name__ if value is not None else 'null'})"
        for name, value in params.items()
        if name in variables and not isinstance(value, str)
    ]
    if unknown or missing or untyped:
        said = "; ".join(
            part
            for part in (
                f"it takes no {', '.join(unknown)}" if unknown else "",
                f"it needs {', '.join(missing)}" if missing else "",
                f"its parameters are strings, not {', '.join(untyped)}" if untyped else "",
            )
            if part
        )
        raise UsageError(
            f"resource template {uri_template!r} of server {server!r}: {said}",
            hint=f"its parameters: {', '.join(variables) or 'none'}",
        )
    return expand_template(uri_template, params)


def _checked(gateway: Gateway, server: str, name: str) -> str:
    """The policy's decision for ``name`` (``resource:URI`` or ``prompt:NAME``); raises
    when it is denied."""
    decision = gateway.decision(server, name)
    if decision == "deny":
        raise ToolDeniedError(
            f"{call_named(f'{server}__{name}')} is denied by the policy of server {server!r} in "
            f"{gateway.config_file}",
            hint='scripts cannot read it; change its rule under "policy" to allow it',
        )
    return decision


async def _outside_run(gateway: Gateway, server: str, name: str) -> None:
    """A read outside any run (the CLI, the MCP face): an ``ask`` one needs an approval on
    record, as a tool call does."""
    qualified = f"{server}__{name}"
    if _checked(gateway, server, name) == "ask" and not await anyio.to_thread.run_sync(
        gateway.runs.runlog.tool_approved, qualified, gateway.server_identity(qualified)
    ):
        raise ApprovalRequiredError(
            f"{call_named(qualified)} needs approval before it is read; nothing was read",
            hint=approve_commands(None, qualified),
            call={"tool": qualified},
        )


async def _through_run(
    gateway: Gateway,
    run_id: str | None,
    server: str,
    name: str,
    arguments: dict[str, Any],
    size: int,
    fetch: Any,
) -> Answered:
    """``(status, shape, JSON body)``: in a run, through its checks and its log."""
    import msgspec

    from toolscript.errors import ToolscriptError

    async def make(_qualified: str, _arguments: dict[str, Any]) -> tuple[str, Any]:
        _checked(gateway, server, name)
        return "", await fetch()

    if run_id is not None:
        run = gateway.runs.get(run_id)
        return await gateway.runs.call(run, f"{server}__{name}", arguments, size, make)
    try:
        await _outside_run(gateway, server, name)
        return 200, "", msgspec.json.encode(await fetch())
    except ToolscriptError as exc:
        return exc.status_code, "", msgspec.json.encode(exc.to_dict())


async def read_resource(
    gateway: Gateway, server: str, uri: str, run_id: str | None = None, size: int = 0
) -> Answered:
    """``{"contents": [{uri, mimeType?, text | blob (base64)}]}`` of one resource."""
    if not uri:
        raise UsageError("give the URI of the resource to read")
    upstream = _offering_upstream(gateway, server)

    async def fetch() -> dict[str, Any]:
        read = await upstream.request("resources/read", {"uri": uri})
        return {"contents": read.get("contents", [])}

    return await _through_run(
        gateway, run_id, server, offering_name("resource", uri), {"uri": uri}, size, fetch
    )


async def get_prompt(
    gateway: Gateway,
    server: str,
    name: str,
    arguments: dict[str, Any],
    run_id: str | None = None,
    size: int = 0,
) -> Answered:
    """``{"description"?, "messages": [{role, content}]}`` of one prompt."""
    if not name:
        raise UsageError("give the name of the prompt")
    untyped = [
        f"{argument} ({type(value).__name__ if value is not None else 'null'})"
        for argument, value in arguments.items()
        if not isinstance(value, str)
    ]
    if untyped:
        raise UsageError(
            f"prompt {name!r} of server {server!r}: its arguments are strings, "
            f"not {', '.join(untyped)}",
            hint="give each argument as text",
        )
    upstream = _offering_upstream(gateway, server)

    async def fetch() -> dict[str, Any]:
        got = await upstream.request("prompts/get", {"name": name, "arguments": arguments})
        return {key: got[key] for key in ("description", "messages") if key in got}

    return await _through_run(
        gateway, run_id, server, offering_name("prompt", name), arguments, size, fetch
    )


def describe(gateway: Gateway, server: str, tool: str) -> dict[str, Any]:
    """One tool: how to call it, its parameters and result as JSON Schema and TypeScript."""
    fragments = gateway.fragments(server, tool)
    fragment = fragments[0]
    _, spec = gateway.tool(server, fragment.tool)
    return {
        "server": server,
        "tool": fragment.tool,
        "call": f"tools.{fragment.namespace}.{fragment.function}",
        "description": spec.get("description", ""),
        "inputSchema": spec.get("inputSchema") or {"type": "object"},
        "outputSchema": spec.get("outputSchema"),
        "policy": gateway.decision(server, fragment.tool),
        "typescript": render_declarations([fragment]),
        "example": fragment.example,
    }


_LISTINGS: dict[tuple[int, str, str], tuple[float, list[dict[str, Any]]]] = {}


async def _listing(gateway: Gateway, server: str, kind: str) -> list[dict[str, Any]]:
    """A connected server's resources (templates included) or prompts, kept LISTING_TTL
    seconds for search; [] for a server that offers none or cannot answer now."""
    key = (id(gateway), server, kind)
    kept = _LISTINGS.get(key)
    if kept is not None and time.monotonic() - kept[0] < LISTING_TTL:
        return kept[1]
    items: list[dict[str, Any]] = []
    try:
        with anyio.fail_after(LISTING_WAIT):
            if kind == "resource":
                listed = await list_resources(gateway, server)
                items = listed["resources"] + listed["templates"]
            else:
                items = (await list_prompts(gateway, server))["prompts"]
    except Exception:  # search answers with what the other servers offer
        items = []
    _LISTINGS[key] = (time.monotonic(), items)
    return items


async def search_offerings(
    gateway: Gateway, query: str, kind: str, limit: int, server: str | None = None
) -> list[dict[str, Any]]:
    """Resources and prompts ranked for ``query`` by the gateway's keyword ranking (BM25 over
    their names, titles, URIs and descriptions); each hit says how a script reads it."""
    from toolscript.search.lexical import LexicalIndex
    from toolscript.search.text import documents_for

    kinds = ("resource", "prompt") if kind == "all" else (kind,)
    servers = [server] if server else list(gateway.upstreams)
    asked = [
        (name, each)
        for name in servers
        if isinstance(upstream := gateway.upstreams.get(name), Offerings)
        and upstream.state == ServerState.CONNECTED
        for each in kinds
    ]
    listings: dict[tuple[str, str], list[dict[str, Any]]] = {}

    async def list_one(name: str, each: str) -> None:
        listings[name, each] = await _listing(gateway, name, each)

    async with anyio.create_task_group() as tasks:  # each server at once, none waited on long
        for name, each in asked:
            tasks.start_soon(list_one, name, each)
    found = [(name, each, item) for name, each in asked for item in listings[name, each]]
    if not found:
        return []
    documents = [
        documents_for(
            name,
            "",
            [
                {
                    "name": str(item.get("name", "")),
                    "description": " ".join(
                        str(item.get(field, ""))
                        for field in ("title", "description", "uri", "uriTemplate")
                    ),
                }
            ],
        )[0]
        for name, _, item in found
    ]
    scores = LexicalIndex(documents).scores(query)
    ranked = sorted(scores.items(), key=lambda pair: -pair[1])[:limit]
    namespaces = namespaces_of(gateway)
    return [
        _offering_hit(*found[index], score, namespaces.get(found[index][0], ""))
        for index, score in ranked
        if score > 0
    ]


def namespaces_of(gateway: Gateway) -> dict[str, str]:
    """Each server's name in scripts (``tools.<namespace>``, ``resources.<namespace>``)."""
    from toolscript.codegen.naming import assign_names

    enabled = [name for name, up in gateway.upstreams.items() if not up.config.disabled]
    named = dict(assign_names(enabled, what="server").names)
    return named | {fragment.server: fragment.namespace for fragment in gateway.artifacts.fragments}


def _offering_hit(
    server: str, kind: str, item: dict[str, Any], score: float, namespace: str
) -> dict[str, Any]:
    """A hit as search answers it; ``call`` quotes what the server sent as JSON strings."""
    quoted = _ts_string
    if kind == "prompt":
        name = str(item.get("name", ""))
        call = f"prompts.{namespace}.get({quoted(name)}, {{ ... }})"
    elif "uriTemplate" in item:
        name = str(item["uriTemplate"])
        params = ", ".join(f"{property_key(p)}: ..." for p in template_parameters(name))
        call = (
            f"resources.{namespace}.template({quoted(name)}, {{{f' {params} ' if params else ''}}})"
        )
    else:
        name = str(item.get("uri", ""))
        call = f"resources.{namespace}.read({quoted(name)})"
    return {
        "kind": kind,
        "server": server,
        "tool": name,
        "name": str(item.get("name", "")),
        "call": call,
        "description": str(item.get("description") or item.get("title") or ""),
        "score": round(score, 4),
    }


def _ts_string(text: str) -> str:
    import json

    return json.dumps(text)
