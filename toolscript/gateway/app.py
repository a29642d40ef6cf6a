"""The gateway's HTTP API (Litestar). Paths here follow the ``/<token>`` prefix.

``GET  /health``                    overall and per-server state, tool counts, search readiness
``GET  /servers``                   every configured server with its state
``GET  /servers/{server}/tools``    a server's tools: name, description, schemas, annotations
``POST /tools/{server}__{tool}``    call a tool; JSON arguments in, result per ``results.py`` out
``GET  /schema``                    this API as OpenAPI

Errors answer ``{"error": kind, "message": ..., "hint"?: ..., ...}`` with the
status of the ``toolscript.errors`` class that was raised.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Litestar, Request, Response, get, post
from litestar.openapi import OpenAPIConfig

from toolscript import __version__
from toolscript.errors import ArgumentValidationError, ToolscriptError
from toolscript.gateway.core import Gateway
from toolscript.gateway.results import RESULT_HEADER

__all__ = ["build_app"]

_JSON = "application/json"


def _error_response(request: Request[Any, Any, Any], exc: ToolscriptError) -> Response[bytes]:
    return Response(
        content=msgspec.json.encode(exc.to_dict()), status_code=exc.status_code, media_type=_JSON
    )


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
    def server_tools(server: str) -> list[dict[str, Any]]:
        """A server's tools with their input and output schemas and annotations."""
        return list(gateway.upstream(server).tools.values())

    @post("/tools/{name:str}", status_code=200)
    async def call_tool(name: str, request: Request[Any, Any, Any]) -> Response[bytes]:
        """Call ``server__tool`` with the JSON body as arguments."""
        body = await request.body()
        try:
            arguments = msgspec.json.decode(body) if body.strip() else {}
        except msgspec.DecodeError as exc:
            raise ArgumentValidationError(
                f"the request body is not JSON: {exc}", errors=[{"path": "/", "message": str(exc)}]
            ) from exc
        if not isinstance(arguments, dict):
            raise ArgumentValidationError(
                f"arguments for {name} must be a JSON object",
                errors=[{"path": "/", "message": "expected an object"}],
            )
        shape, value = await gateway.call(name, arguments)
        return Response(
            content=msgspec.json.encode(value), media_type=_JSON, headers={RESULT_HEADER: shape}
        )

    return Litestar(
        route_handlers=[health, servers, server_tools, call_tool],
        exception_handlers={ToolscriptError: _error_response},
        lifespan=[lambda app: gateway.running()],
        openapi_config=OpenAPIConfig(title="toolscript gateway", version=__version__),
        logging_config=None,
    )
