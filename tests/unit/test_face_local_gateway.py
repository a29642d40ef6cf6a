"""The MCP face's calls on its own gateway's loop (``gateway/local.py``) when that loop is
gone: nothing answers, as nothing listening does over HTTP, and the face looks for a
gateway again (with real gateways: tests/integration/test_face_local_calls.py)."""

from __future__ import annotations

import asyncio
import warnings
from types import SimpleNamespace
from typing import Any

from toolscript.gateway.local import LocalGateway


def _gateway(closing: bool = False) -> Any:
    """What LocalGateway reads of a gateway whose first build has not come yet."""
    return SimpleNamespace(runs=SimpleNamespace(closing=closing), first_build=asyncio.Event())


def test_a_loop_that_stopped_before_it_took_the_work_answers_nothing() -> None:
    """Not the 30 s wait and an error: a gateway that stopped (its thread ended) with the
    work queued on its loop is a gateway gone."""
    loop = asyncio.new_event_loop()  # never runs again: as a gateway's loop that stopped
    try:
        local = LocalGateway(_gateway(), loop)
        assert local.module_hash() is None
        assert local.progress("20261126-010000-abcdef", 0, 20.0) is None
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # (the work it never took)
            loop.close()


def test_a_closed_loop_or_a_gateway_shutting_down_answers_nothing() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    assert LocalGateway(_gateway(), loop).end("20261126-010000-abcdef", 0) is None
    running = asyncio.new_event_loop()
    try:
        local = LocalGateway(_gateway(closing=True), running)
        assert local.module_hash() is None
        check = {"code": "return 1", "path": "script.ts", "module": "m.ts", "hash": "0123"}
        assert local.check(check, 1.0) is None
        assert (
            local.register(
                "return 1",
                script_hash="",
                origin="mcp",
                script_name=("script.ts", "script.ts"),
                interactive=False,
            )
            is None
        )
    finally:
        running.close()


def test_servers_up_only_when_every_server_is_connected_or_disabled() -> None:
    """The face asks its gateway for the servers (to wait for one still connecting) only
    when some server is not up: read from the face's thread, a reload meanwhile is unsure."""
    from toolscript.upstream.base import ServerState

    def with_states(*states: ServerState) -> LocalGateway:
        upstreams = {f"s{i}": SimpleNamespace(state=state) for i, state in enumerate(states)}
        gateway = SimpleNamespace(upstreams=upstreams)
        return LocalGateway(gateway, asyncio.new_event_loop())  # type: ignore[arg-type]

    assert with_states().servers_up()
    assert with_states(ServerState.CONNECTED, ServerState.DISABLED).servers_up()
    assert not with_states(ServerState.CONNECTED, ServerState.CONNECTING).servers_up()
    assert not with_states(ServerState.FAILED).servers_up()

    class Reloading(dict[str, Any]):
        def values(self) -> Any:
            raise RuntimeError("dictionary changed size during iteration")

    reloading = LocalGateway(SimpleNamespace(upstreams=Reloading()), asyncio.new_event_loop())  # type: ignore[arg-type]
    assert not reloading.servers_up()
