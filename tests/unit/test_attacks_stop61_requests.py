"""A server's own requests (pings, questions for the user, roots, sampling) past
``REQUEST_RATE`` a second are dropped as they are read, unanswered, and said once
(``upstream/stdio.py``): the gateway answered each, and 2,800 pings a second took 30% of a
core (questions refused one by one, 90%), where notifications were already bounded."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from toolscript.upstream.limits import REQUEST_RATE, NoticeFlood, RequestFlood
from toolscript.upstream.stdio import _deliver_lines


class Lines:
    """A server's stdout: these lines in one chunk, then its end."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.chunks = [b"".join(json.dumps(m).encode() + b"\n" for m in messages)]

    async def receive(self) -> bytes:
        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)


def _read(messages: list[dict[str, Any]]) -> list[Any]:
    async def deliver() -> list[Any]:
        send, receive = anyio.create_memory_object_stream[Any](100_000)
        with pytest.raises(anyio.EndOfStream):
            await _deliver_lines(Lines(messages), send)  # type: ignore[arg-type]
        send.close()
        return [item async for item in receive]

    return anyio.run(deliver)


def _method(item: Any) -> str | None:
    return getattr(getattr(item, "message", None), "method", None)


def test_requests_past_the_rate_are_dropped_and_said_once() -> None:
    pings = [{"jsonrpc": "2.0", "id": f"s{i}", "method": "ping"} for i in range(2_000)]
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}
    delivered = _read([*pings, answer, {"jsonrpc": "2.0", "method": "notifications/progress"}])
    assert sum(_method(item) == "ping" for item in delivered) == REQUEST_RATE
    assert sum(isinstance(item, RequestFlood) for item in delivered) == 1
    assert not any(isinstance(item, NoticeFlood) for item in delivered)
    # the answer to the gateway's own request and a notification still come through
    answers = [
        i for i in delivered if type(getattr(i, "message", None)).__name__ == "JSONRPCResponse"
    ]
    assert len(answers) == 1
    assert any(_method(item) == "notifications/progress" for item in delivered)


def test_a_few_requests_all_come_through() -> None:
    asked = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "roots/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {"message": "?"}},
    ]
    delivered = _read(asked)
    assert [_method(item) for item in delivered] == ["ping", "roots/list", "elicitation/create"]
