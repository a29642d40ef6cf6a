"""An HTTP server's answer or event of too many JSON values fails as a broken connection
does (stop 75), as a stdio server's line does: decoded and checked, each value is some 200
bytes of the gateway's (a 30 MB answer of ``{"p0":{},...}`` took it 0.58 GB)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest

from toolscript.upstream.bounded import MAX_MESSAGE, BoundedTransport


class _Answer(httpx2.AsyncBaseTransport):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        chunks = self.chunks

        class Stream(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                for chunk in chunks:
                    yield chunk

        return httpx2.Response(200, stream=Stream(), request=request)


def _read(chunks: list[bytes], values: int) -> bytes:
    async def main() -> bytes:
        transport = BoundedTransport(_Answer(chunks), MAX_MESSAGE, values)
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await client.get("http://server.invalid/mcp")
            return await response.aread()

    return anyio.run(main)


def test_an_answer_of_too_many_values_fails_as_a_broken_connection() -> None:
    with pytest.raises(httpx2.RemoteProtocolError, match="more than 100 JSON values"):
        _read([b'{"a": [', b"{}," * 60, b"{}," * 60, b"{}]}"], values=100)


def test_events_each_within_the_bound_are_read_however_many_values_in_all() -> None:
    events = [b'data: {"a": [1, 2, 3]}\n\n'] * 50  # 5 values an event, 250 in all
    assert _read(events, values=10) == b"".join(events)
