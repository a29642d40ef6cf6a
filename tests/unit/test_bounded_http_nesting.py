"""An HTTP server's answer or event nested past what the SDK's parser takes (201 levels) read
with what is past ``NESTING_CUT`` levels empty (``upstream/bounded.py``): a listing's
answer is served, any other answer is its request's error; a shallow stream passes as sent.
Before, the SDK refused a deep tools/list answer and its whole server failed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2
import mcp_types

from toolscript.plumbing.jsonvalues import nested_past
from toolscript.upstream.bounded import HELD_EVENT, NESTING_CUT, BoundedTransport

DEPTH = 10_000


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


class _Answers(httpx2.AsyncBaseTransport):
    def __init__(self, chunks: list[bytes], content_type: str) -> None:
        self.chunks = chunks
        self.content_type = content_type

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": self.content_type}
        return httpx2.Response(200, headers=headers, stream=_Chunks(self.chunks), request=request)


def _read(chunks: list[bytes], content_type: str) -> bytes:
    async def main() -> bytes:
        transport = BoundedTransport(_Answers(chunks, content_type))
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await client.post("http://server.invalid/mcp")
            return await response.aread()

    return anyio.run(main)


def _listing(depth: int) -> bytes:
    deep = '{"type":"object","properties":{"a":' * depth + "{}" + "}}" * depth
    tools = f'[{{"name":"deep","inputSchema":{deep}}},{{"name":"ok","description":"]{{\\"[","inputSchema":{{}}}}]'
    return f'{{"jsonrpc":"2.0","id":7,"result":{{"tools":{tools}}}}}'.encode()


def _in_pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _tools(text: bytes) -> list[dict[str, object]]:
    message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    assert isinstance(message, mcp_types.JSONRPCResponse)
    return mcp_types.ListToolsResult.model_validate(message.result).model_dump()["tools"]


def test_nested_past_counts_levels_outside_strings() -> None:
    assert nested_past(b'[[1,[2]],{"a":"[[[["}]', 2)
    assert not nested_past(b'[[1,[2]],{"a":"[[[["}]', 3)
    assert not nested_past(b'{"a":"}}}{{{{{{{{{{{{"}', 1)
    assert nested_past(b"[" * 5000 + b"]" * 5000, NESTING_CUT)
    assert nested_past(b"[[]" * 300 + b"]" * 300, NESTING_CUT)  # no long run of openers


def test_a_json_answer_listing_a_schema_10_000_deep_reaches_the_sdk_readable() -> None:
    body = _read(_in_pieces(_listing(DEPTH), 4096), "application/json")
    tools = _tools(body)
    assert [tool["name"] for tool in tools] == ["deep", "ok"]
    assert tools[1]["description"] == ']{"['
    assert not nested_past(body, NESTING_CUT)


def test_events_nested_that_deep_are_cut_each_the_others_passed_as_sent() -> None:
    """A listing event is read cut (its ``id:`` kept), a call's answer that deep becomes its
    request's error, an ordinary event between them is untouched; boundaries fall anywhere
    in the chunks."""
    answer = b'{"jsonrpc":"2.0","id":8,"result":{"content":[],"structuredContent":{"a":'
    answer += b"[" * 5000 + b"]" * 5000 + b"}}}"
    ordinary = b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/x"}\n\n'
    stream = (
        b"event: message\nid: 1\ndata: "
        + _listing(DEPTH)
        + b"\r\n\r\n"
        + ordinary
        + b"event: message\ndata: "
        + answer
        + b"\n\n"
    )
    body = _read(_in_pieces(stream, 1000), "text/event-stream")
    events = body.split(b"\n\n")
    assert events[-1] == b"" and len(events) == 4, body[:300]
    listing, passed, error = events[:3]
    assert listing.startswith(b"event: message\nid: 1\ndata: ")
    assert [tool["name"] for tool in _tools(listing.split(b"data: ", 1)[1])] == ["deep", "ok"]
    assert passed + b"\n\n" == ordinary
    message = mcp_types.jsonrpc_message_adapter.validate_json(error.split(b"data: ", 1)[1])
    assert isinstance(message, mcp_types.JSONRPCError) and message.id == 8
    assert f"nested more than {NESTING_CUT} levels deep" in message.error.message


def test_a_shallow_stream_passes_byte_for_byte() -> None:
    shallow = _listing(NESTING_CUT // 2 - 4)  # as deep as the SDK reads
    assert _tools(shallow)
    assert _read(_in_pieces(shallow, 7), "application/json") == shallow
    stream = (b"id: 2\r\ndata: " + shallow + b"\r\n\r\n") * 3
    assert _read(_in_pieces(stream, 5), "text/event-stream") == stream


class _Counted(_Chunks):
    """Its chunks, counting the bytes it has given."""

    def __init__(self, chunks: list[bytes]) -> None:
        super().__init__(chunks)
        self.given = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.given += len(chunk)
            yield chunk


def test_an_event_past_the_held_bytes_is_passed_on_as_it_comes() -> None:
    """An event longer than HELD_EVENT reaches the SDK as it arrives (which refuses one past
    1 MiB on the legacy SSE transport), not held to the 128 MB bound."""
    chunk = b"x" * 1024 * 1024
    source = _Counted([b"data: ", *[chunk] * (HELD_EVENT // len(chunk) + 4)])

    class _Serving(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, stream=source, request=request)

    async def main() -> int:
        async with (
            httpx2.AsyncClient(transport=BoundedTransport(_Serving())) as client,
            client.stream("GET", "http://server.invalid/sse") as response,
        ):
            async for _ in response.aiter_raw():
                return source.given
        raise AssertionError("nothing passed on")

    given = anyio.run(main)
    assert HELD_EVENT < given <= HELD_EVENT + 2 * len(chunk), given
