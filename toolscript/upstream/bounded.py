"""An HTTP server's messages bounded as a stdio server's are (``stdio.MAX_LINE``).

The SDK's HTTP transports read a JSON answer whole, and an event stream event by event,
into memory: a server that sends one answer or one event with no end would grow the
gateway until it runs out of memory. Every response the gateway reads from a server goes
through ``BoundedTransport`` (``bounded_client``: each transport of a client, the proxies it
took from the environment's ``HTTPS_PROXY``, ``HTTP_PROXY`` and ``ALL_PROXY`` included):
past ``MAX_MESSAGE`` bytes since the last event boundary (a blank line; a JSON answer has
none, so its whole body counts), reading fails as a broken connection does, and the
server's session is dropped and started again.

What is counted is what the SDK decodes: an answer compressed (``Content-Encoding: gzip``
or ``deflate``, which httpx2 asks for and would undo after the count) is undone here,
before it is counted, and reaches the SDK as plain bytes. Counted compressed, 6 KB of
gzip passed both bounds and became 6 MB of ``[{},{},...]``; a 128 KB one, 128 MB.

A message (a JSON answer, an event's data) nested past ``NESTING_CUT`` levels reaches the
SDK with what is deeper empty, as a stdio server's line does (``stdio.NESTING_CUT``): the
SDK's parser (pydantic's) refuses one past 201 levels, and a tools/list answer so refused
failed its whole server. A listing so read is served, that schema open with a note
(``limits.bound_schema``, whose warning names the server); any other answer that deep is
its request's error. So a stream is passed on event by event (an event past ``HELD_EVENT``
as it comes, uncut), a JSON answer whole: the SDK reads either no sooner.

Imported with the first HTTP server (it needs httpx2).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator

import httpx2
import msgspec
from httpx2._decoders import MultiDecoder

from toolscript.plumbing.jsonvalues import ValueCount, cut_nesting, nested_past
from toolscript.upstream.limits import listing_or_error

__all__ = [
    "HELD_EVENT",
    "MAX_MESSAGE",
    "MAX_MESSAGE_VALUES",
    "NESTING_CUT",
    "BoundedTransport",
    "bounded_client",
]

MAX_MESSAGE = 128 * 1024 * 1024  # bytes of one answer, or of one event of a stream
# JSON values (about: commas and openers) of one answer or event, as a stdio server's line
# (``stdio.MAX_LINE_VALUES``): decoded and checked, each is some 200 bytes of the gateway's.
MAX_MESSAGE_VALUES = 4_000_000
_BOUNDARIES = (b"\n\n", b"\r\n\r\n", b"\r\r")
_EVENT_END = re.compile(b"|".join(re.escape(b) for b in _BOUNDARIES))
# Levels a message may nest: past them, its objects and arrays reach the SDK empty. The SDK's
# parser refuses a message past 201 levels (measured: a tools/list answer of 201 is read,
# one of 202 refused); real schemas and results hold about 10.
NESTING_CUT = 200
# Bytes of one event held to be cut whole; a longer one is passed on as sent (the SDK's
# legacy SSE client refuses an event past 1 MiB: it would otherwise be held to MAX_MESSAGE).
HELD_EVENT = 8 * 1024 * 1024


class BoundedTransport(httpx2.AsyncBaseTransport):
    """``inner``'s responses, each read through ``_BoundedStream``."""

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        limit: int = MAX_MESSAGE,
        values: int = MAX_MESSAGE_VALUES,
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._values = values

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        stream: httpx2.AsyncByteStream = response.stream
        codings = [
            coding.strip().lower()
            for coding in response.headers.get_list("content-encoding", split_commas=True)
        ]
        if any(coding != "identity" for coding in codings):
            stream = _Decoded(stream, MultiDecoder([c for c in codings if c != "identity"]))
            del response.headers["content-encoding"]  # httpx2 must not undo it again
        kind = response.headers.get("content-type", "").strip().lower()
        events = kind.startswith("text/event-stream")
        response.stream = _BoundedStream(stream, self._limit, self._values, events=events)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_client(client: httpx2.AsyncClient, limit: int = MAX_MESSAGE) -> httpx2.AsyncClient:
    """``client`` with every transport it may send through read through ``BoundedTransport``:
    its own, and those it mounted for the environment's proxies (``NO_PROXY``'s hosts are
    mounted as None: they use its own). httpx2 builds those from its arguments and keeps
    them in ``_transport`` and ``_mounts`` (pinned by ``tests/unit/test_bounded_http.py``);
    a transport passed to it instead would turn the environment's proxies off."""
    client._transport = BoundedTransport(client._transport, limit)
    client._mounts = {
        pattern: None if transport is None else BoundedTransport(transport, limit)
        for pattern, transport in client._mounts.items()
    }
    return client


class _Decoded(httpx2.AsyncByteStream):
    """``stream``'s bytes with their content codings undone, piece by piece."""

    def __init__(self, stream: httpx2.AsyncByteStream, decoder: MultiDecoder) -> None:
        self._stream = stream
        self._decoder = decoder

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            for piece in self._decoder.decode(chunk):
                if piece:
                    yield piece
        for piece in self._decoder.flush():
            if piece:
                yield piece

    async def aclose(self) -> None:
        await self._stream.aclose()


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(
        self, stream: httpx2.AsyncByteStream, limit: int, values: int, *, events: bool = False
    ) -> None:
        self._stream = stream
        self._limit = limit
        self._values = values
        self._events = events  # an event stream: passed on event by event, else whole

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if not self._events:  # a JSON answer: the SDK reads it whole too
            whole = [piece async for piece in self._counted()]
            if whole:
                yield _within_depth(b"".join(whole), events=False)
            return
        pending: list[bytes] = []  # the event under way, held to be passed on whole
        held = 0  # its bytes
        passing = False  # the event under way is past HELD_EVENT: passed on as sent
        tail = b""
        async for piece in self._counted():
            tail = (tail + piece[-4:])[-4:]
            ended = tail.endswith(_BOUNDARIES)
            if passing:
                yield piece
            else:
                pending.append(piece)
                held += len(piece)
                if ended:
                    yield _within_depth(b"".join(pending), events=True)
                elif held > HELD_EVENT:
                    yield b"".join(pending)
                    passing = True
                if ended or passing:
                    pending.clear()
                    held = 0
            passing = passing and not ended
        if pending:
            yield _within_depth(b"".join(pending), events=True)

    async def _counted(self) -> AsyncIterator[bytes]:
        """The stream's bytes, each event's last piece ending with its boundary."""
        held = 0  # bytes since the last boundary
        counted = ValueCount()  # JSON values since the last boundary (json_values)
        tail = b""  # the last bytes before this chunk: a boundary may straddle two
        async for chunk in self._stream:
            seen = tail + chunk
            ends = [seen.rfind(b) + len(b) for b in _BOUNDARIES if b in seen]
            if ends:
                # What the chunk holds before its last boundary ends the message under
                # way: counted with it (it was not, so an event whole in one chunk was
                # never counted).
                before = max(max(ends) - len(tail), 0)
                self._check(held + before, counted.feed(chunk[:before]))
                held = len(seen) - max(ends)
                counted = ValueCount()
                counted.feed(seen[max(ends) :])
            else:
                held += len(chunk)
                counted.feed(chunk)
            self._check(held, counted.total)
            tail = seen[-3:]
            after = min(len(seen) - max(ends), len(chunk)) if ends else len(chunk)
            if after < len(chunk):
                yield chunk[: len(chunk) - after]
            if after:
                yield chunk[len(chunk) - after :]

    def _check(self, held: int, values: int) -> None:
        if held > self._limit:
            raise httpx2.RemoteProtocolError(
                f"the server sent a message over {self._limit // (1024 * 1024)} MB"
            )
        if values > self._values:
            raise httpx2.RemoteProtocolError(
                f"the server sent a message of more than {self._values:,} JSON values"
            )

    async def aclose(self) -> None:
        await self._stream.aclose()


def _within_depth(message: bytes, *, events: bool) -> bytes:
    """``message`` (a JSON answer, or an event) as passed on: as sent, unless it nests past
    ``NESTING_CUT`` levels and reads once cut (``limits.listing_or_error``)."""
    if not nested_past(message, NESTING_CUT):
        return message
    if not events:
        return _cut(message) or message
    ends = [0, *(found.end() for found in _EVENT_END.finditer(message))]
    if ends[-1] < len(message):
        ends.append(len(message))
    return b"".join(_event_within_depth(message[a:b]) for a, b in itertools.pairwise(ends))


def _event_within_depth(event: bytes) -> bytes:
    if not nested_past(event, NESTING_CUT):
        return event
    lines = event.splitlines()
    data = [line for line in lines if line.startswith(b"data:")]
    cut = _cut(b"\n".join(line[6:] if line[5:6] == b" " else line[5:] for line in data))
    if cut is None:
        return event
    first = lines.index(data[0])
    kept = [line for line in lines[:first] if line] + [b"data: " + cut]
    kept += [line for line in lines[first:] if line and not line.startswith(b"data:")]
    return b"\n".join(kept) + b"\n\n"


def _cut(text: bytes) -> bytes | None:
    """A JSON-RPC message with what is deeper than ``NESTING_CUT`` levels empty, as it may
    be used; None if it does not read so."""
    try:
        decoded = msgspec.json.decode(cut_nesting(text, NESTING_CUT - 1))  # the empty ones too
    except (msgspec.DecodeError, RecursionError):
        return None
    return msgspec.json.encode(listing_or_error(decoded, NESTING_CUT))
