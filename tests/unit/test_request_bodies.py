"""Tool-call bodies on the gateway's fast path: refused by their Content-Length, and bounded
together while they arrive (per run and in all)."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from toolscript.gateway.app import ToolCallFastPath
from toolscript.gateway.connections import BodyBudget
from toolscript.gateway.guard import RUN_SCOPE_KEY


def _scope(run: str | None = None, length: int | None = None) -> dict[str, Any]:
    headers = [(b"content-length", str(length).encode())] if length is not None else []
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": "/tools/fx__echo",
        "headers": headers,
    }
    if run is not None:
        scope[RUN_SCOPE_KEY] = run
    return scope


async def _unreachable(*_: Any) -> None:
    raise AssertionError("the request went past the body checks")


def test_a_declared_length_past_the_limit_is_refused_before_any_byte_is_read() -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body was read")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    fast = ToolCallFastPath(_unreachable, gateway=None, max_body=1000)  # type: ignore[arg-type]
    anyio.run(fast, _scope(length=1001), receive, send)
    assert sent[0]["status"] == 413
    assert (b"connection", b"close") in sent[0]["headers"]
    assert msgspec.json.decode(sent[1]["body"])["error"] == "request_too_large"


def test_bodies_still_arriving_hold_no_more_than_a_runs_share() -> None:
    budget = BodyBudget(per_run=100, total=250)
    assert budget.take("a", 60) and budget.take("a", 40)
    assert not budget.take("a", 1), "past the run's share"
    assert budget.take("b", 100) and budget.take(None, 50)
    assert not budget.take("c", 1), "past the total"
    budget.give_back("a", 100)
    assert budget.runs == {"b": 100} and budget.take("c", 1)


def test_a_call_past_the_runs_share_is_refused_and_gives_its_bytes_back() -> None:
    fast = ToolCallFastPath(_unreachable, gateway=None, max_body=1000)  # type: ignore[arg-type]
    fast.bodies = BodyBudget(per_run=1500, total=10_000)
    assert fast.bodies.take("run", 1000)  # another call of the run, still arriving
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"x" * 600, "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(fast, _scope(run="run"), receive, send)
    assert sent[0]["status"] == 413
    assert b"hold more than 1500 bytes for one run" in sent[1]["body"]
    assert fast.bodies.runs == {"run": 1000} and fast.bodies.held == 1000
