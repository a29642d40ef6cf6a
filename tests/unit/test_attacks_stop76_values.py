"""Stop 76's attacks on the JSON value count (plumbing/jsonvalues.py) and an HTTP server's
bounded answers (upstream/bounded.py): where the count saw no values the SDK decodes.

- A stray quote in a line no decoder reads (an event stream's ``: "`` comment or
  ``id: "`` field) put the count "in a string" for the rest of the event: a data line of
  ``[{},{},...]`` after it counted 0.
- An answer compressed with ``Content-Encoding: gzip`` was counted (and bounded in bytes)
  compressed: 6 KB of gzip became 6 MB of ``[{},{},...]`` past both bounds.
- An event whole in one chunk (values, then its blank line) was never counted: the count
  restarted at the boundary without the part before it.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import AsyncIterator, Callable

import anyio
import httpx2
import pytest

from toolscript.plumbing.jsonvalues import ValueCount, json_values
from toolscript.upstream.bounded import MAX_MESSAGE, BoundedTransport

_MANY = b"[" + b"{}," * 500 + b"{}]"  # 1,001 values


class _Answer(httpx2.AsyncBaseTransport):
    def __init__(self, chunks: list[bytes], headers: dict[str, str] | None = None) -> None:
        self.chunks = chunks
        self.headers = headers or {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        chunks = self.chunks

        class Stream(httpx2.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                for chunk in chunks:
                    yield chunk

        return httpx2.Response(200, headers=self.headers, stream=Stream(), request=request)


def _read(
    chunks: list[bytes],
    values: int = 100,
    headers: dict[str, str] | None = None,
    limit: int = MAX_MESSAGE,
) -> bytes:
    async def main() -> bytes:
        transport = BoundedTransport(_Answer(chunks, headers), limit, values)
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await client.get("http://server.invalid/mcp")
            return await response.aread()

    return anyio.run(main)


@pytest.mark.parametrize("stray", [b': "', b'id: "', b'event: "', b'x: ", ['])
def test_a_stray_quote_in_an_event_line_hides_no_values(stray: bytes) -> None:
    assert json_values(stray + b"\ndata: " + _MANY) >= 1001
    with pytest.raises(httpx2.RemoteProtocolError, match="more than 100 JSON values"):
        _read([stray + b"\n", b"data: ", _MANY, b"\n\n"])


@pytest.mark.parametrize("cut", ["\r", "\n", "\r\n"])
def test_a_string_is_never_followed_past_its_line(cut: str) -> None:
    text = f'"open{cut}'.encode() + _MANY
    assert json_values(text) >= 1001
    for at in range(len(text)):
        counter = ValueCount()
        counter.feed(text[:at])
        assert counter.feed(text[at:]) >= 1001, at


def test_an_escape_cut_before_a_line_break_ends_the_string() -> None:
    counter = ValueCount()
    counter.feed(b'data: "x\\')
    assert counter.feed(b"\n" + _MANY) >= 1001


@pytest.mark.parametrize(
    ("coding", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("gzip, identity", gzip.compress)],
)
def test_a_compressed_answer_is_counted_as_the_sdk_reads_it(
    coding: str, compress: Callable[[bytes], bytes]
) -> None:
    body = b"data: [" + b"{}," * 2_000_000 + b"{}]\n\n"
    packed = compress(body)
    assert len(packed) < 64 * 1024  # one chunk of the wire, 6 MB once undone
    chunks = [packed[i : i + 4096] for i in range(0, len(packed), 4096)]
    with pytest.raises(httpx2.RemoteProtocolError, match="JSON values"):
        _read(chunks, values=1000, headers={"content-encoding": coding})
    with pytest.raises(httpx2.RemoteProtocolError, match="over 1 MB"):
        _read(chunks, values=10**9, headers={"content-encoding": coding}, limit=1024 * 1024)


def test_a_compressed_answer_within_bounds_reads_as_its_text() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"csv": "a,b\n" * 1000}}).encode()
    packed = gzip.compress(body)
    read = _read([packed[:50], packed[50:]], values=10, headers={"content-encoding": "gzip"})
    assert read == body


def test_an_event_whole_in_one_chunk_is_counted() -> None:
    with pytest.raises(httpx2.RemoteProtocolError, match="more than 100 JSON values"):
        _read([b"data: " + _MANY + b"\n\n"])
    small = b'data: {"a": [1, 2, 3]}\n\n'
    assert _read([small * 10]) == small * 10  # 50 values in the chunk, within 100


def test_an_event_with_a_stray_quote_cut_anywhere_counts_its_values() -> None:
    text = b': "x\nid: "\r\ndata: {"a": "q\\"u,[", "b": [{}, {}, {}]}\n\n'
    whole = json_values(text)
    assert whole >= 6
    for cut in range(len(text) + 1):
        for second in range(cut, len(text) + 1):
            counter = ValueCount()
            counter.feed(text[:cut])
            counter.feed(text[cut:second])
            assert counter.feed(text[second:]) >= 6, (cut, second)
