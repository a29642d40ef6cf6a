"""The gateway's HTTP API (Litestar). Paths here follow the ``/<token>`` prefix.

``GET  /health``                    overall and per-server state, tool counts, search readiness
``GET  /servers``                   every configured server with its state
``GET  /servers/{server}/tools``    a server's tools: name, description, schemas, annotations
``POST /tools/{server}__{tool}``    call a tool; JSON arguments in, result per ``results.py`` out
``GET  /runtime/tools.ts``          the generated TypeScript client (``?server=&tool=`` narrow it)
``GET  /runtime/hash``              the module's content hash
``GET  /runtime/scripts.json``      the saved scripts the module offers: ``{hash, scripts}``
``GET  /scripts``                   every saved script: signature, status, errors
``POST /scripts``                   save one: ``{name, code, description?, force?}``, checked first
``POST /runtime/check``             type-check a prepared script with the warm checker
``GET  /search?q=&limit=&threshold=&server=&mode=&explain=&kind=``  ranked tools (resources,
                                    prompts with ``kind``)
``GET  /runtime/search?...``        the same, for a script's ``search()``
``GET  /runtime/describe?server=&tool=``  one tool: how to call it, JSON Schemas, TypeScript
``GET  /servers/{server}/resources`` its resources and resource templates
``POST /servers/{server}/resources/read``  ``{uri}`` or ``{template, params}``: the resource's contents
``GET  /servers/{server}/prompts``  its prompts
``POST /servers/{server}/prompts/get``  ``{name, arguments}``: the prompt's messages
``GET  /types?server=&tool=``       declarations and usage examples (for get-types)
``POST /runs``                      register a run: its id and the URL its script gets
``GET  /runs/{id}/prompt?wait=``    the call of an interactive run waiting for an answer
``POST /runs/{id}/prompt``          answer it: yes, no, always or stop (a server's question:
                                    accept with content, decline or cancel)
``POST /runs/{id}/end``             the run ended: its status, stop and calls
``POST /runs/start``                run a script in the background: ``{"run": id}``
``GET  /runs/{id}/output?stdout=&stderr=&wait=``  a background run's output from offsets
``POST /runs/{id}/stop``            stop a background run
``GET  /runs/{id}/progress?after=&wait=``  a run's progress reports
``POST /progress``                  (a run's token) its script's progress
``GET  /schema``                    this API as OpenAPI

A run's own URL (``/<run token>``) reaches ``POST /tools/*``, ``GET /runtime/*`` (its
search and describe too), ``POST /progress`` and the servers' resources and prompts only;
its calls, reads and gets are that run's (``gateway.runs``). The agent's URL reaches
``guard.AGENT_ROUTES`` and registers non-interactive runs only; prompts need the gateway's
own token.

Errors answer ``{"error": kind, "message": ..., "hint"?: ..., ...}`` with the
status of the ``toolscript.errors`` class that was raised.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
from litestar import Litestar, Request, Response
from litestar.di import Provide
from litestar.exceptions import HTTPException
from litestar.openapi import OpenAPIConfig

from toolscript import __version__
from toolscript.errors import (
    InternalError,
    RequestError,
    RequestTooLargeError,
    ToolscriptError,
    UsageError,
)
from toolscript.gateway.bodies import body_error
from toolscript.gateway.connections import MAX_CALL_VALUES, BodyBudget
from toolscript.gateway.controllers import CONTROLLERS
from toolscript.gateway.core import Gateway
from toolscript.gateway.guard import RUN_SCOPE_KEY, answer_error
from toolscript.gateway.results import RESULT_HEADER
from toolscript.gateway.toolcall import (
    call_tool_bytes,
    requested_tool,
    too_many_values,
    unless_disconnected,
)
from toolscript.plumbing.jsonvalues import json_values

__all__ = ["ToolCallFastPath", "build_app", "call_tool_bytes", "requested_tool"]

log = logging.getLogger("toolscript.gateway")

_JSON = "application/json"
DEFAULT_MAX_BODY = 8 * 1024 * 1024  # bytes of tool-call arguments
BODY_PIECE = 1024 * 1024  # bytes of a result handed to the HTTP server at a time


def _error_response(request: Request[Any, Any, Any], exc: ToolscriptError) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(exc.to_dict()), status_code=exc.status_code, media_type=_JSON
    )


_HTTP_KINDS = {
    400: "invalid_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
}


def _unexpected_response(request: Request[Any, Any, Any], exc: Exception) -> Response[bytes]:
    """Any other exception: logged with its traceback, answered as an error of the tree."""
    log.exception("gateway: %s %s failed unexpectedly", request.method, request.url.path)
    return _error_response(request, InternalError.of(exc))


def _too_deep_response(request: Request[Any, Any, Any], exc: RecursionError) -> Response[bytes]:
    """A body nested past what the decoder recurses into (``[[[[...`` sent to any route a
    run's token or the agent's reaches): the caller's error, never an internal one whose
    traceback each such request would add to the gateway's log. A request with no body
    raised one of the gateway's own: that is unexpected, and logged as such."""
    if request.headers.get("content-length", "0") in ("", "0") and not request.headers.get(
        "transfer-encoding"
    ):
        return _unexpected_response(request, exc)
    return _error_response(
        request, UsageError("the request body is not usable JSON: nested too deeply")
    )


def _http_error_response(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    """Litestar's own errors (a missing query parameter, an unknown route) in the same shape
    as every other error: ``{"error", "message", ...}``; a body they refused is a usage
    error (``bodies.body_error``)."""
    refused_body = body_error(request, exc)
    if refused_body is not None:
        return _error_response(request, refused_body)
    message = str(exc.detail)
    problems = exc.extra if isinstance(exc.extra, list) else []
    named = [
        f"{item.get('key')}: {item.get('message')}"
        for item in problems
        if isinstance(item, dict) and item.get("key")
    ]
    if named:
        message = f"{message}: {'; '.join(named)}"
    error = RequestError(
        message, status_code=exc.status_code, kind=_HTTP_KINDS.get(exc.status_code, "http_error")
    )
    return _error_response(request, error)


# Routes whose bodies hold any JSON (the Structs' ``dict[str, Any]`` fields), decoded whole
# by Litestar: 9.6 MB of `[{},{},...]` in a prompt's arguments took 220 MB, and a script's 24
# gets at once grew the gateway to 5.9 GB.
_ANY_JSON = re.compile(r"/servers/[^/]+/(resources/read|prompts/get)|/runs/[^/]+/prompt")
# what each of those bodies is, as a refusal names it
_ANY_JSON_NAMES = {
    "prompts/get": "the arguments of a prompt get",
    "resources/read": "the parameters of a resource read",
    None: "the contents of an answer to the run's prompt",
}


class ToolCallFastPath:
    """Serves ``POST /tools/{name}`` straight from ASGI; everything else goes to Litestar.

    Tool calls are the hot path: skipping the framework's routing, parsing and
    response machinery is most of the gateway's CPU per call.
    """

    def __init__(self, app: Any, gateway: Gateway, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.gateway = gateway
        self.max_body = max_body
        self.bodies = BodyBudget.for_body_limit(max_body)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        counted = _ANY_JSON.fullmatch(path) if scope["type"] == "http" else None
        if counted is not None and scope["method"] == "POST":
            await self._counted(scope, receive, send, _ANY_JSON_NAMES[counted[1]])
            return
        if scope["type"] != "http" or scope["method"] != "POST" or not path.startswith("/tools/"):
            await self.app(scope, receive, send)
            return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        try:
            name = requested_tool(scope)
        except ToolscriptError as exc:
            await answer_error(send, exc)
            return
        answered = await unless_disconnected(
            call_tool_bytes(self.gateway, name, body, scope.get(RUN_SCOPE_KEY)), receive
        )
        if answered is None:
            return  # the caller is gone (a script that ended or was stopped): call cancelled
        status, shape, payload = answered
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
        ]
        if shape:
            headers.append((RESULT_HEADER.lower().encode(), shape.encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        # In pieces: the server's write buffer copies what the socket does not take at once.
        for start in range(0, len(payload), BODY_PIECE):
            piece = payload[start : start + BODY_PIECE]
            more = start + BODY_PIECE < len(payload)
            await send({"type": "http.response.body", "body": piece, "more_body": more})
        if not payload:
            await send({"type": "http.response.body", "body": b""})

    async def _counted(self, scope: Any, receive: Any, send: Any, what: str) -> None:
        """A route taking any JSON in its body (a prompt's arguments, a resource template's
        params, an answer's content), counted as a tool call's arguments are: its JSON
        values held in ``gateway.call_values`` while Litestar serves it."""
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        run = scope.get(RUN_SCOPE_KEY)
        values = json_values(body)
        held = self.gateway.call_values
        if values > MAX_CALL_VALUES or not held.take(run, values):
            await answer_error(send, too_many_values(what, values, held, run))
            return
        given = False

        async def replayed() -> Any:
            nonlocal given
            if given:
                return await receive()  # (a disconnect)
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        try:
            await self.app(scope, replayed, send)
        finally:
            held.give_back(run, values)

    async def _read_body(self, scope: Any, receive: Any, send: Any) -> bytes | None:
        """The whole body, or None once it was refused (413, connection closed) or its
        caller went away. A body larger than ``max_body`` is refused by its Content-Length or
        as it arrives; the bodies still arriving hold no more than ``self.bodies`` allows."""
        run = scope.get(RUN_SCOPE_KEY)
        declared = next((value for key, value in scope["headers"] if key == b"content-length"), b"")
        if declared.isdigit() and int(declared) > self.max_body:
            await _refuse(send, RequestTooLargeError(self.max_body))
            return None
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                if size + len(chunk) > self.max_body:  # nothing past the limit is kept
                    await _refuse(send, RequestTooLargeError(self.max_body))
                    return None
                if not self.bodies.take(run, len(chunk)):
                    await _refuse(send, _too_many_bodies(run, self.bodies))
                    return None
                size += len(chunk)
                chunks.append(chunk)
                if not message.get("more_body"):
                    return b"".join(chunks)
        finally:
            self.bodies.give_back(run, size)


def _too_many_bodies(run: str | None, bodies: BodyBudget) -> RequestError:
    held = f"{bodies.per_run} bytes for one run" if run is not None else f"{bodies.total} bytes"
    return RequestError(
        f"tool calls whose arguments are still arriving hold more than {held} at once; "
        "make fewer large calls at the same time",
        status_code=413,
        kind="request_too_large",
    )


async def _refuse(send: Any, error: ToolscriptError) -> None:
    """``error`` as the answer, and the connection closed: the rest of the body is not read."""
    payload = msgspec.json.encode(error.to_dict())
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def build_app(gateway: Gateway) -> Litestar:
    """A Litestar app serving ``gateway`` (the ``gateway`` dependency of every controller);
    its lifespan connects and closes the servers."""
    return Litestar(
        route_handlers=list(CONTROLLERS),
        dependencies={"gateway": Provide(lambda: gateway, use_cache=True, sync_to_thread=False)},
        exception_handlers={
            ToolscriptError: _error_response,
            HTTPException: _http_error_response,
            RecursionError: _too_deep_response,
            Exception: _unexpected_response,
        },
        lifespan=[lambda app: gateway.running()],
        openapi_config=OpenAPIConfig(title="toolscript gateway", version=__version__),
        logging_config=None,
    )
