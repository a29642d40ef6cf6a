"""One tool call over HTTP: the tool a ``POST /tools/...`` path names, and the call's
status, result shape and JSON body (errors of the tree included). The ASGI fast path
(``app.ToolCallFastPath``) and the Litestar route (``controllers.ToolsController``) share it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any
from urllib.parse import unquote_to_bytes

import msgspec

from toolscript.errors import (
    ArgumentValidationError,
    InternalError,
    RequestError,
    ToolNotFoundError,
    ToolscriptError,
    tool_named,
)
from toolscript.gateway.connections import MAX_CALL_VALUES, BodyBudget
from toolscript.gateway.core import SEPARATOR, Gateway
from toolscript.plumbing.jsonvalues import json_values

__all__ = [
    "MAX_JSON_DEPTH",
    "TOOLS_PREFIX",
    "call_tool_bytes",
    "requested_tool",
    "too_many_values",
    "unless_disconnected",
]

log = logging.getLogger("toolscript.gateway")


MAX_JSON_DEPTH = 64  # tool arguments nest far less; deeper input is an attack or a bug


def _too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests deeper than ``limit`` (iteratively: no recursion to exhaust)."""
    level = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return any(isinstance(item, dict | list) and item for item in level)


async def call_tool_bytes(
    gateway: Gateway, name: str, body: bytes, run_id: str | None = None
) -> tuple[int, str, bytes]:
    """``(status, result shape or "", JSON body)`` of one tool call; errors included. A call
    of a run goes through the run's checks and log (``gateway/runbook.py``). Its decoded
    arguments count in ``gateway.call_values`` while it is under way."""
    values = json_values(body)
    held = gateway.call_values
    if values > MAX_CALL_VALUES or not held.take(run_id, values):
        error = too_many_values(f"arguments for {tool_named(name)}", values, held, run_id)
        return error.status_code, "", msgspec.json.encode(error.to_dict())
    try:
        return await _call_tool_bytes(gateway, name, body, run_id)
    finally:
        held.give_back(run_id, values)


def too_many_values(what: str, values: int, held: BodyBudget, run_id: str | None) -> RequestError:
    """The refusal of a body of ``values`` JSON values (``what``: whose they are) past
    ``MAX_CALL_VALUES`` or past what ``held`` has room for."""
    if values > MAX_CALL_VALUES:
        message = (
            f"{what} hold more than {MAX_CALL_VALUES:,} JSON values "
            f"(about {values:,}); pass a large list as one string, or split it over calls"
        )
    else:
        of_run = held.runs.get(run_id, 0) if run_id is not None else 0
        if run_id is not None and of_run + values > held.per_run:
            bound, advice = f"{held.per_run:,} JSON values for one run", "make fewer"
        else:  # every caller's together (other runs' calls, it may be): said so, not the run's
            bound, advice = f"{held.total:,} JSON values", "try again later, or make fewer"
        # (what was refused, then the budget it shares with every JSON body under way)
        message = (
            f"{what} refused: with the tool calls, prompt gets and resource reads under way, "
            f"they would hold more than {bound} at once; {advice} large requests at the same time"
        )
    return RequestError(message, status_code=413, kind="request_too_large")


async def _call_tool_bytes(
    gateway: Gateway, name: str, body: bytes, run_id: str | None
) -> tuple[int, str, bytes]:
    try:
        try:
            arguments = msgspec.json.decode(body) if body.strip() else {}
        except (msgspec.DecodeError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise ArgumentValidationError(
                f"the request body is not usable JSON: {reason}",
                errors=[{"path": "/", "message": reason}],
            ) from None
        if _too_deep(arguments):
            raise ArgumentValidationError(
                f"arguments for {tool_named(name)} nest deeper than {MAX_JSON_DEPTH} levels",
                errors=[{"path": "/", "message": f"deeper than {MAX_JSON_DEPTH} levels"}],
            )
        if not isinstance(arguments, dict):
            raise ArgumentValidationError(
                f"arguments for {tool_named(name)} must be a JSON object",
                errors=[{"path": "/", "message": "expected an object"}],
            )
        await gateway.start_deferred(name.partition(SEPARATOR)[0])  # exec's gateway: --needs
        await gateway.connecting_waited(name.partition(SEPARATOR)[0])
        name = gateway.spelled_tool(name)
        if run_id is not None:
            run = gateway.runs.get(run_id)
            make = functools.partial(gateway.make_call, agents=run.agents)
            return await gateway.runs.call(run, name, arguments, len(body), make)
        shape, value = await gateway.call(name, arguments)
    except ToolscriptError as exc:
        return exc.status_code, "", msgspec.json.encode(exc.to_dict())
    except Exception as exc:  # logged with its cause; the caller gets an error of the tree
        log.exception("gateway: the call of %s failed unexpectedly", tool_named(name))
        return 500, "", msgspec.json.encode(InternalError.of(exc).to_dict())
    return 200, shape, msgspec.json.encode(value)


TOOLS_PREFIX = "/tools/"


def requested_tool(scope: Any) -> str:
    """The one tool a ``POST /tools/...`` names: the raw path's single segment after
    ``/tools/``, percent-decoded once; the gateway then matches it exactly. A path of more
    segments (``a/../b``, which a client may have resolved to another tool already), a
    query (``a?b``) or a name that is not UTF-8 names no tool and is refused."""
    raw = scope.get("raw_path")
    if isinstance(raw, bytes):
        raw, _, query = raw.partition(b"?")  # some clients leave the query on raw_path
        rest = raw[len(TOOLS_PREFIX) :] if raw.startswith(TOOLS_PREFIX.encode()) else b"/"
    else:  # no raw path from the server: the decoded one, where %2F is already a "/"
        rest, query = str(scope.get("path", ""))[len(TOOLS_PREFIX) :].encode(), b""
    query = query or scope.get("query_string") or b""
    name = ""
    if b"/" not in rest and b"#" not in rest and not query:
        with contextlib.suppress(UnicodeDecodeError):
            name = unquote_to_bytes(rest).decode("utf-8")
    if not name:
        raise ToolNotFoundError(
            "a tool call's path must be /tools/ then one tool name, SERVER__TOOL, with any "
            "/ ? # or % in it percent-encoded (encodeURIComponent) and no query",
            hint="call tools through the generated module (tools.server.tool(...))",
        )
    return name


async def unless_disconnected(call: Any, receive: Any) -> Any:
    """The result of ``call``, or None when the client disconnects first; then the call is
    cancelled, which tells the server (``notifications/cancelled``) or stops a local tool."""
    import asyncio

    work = asyncio.ensure_future(call)
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait((work, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not work.done():
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work
        gone.cancel()
    return work.result() if not work.cancelled() else None


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
