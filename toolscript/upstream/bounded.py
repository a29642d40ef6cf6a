"""An HTTP server's messages bounded as a stdio server's are (``stdio.MAX_LINE``).

The SDK's HTTP transports read a JSON answer whole, and an event stream event by event,
into memory: a server that sends one answer or one event with no end would grow the
gateway until it runs out of memory. Every response the gateway reads from a server goes
through ``BoundedTransport``: past ``MAX_MESSAGE`` bytes since the last event boundary
(a blank line; a JSON answer has none, so its whole body counts), reading fails as a
broken connection does, and the server's session is dropped and started again.

Imported with the first HTTP server (it needs httpx2).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

__all__ = ["MAX_MESSAGE", "BoundedTransport"]

MAX_MESSAGE = 128 * 1024 * 1024  # bytes of one answer, or of one event of a stream
_BOUNDARIES = (b"\n\n", b"\r\n\r\n", b"\r\r")


class BoundedTransport(httpx2.AsyncBaseTransport):
    """``inner``'s responses, each read through ``_BoundedStream``."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int = MAX_MESSAGE) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _BoundedStream(response.stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, stream: httpx2.AsyncByteStream, limit: int) -> None:
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held = 0  # bytes since the last boundary
        tail = b""  # the last bytes before this chunk: a boundary may straddle two
        async for chunk in self._stream:
            seen = tail + chunk
            ends = [seen.rfind(b) + len(b) for b in _BOUNDARIES if b in seen]
            held = len(seen) - max(ends) if ends else held + len(chunk)
            if held > self._limit:
                raise httpx2.RemoteProtocolError(
                    f"the server sent a message over {self._limit // (1024 * 1024)} MB"
                )
            tail = seen[-3:]
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()
