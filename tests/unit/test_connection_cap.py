"""A connection refused because the gateway is full (``connections.py``) ends quietly: uvicorn
sets a protocol's transport to None before it knows one, and closing that raised in the event
loop's callback for each refused connection (a script's requests held while it is checked
fill the places: an AttributeError logged per connection)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from toolscript.gateway import connections
from toolscript.gateway.connections import BoundedHTTPProtocol


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closing = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

    def abort(self) -> None:
        self.closing = True

    def close(self) -> None:
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing


async def _app(scope: Any, receive: Any, send: Any) -> None: ...


def test_a_connection_refused_when_every_place_is_busy_ends_without_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connections, "MAX_CONNECTIONS", 2)
    monkeypatch.setattr(connections, "_silent", {})

    async def scenario() -> None:
        config = uvicorn.Config(app=_app, lifespan="off")
        config.load()
        state = ServerState()
        loop = asyncio.get_running_loop()
        busy = []
        for _ in range(2):  # each answering a request: no room is made of it
            protocol = BoundedHTTPProtocol(
                config=config, server_state=state, app_state={}, _loop=loop
            )
            protocol.connection_made(_Transport())
            protocol.cycle = object()
            connections._silent.pop(protocol, None)
            busy.append(protocol)
        refused = BoundedHTTPProtocol(config=config, server_state=state, app_state={}, _loop=loop)
        transport = _Transport()
        refused.connection_made(transport)
        assert transport.closing and refused not in state.connections
        refused.connection_lost(None)
        for protocol in busy:
            protocol._first_request_timer.cancel()

    asyncio.run(scenario())
