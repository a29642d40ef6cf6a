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
``GET  /search?q=&limit=&threshold=&server=&mode=&explain=``  ranked tools
``GET  /types?server=&tool=``       declarations and usage examples (for get-types)
``POST /runs``                      register a run: its id and the URL its script gets
``GET  /runs/{id}/prompt?wait=``    the call of an interactive run waiting for an answer
``POST /runs/{id}/prompt``          answer it: yes, no, always or stop
``POST /runs/{id}/end``             the run ended: its status, stop and calls
``GET  /schema``                    this API as OpenAPI

A run's own URL (``/<run token>``) reaches ``POST /tools/*`` and ``GET /runtime/*`` only;
its calls are that run's (``gateway.runs``). The agent's URL reaches ``guard.AGENT_ROUTES``
and registers non-interactive runs only; prompts need the gateway's own token.

Errors answer ``{"error": kind, "message": ..., "hint"?: ..., ...}`` with the
status of the ``toolscript.errors`` class that was raised.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from typing import Any
from urllib.parse import unquote_to_bytes

import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.exceptions import HTTPException
from litestar.openapi import OpenAPIConfig
from litestar.params import FromPath, FromQuery

from toolscript import __version__
from toolscript.codegen.module import render_declarations, render_module
from toolscript.errors import (
    ArgumentValidationError,
    InternalError,
    RequestError,
    RequestTooLargeError,
    ToolNotFoundError,
    ToolscriptError,
    UsageError,
)
from toolscript.gateway.connections import BodyBudget
from toolscript.gateway.core import SEPARATOR, Gateway, split_tool_name
from toolscript.gateway.guard import (
    AGENT,
    CREDENTIAL_SCOPE_KEY,
    RUN_SCOPE_KEY,
    agent_refused,
    answer_error,
)
from toolscript.gateway.results import RESULT_HEADER
from toolscript.gateway.runbook import DEFAULT_MAX_CALLS
from toolscript.search.engine import FUSIONS, MODES, readings
from toolscript.search.needs import is_implied

__all__ = ["build_app"]

log = logging.getLogger("toolscript.gateway")

_JSON = "application/json"
DEFAULT_MAX_BODY = 8 * 1024 * 1024  # bytes of tool-call arguments
BODY_PIECE = 1024 * 1024  # bytes of a result handed to the HTTP server at a time


def _error_response(request: Request[Any, Any, Any], exc: ToolscriptError) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(exc.to_dict()), status_code=exc.status_code, media_type=_JSON
    )


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


def _http_error_response(request: Request[Any, Any, Any], exc: HTTPException) -> Response[bytes]:
    """Litestar's own errors (a missing query parameter, an unknown route) in the same shape
    as every other error: ``{"error", "message", ...}``."""
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


async def call_tool_bytes(
    gateway: Gateway, name: str, body: bytes, run_id: str | None = None
) -> tuple[int, str, bytes]:
    """``(status, result shape or "", JSON body)`` of one tool call; errors included. A call
    of a run goes through the run's checks and log (``gateway/runbook.py``)."""
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
                f"arguments for {name} nest deeper than {MAX_JSON_DEPTH} levels",
                errors=[{"path": "/", "message": f"deeper than {MAX_JSON_DEPTH} levels"}],
            )
        if not isinstance(arguments, dict):
            raise ArgumentValidationError(
                f"arguments for {name} must be a JSON object",
                errors=[{"path": "/", "message": "expected an object"}],
            )
        await gateway.start_deferred(name.partition(SEPARATOR)[0])  # exec's gateway: --needs
        if run_id is not None:
            run = gateway.runs.get(run_id)
            return await gateway.runs.call(run, name, arguments, len(body), gateway.make_call)
        shape, value = await gateway.call(name, arguments)
    except ToolscriptError as exc:
        return exc.status_code, "", msgspec.json.encode(exc.to_dict())
    except Exception as exc:  # logged with its cause; the caller gets an error of the tree
        log.exception("gateway: the call of %s failed unexpectedly", name)
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


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(body) if body.strip() else {}
    except msgspec.DecodeError as exc:
        raise UsageError(f"the request body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("expected a JSON object")
    return value


def _script_name(value: Any) -> tuple[str, str]:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value[0], value[1]
    return "inline.ts", "inline.ts"


_CALLS: dict[str, dict[tuple[str, str], str]] = {}


def _calls(gateway: Gateway) -> dict[tuple[str, str], str]:
    """``(server, tool)`` -> ``tools.namespace.function``, for the module being served."""
    digest = gateway.artifacts.module_hash
    found = _CALLS.get(digest)
    if found is None:
        found = {
            (f.server, f.tool): f"tools.{f.namespace}.{f.function}"
            for f in gateway.artifacts.fragments
        }
        _CALLS.clear()
        _CALLS[digest] = found
    return found


async def _unless_disconnected(call: Any, receive: Any) -> Any:
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
        answered = await _unless_disconnected(
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
    """A Litestar app serving ``gateway``; its lifespan connects and closes the servers."""

    @get("/health", sync_to_thread=False)
    def health() -> dict[str, Any]:
        """Overall state, per-server state, tool counts and search readiness."""
        return gateway.health()

    @get("/servers", sync_to_thread=False)
    def servers() -> list[dict[str, Any]]:
        """Every configured server with its live state."""
        return [up.status() for up in gateway.upstreams.values()]

    @get("/servers/{server:str}/tools", sync_to_thread=False)
    def server_tools(server: FromPath[str]) -> list[dict[str, Any]]:
        """A server's tools with their input and output schemas and annotations."""
        return gateway.server_tools(server)

    @post("/tools/{name:path}", status_code=200)
    async def call_tool(request: Request[Any, Any, Any]) -> Response[bytes]:
        """Call ``server__tool`` with the JSON body as arguments (see ``results.py``)."""
        name = requested_tool(request.scope)
        run_id: Any = request.scope.get(RUN_SCOPE_KEY)
        status, shape, payload = await call_tool_bytes(
            gateway, name, await request.body(), run_id if isinstance(run_id, str) else None
        )
        headers = {RESULT_HEADER: shape} if shape else {}
        return Response(content=payload, status_code=status, media_type=_JSON, headers=headers)

    @post("/runs", status_code=200)
    async def register_run(request: Request[Any, Any, Any]) -> dict[str, Any]:
        """Register a run: ``{"script_hash", "origin", "interactive", "max_calls", "resume"}``
        in (all optional); ``{"id", "token", "resumed_from"}`` out. The script gets the
        gateway's URL with the token in place of the gateway's own."""
        body = _json_object(await request.body())
        by_agent = request.scope.get(CREDENTIAL_SCOPE_KEY) == AGENT
        if by_agent and body.get("interactive"):
            # An interactive run's prompts are answered with the owner token: a run the agent
            # registers stops at a call that needs approval, for a person to approve.
            raise agent_refused()
        max_calls = body.get("max_calls", DEFAULT_MAX_CALLS)
        if not isinstance(max_calls, int) or max_calls < 1:
            raise UsageError("max_calls must be a positive integer")
        run = await gateway.runs.register(
            script_hash=str(body.get("script_hash") or ""),
            origin=str(body.get("origin") or "http"),
            interactive=bool(body.get("interactive")),
            max_calls=max_calls,
            resume=str(body["resume"]) if body.get("resume") else None,
            script=str(body.get("script") or ""),
            script_name=_script_name(body.get("script_name")),
            client_pid=body["pid"] if isinstance(body.get("pid"), int) else None,
        )
        return {"id": run.id, "token": run.token, "resumed_from": run.resumed_from or None}

    @get("/runs/{run_id:str}/prompt")
    async def run_prompt(run_id: FromPath[str], wait: FromQuery[float] = 0.0) -> dict[str, Any]:
        """The call of an interactive run that waits for the user's answer (``wait``: seconds
        to wait for one); ``{"prompt": call or null, "ended": bool}``."""
        call = await gateway.runs.wait_prompt(run_id, max(0.0, min(wait, 60.0)))
        return {"prompt": call, "ended": gateway.runs.get(run_id).ended}

    @post("/runs/{run_id:str}/prompt", status_code=200)
    async def answer_prompt(
        run_id: FromPath[str], request: Request[Any, Any, Any]
    ) -> dict[str, Any]:
        """``{"seq", "answer": "yes" | "no" | "always" | "stop"}``; ``{"answered": bool}``."""
        body = _json_object(await request.body())
        seq = body.get("seq")
        if not isinstance(seq, int):
            raise UsageError("give seq, the number of the call answered")
        return {"answered": gateway.runs.answer(run_id, seq, str(body.get("answer")))}

    @get("/runs/{run_id:str}/script")
    async def run_script(run_id: FromPath[str]) -> dict[str, str]:
        """The script of a run that stopped for approval (what ``exec --resume`` runs)."""
        return await gateway.runs.stopped_script(run_id)

    @post("/runs/{run_id:str}/end", status_code=200)
    async def end_run(run_id: FromPath[str], request: Request[Any, Any, Any]) -> dict[str, Any]:
        """``{"exit": code}`` in; the run's status, the error it stopped with and its calls."""
        body = _json_object(await request.body())
        code = body.get("exit")
        if (
            request.scope.get(CREDENTIAL_SCOPE_KEY) == AGENT
            and gateway.runs.get(run_id).interactive
        ):
            raise agent_refused()  # ending it would answer a person's open prompt
        run = await gateway.runs.end(run_id, code if isinstance(code, int) else None)
        return {
            "id": run.id,
            "status": run.status,
            "stopped": run.stopped.to_dict() if run.stopped is not None else None,
            "exit_code": run.stopped.exit_code if run.stopped is not None else None,
            "resumed_from": run.resumed_from or None,
            "replayed": run.replayed,
            "calls": gateway.runs.trace(run),
        }

    @get("/runtime/tools.ts", sync_to_thread=False)
    def runtime_module(
        request: Request[Any, Any, Any],
        server: FromQuery[str | None] = None,
        tool: FromQuery[str | None] = None,
    ) -> Response[bytes]:
        """The generated TypeScript client; ``?server=`` and ``&tool=`` narrow it."""
        if server is None and tool is None:
            text = gateway.artifacts.module
            etag = gateway.artifacts.module_hash
        else:
            text = render_module(gateway.fragments(server, tool))
            etag = hashlib.sha256(text.encode()).hexdigest()[:16]
        quoted = f'"{etag}"'
        if request.headers.get("if-none-match") == quoted:
            return Response(content=b"", status_code=304, headers={"ETag": quoted})
        return Response(
            content=text.encode(),
            media_type="application/typescript; charset=utf-8",
            headers={"ETag": quoted, "Cache-Control": "no-cache"},
        )

    @get("/runtime/hash", sync_to_thread=False)
    def runtime_hash() -> dict[str, str]:
        """The content hash of the whole module (what ``exec`` uses as ``_t``)."""
        return {"hash": gateway.artifacts.module_hash}

    @get("/runtime/scripts.json", sync_to_thread=False)
    def runtime_scripts() -> dict[str, Any]:
        """The sources of the saved scripts the module offers, with the module's hash."""
        return {"hash": gateway.artifacts.module_hash, "scripts": gateway.script_sources()}

    @get("/scripts", sync_to_thread=False)
    def saved_scripts() -> dict[str, Any]:
        """Every saved script: its signature, description, and errors when it is broken."""
        return gateway.scripts_listing()

    @post("/scripts", status_code=201)
    async def save_script(request: Request[Any, Any, Any]) -> dict[str, Any]:
        """Save a script in the project's toolscripts/ folder when it type-checks."""
        body = _json_object(await request.body())
        name, code = body.get("name"), body.get("code")
        description = body.get("description")
        if not isinstance(name, str) or not isinstance(code, str):
            raise UsageError("expected a JSON object with strings name and code")
        if description is not None and not isinstance(description, str):
            raise UsageError("description must be a string")
        return await gateway.save_script(name, code, description, bool(body.get("force")))

    @post("/runtime/check", status_code=200)
    async def runtime_check(request: Request[Any, Any, Any]) -> dict[str, str]:
        """The warm checker's verdict on a script exec prepared: ``{"code", "path", "module",
        "hash"}`` in; ``{"status": "passed" | "failed" | "unavailable", "output"}`` out (on
        "unavailable", exec checks with deno check)."""
        try:
            body = msgspec.json.decode(await request.body())
        except msgspec.DecodeError as exc:
            raise UsageError(f"the request body is not JSON: {exc}") from None
        fields = ("code", "path", "module", "hash")
        if not isinstance(body, dict) or not all(isinstance(body.get(f), str) for f in fields):
            raise UsageError("expected a JSON object with strings code, path, module and hash")
        if gateway.checker is None:
            return {"status": "unavailable", "output": "this gateway keeps no type checker"}
        verdict = await gateway.checker.check(
            body["code"], body["path"], body["module"], body["hash"]
        )
        return verdict.to_dict()

    @get("/search", sync_to_thread=True)
    def search(
        q: FromQuery[str],
        limit: FromQuery[int] = 10,
        threshold: FromQuery[float | None] = None,
        server: FromQuery[str | None] = None,
        mode: FromQuery[str] = "hybrid",
        explain: FromQuery[bool] = False,
        split: FromQuery[bool] = True,
        fusion: FromQuery[str] = "adaptive",
    ) -> dict[str, Any]:
        """Ranked tools for a query; keyword-only until the embedding model is ready.
        ``explain``: each hit's keyword and semantic parts and the need it answers;
        ``split=false`` and ``fusion=fixed`` rank as before splitting and adaptive fusion
        (for comparisons)."""
        if server is not None:
            gateway.upstream(server)
        if mode not in MODES:
            raise UsageError(f"unknown search mode {mode!r}; one of {', '.join(MODES)}")
        if fusion not in FUSIONS:
            raise UsageError(f"unknown fusion {fusion!r}; one of {', '.join(FUSIONS)}")
        hits, used, needs = gateway.search.explain(
            q,
            limit=max(1, min(limit, 100)),
            threshold=threshold,
            server=server,
            mode=mode,
            split=split,
            adaptive=fusion == "adaptive",
        )
        calls = _calls(gateway)
        calls.update(gateway.script_calls())
        return {
            "query": q,
            "mode": used,
            "needs": needs,
            # the needs the request implies (a file to write, a place's coordinates), by index
            "implied": [number for number, need in enumerate(needs) if is_implied(need)],
            # nothing matched well (no word of the request in any tool, none close in
            # meaning): the hits are only the nearest tools
            "weak": any(hit.weak for hit in hits),
            "hits": [
                hit.to_dict()
                | {"call": calls.get((hit.server, hit.tool))}
                | ({"explain": hit.explanation(needs)} if explain else {})
                for hit in hits
            ],
            "search": gateway.search.status(),
        } | (  # what keyword search and the model read of the request and of each need
            {"readings": readings(q, needs, used, adaptive=fusion == "adaptive")} if explain else {}
        )

    @get("/types", sync_to_thread=False)
    def types(
        server: FromQuery[str | None] = None,
        tool: FromQuery[str | None] = None,
        names: FromQuery[str | None] = None,
    ) -> dict[str, Any]:
        """Declarations and usage examples for get-types (``names``: server__tool or a whole
        server, comma-separated)."""
        if names:
            fragments = [
                fragment
                for qualified in names.split(",")
                if qualified.strip()
                for fragment in (
                    gateway.fragments(*split_tool_name(qualified.strip()))
                    if SEPARATOR in qualified
                    else gateway.fragments(qualified.strip())
                )
            ]
        elif server is None:
            raise UsageError("give ?server=NAME (and &tool=NAME), or ?names=server__tool,...")
        else:
            fragments = gateway.fragments(server, tool)
        return {
            "declarations": render_declarations(fragments),
            "examples": [fragment.example for fragment in fragments],
            "tools": [
                {
                    "server": f.server,
                    "tool": f.tool,
                    "namespace": f.namespace,
                    "function": f.function,
                }
                for f in fragments
            ],
            "hash": gateway.artifacts.module_hash,
        }

    return Litestar(
        route_handlers=[
            health,
            servers,
            server_tools,
            call_tool,
            runtime_module,
            runtime_hash,
            register_run,
            run_prompt,
            answer_prompt,
            run_script,
            end_run,
            runtime_check,
            runtime_scripts,
            saved_scripts,
            save_script,
            search,
            types,
        ],
        exception_handlers={
            ToolscriptError: _error_response,
            HTTPException: _http_error_response,
            Exception: _unexpected_response,
        },
        lifespan=[lambda app: gateway.running()],
        openapi_config=OpenAPIConfig(title="toolscript gateway", version=__version__),
        logging_config=None,
    )
