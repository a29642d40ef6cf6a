"""The token guard in front of the gateway, driven as the ASGI callable it is."""

from __future__ import annotations

import asyncio
from typing import Any

from toolscript.gateway.guard import TokenGuard


def _drive(
    scope: dict[str, Any], messages: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    reached: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(TokenGuard(app, "secret", ["127.0.0.1:1"])(scope, receive, send))
    return sent, reached


def test_a_websocket_is_refused_before_the_app() -> None:
    """A websocket scope carries no token check of its own: it never reaches the gateway."""
    scope = {"type": "websocket", "path": "/tools/x", "headers": [(b"host", b"127.0.0.1:1")]}
    sent, reached = _drive(scope, [{"type": "websocket.connect"}])
    assert reached == []
    assert sent == [{"type": "websocket.close", "code": 1008}]


def test_lifespan_still_reaches_the_app() -> None:
    _, reached = _drive({"type": "lifespan"}, [])
    assert reached == ["lifespan"]


def test_http_without_the_token_is_refused() -> None:
    scope = {"type": "http", "path": "/tools/x", "headers": [(b"host", b"127.0.0.1:1")]}
    sent, reached = _drive(scope, [])
    assert reached == []
    assert sent[0]["status"] == 401


def test_http_with_the_token_reaches_the_app() -> None:
    scope = {"type": "http", "path": "/secret/health", "headers": [(b"host", b"127.0.0.1:1")]}
    _, reached = _drive(scope, [])
    assert reached == ["http"]
