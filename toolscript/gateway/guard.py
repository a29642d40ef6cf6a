"""ASGI guard in front of the gateway: a secret path prefix and a Host check.

Any local process, or a web page through DNS rebinding, could otherwise drive
the user's tools with the user's credentials. Every request must name the
gateway's own address in ``Host`` and start with ``/<token>``; only ``/livez``
answers without them (it says nothing but "alive").

A run's token (``runs``: token -> run id) stands in for the gateway's own on the paths a
script needs, ``POST /tools/*`` and ``GET /runtime/*``, and on nothing else: a script can
call tools as its run, but cannot register runs or answer its own approval prompts.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from toolscript.errors import ForbiddenHostError, ToolscriptError, UnauthorizedError

__all__ = ["LIVENESS_PATH", "RUN_SCOPE_KEY", "TokenGuard", "answer_error", "answer_json"]

LIVENESS_PATH = "/livez"
RUN_SCOPE_KEY = "toolscript.run"  # the ASGI scope's key for the id of the run calling

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]


class TokenGuard:
    """Strips ``/<token>`` from the path of authorised requests, refuses the rest."""

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        allowed_hosts: Iterable[str],
        runs: Callable[[str], str | None] | None = None,
    ) -> None:
        self.app = app
        self._runs = runs
        self._prefix = "/" + token
        self._prefix_bytes = self._prefix.encode()
        self._allowed_hosts = {host.lower().encode() for host in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            # The gateway speaks plain HTTP only; a websocket (or any other scope) would pass
            # no token check, so it is refused before it reaches the app.
            if scope["type"] == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008})
            return
        path: str = scope["path"]
        if path == LIVENESS_PATH:
            await answer_json(send, 200, {"alive": True})
            return
        host = next((value for key, value in scope["headers"] if key == b"host"), b"")
        if host.lower() not in self._allowed_hosts:
            await answer_error(send, ForbiddenHostError())
            return
        prefix = self._prefix
        given = path[: len(prefix)].encode("utf-8", "replace")
        run = None
        if not hmac.compare_digest(given, self._prefix_bytes) or (
            len(path) > len(prefix) and path[len(prefix)] != "/"
        ):
            prefix = "/" + path[1:].split("/", 1)[0]
            run = self._runs(prefix[1:]) if self._runs is not None and len(prefix) > 8 else None
            rest = path[len(prefix) :]
            if run is None or not (
                (scope["method"] == "POST" and rest.startswith("/tools/"))
                or (scope["method"] == "GET" and rest.startswith("/runtime/"))
            ):
                await answer_error(send, UnauthorizedError())
                return
        inner = dict(scope)
        inner["path"] = path[len(prefix) :] or "/"
        raw_path = scope.get("raw_path")
        if raw_path:
            inner["raw_path"] = raw_path[len(prefix.encode()) :] or b"/"
        if run is not None:
            inner[RUN_SCOPE_KEY] = run
        await self.app(inner, receive, send)


async def answer_error(send: Send, error: ToolscriptError) -> None:
    """An error of the tree as its response, the same body every path of the gateway gives."""
    await answer_json(send, error.status_code, error.to_dict())


async def answer_json(send: Send, status: int, body: dict[str, Any]) -> None:
    """A whole JSON response straight from ASGI (for paths that skip the framework)."""
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
