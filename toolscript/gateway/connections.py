"""Bounds on the gateway's HTTP connections: how many, and how long one may stay silent.

uvicorn times out idle keep-alive connections but not one that never sends a request,
and takes connections until file descriptors run out; hundreds of silent sockets then
starve /health and every tool call. Here a connection must send its request within
``FIRST_REQUEST_TIMEOUT`` seconds, a request once begun must arrive whole within
``REQUEST_TIMEOUT`` (a body sent a byte at a time held its connection for as long as its
sender lived: 256 of them took every place, and the person's calls were refused). Past
``MAX_CONNECTIONS``, a new one takes the place of the oldest that sent nothing for
``SILENT_GRACE``, else of the oldest kept open between requests, else of the oldest whose
request is still arriving, else of the oldest request of the caller (the token its path
starts with) holding the most under way, past ``MAX_PER_CALLER``, else of the oldest that
sent nothing yet; else it is closed at once. Each condition is logged once. (A
script may open sockets to the gateway: 256 of them kept alive with a request every few
seconds, or each waiting on a slow tool, took every place, refusing every other run's calls,
the person's too.)

A tool call's body is held until it is whole; ``BodyBudget`` bounds what the bodies still
arriving may hold together, per run and in all: a script opening a hundred connections that
each send a body one byte short of the limit would otherwise make the gateway hold them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from toolscript.errors import RequestError

__all__ = [
    "FIRST_REQUEST_TIMEOUT",
    "MAX_CALL_VALUES",
    "MAX_CONNECTIONS",
    "MAX_PER_CALLER",
    "REQUEST_TIMEOUT",
    "RUN_BODIES",
    "RUN_VALUES",
    "SILENT_GRACE",
    "SMALL_CALL_VALUES",
    "TOTAL_BODIES",
    "TOTAL_VALUES",
    "BodyBudget",
    "BoundedHTTPProtocol",
    "raise_file_limit",
]

log = logging.getLogger("toolscript.gateway")

MAX_CONNECTIONS = 256
FIRST_REQUEST_TIMEOUT = 10.0
# Seconds a new connection may send nothing before it is the first to give its place up: a
# storm of new connections (each taking a place) otherwise closed every other client's new
# one before it could send its request.
SILENT_GRACE = 1.0
REQUEST_TIMEOUT = 10.0  # from a request's first byte to its last (headers and body)
_said: set[str] = set()
_silent: dict[Any, None] = {}  # connections that have not sent a request yet, oldest first
_arriving: dict[Any, None] = {}  # connections whose request is not whole yet, oldest first
_idle: dict[Any, None] = {}  # connections kept open between requests, oldest first
# A caller's requests under way past which, when every place is taken, its oldest gives its
# place up. Small: the runs a gateway holds at once (32 through each URL, ``runbook``) each
# holding this many take well under every place, so no number of runs fills them either.
MAX_PER_CALLER = 3
_begun = itertools.count()  # orders requests under way, oldest first


def _once(key: str, message: str) -> None:
    if key not in _said:
        _said.add(key)
        log.warning(message)


def _close_oldest(pool: dict[Any, None], key: str, message: str) -> bool:
    """Close the oldest connection of ``pool`` not already closing (each one looked at
    leaves it), saying ``message`` once; whether one was."""
    for connection in list(pool):
        pool.pop(connection, None)
        if not connection.transport.is_closing():
            _once(key, message)
            connection.transport.close()
            return True
    return False


class BoundedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol with a connection cap and a deadline for the first request."""

    def connection_made(self, transport: asyncio.Transport) -> None:
        if len(self.connections) >= MAX_CONNECTIONS and not self._make_room():
            _once(
                "full",
                f"{MAX_CONNECTIONS} connections are busy: new ones are closed until one ends",
            )
            transport.abort()
            return
        super().connection_made(transport)
        self._made = self.loop.time()
        _silent[self] = None
        self._first_request_timer: asyncio.TimerHandle | None = self.loop.call_later(
            FIRST_REQUEST_TIMEOUT, self._drop_if_silent
        )

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes it cannot read as an HTTP request (a request line or
        header past what it reads, a URL of 64 KB), as the gateway answers every error: JSON
        naming its kind. uvicorn's plain ``Invalid HTTP request received.`` read, to the CLI,
        as another program's answer at the gateway's own address."""
        error = RequestError(
            "the gateway could not read the request as HTTP (a URL or header longer than it "
            "reads, 64 KB, or bytes that are not HTTP)",
            status_code=400,
            kind="invalid_request",
        )
        body = json.dumps(error.to_dict()).encode()
        head = (
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.transport.close()

    def _make_room(self) -> bool:
        """Close the oldest connection that has sent nothing for ``SILENT_GRACE`` seconds,
        else the oldest kept open between requests, else the oldest whose request is still
        arriving, else the oldest request of a caller holding too many, else the oldest that
        has sent nothing yet; False when there is none."""
        return (
            self._take_silent(self.loop.time() - SILENT_GRACE)
            or self._take_idle_or_arriving()
            or self._take_from_the_busiest()
            or self._take_silent(math.inf)
        )

    def _take_silent(self, made_by: float) -> bool:
        """Close the oldest connection made by ``made_by`` that has sent nothing yet."""
        for connection in list(_silent):
            if connection._made > made_by:
                return False
            if connection.cycle is None and not connection.transport.is_closing():
                _once(
                    "crowded",
                    f"more than {MAX_CONNECTIONS} connections at once: the oldest that sent "
                    "nothing are closed (a client that opens connections and sends nothing?)",
                )
                connection.transport.close()
                _silent.pop(connection, None)
                return True
            _silent.pop(connection, None)
        return False

    def _take_idle_or_arriving(self) -> bool:
        """Close the oldest connection kept open between requests, else the oldest whose
        request is still arriving."""
        return _close_oldest(
            _idle,
            "crowded-idle",
            f"more than {MAX_CONNECTIONS} connections at once: the oldest kept open "
            "between requests are closed",
        ) or _close_oldest(
            _arriving,
            "crowded-arriving",
            f"more than {MAX_CONNECTIONS} connections at once: the oldest whose "
            "request was still arriving are closed (bodies sent a little at a time?)",
        )

    def _take_from_the_busiest(self) -> bool:
        """Close the oldest request under way of the caller holding the most, when it holds
        more than ``MAX_PER_CALLER``: a flood of calls gives up its own places."""
        under_way: dict[bytes, list[Any]] = {}
        for connection in self.connections:
            caller = getattr(connection, "_caller", None)
            cycle = connection.cycle
            if (
                caller is None
                or cycle is None
                or getattr(cycle, "response_complete", True)
                or connection.transport.is_closing()
            ):
                continue
            under_way.setdefault(caller, []).append(connection)
        busiest = max(under_way.values(), key=len, default=[])
        if len(busiest) <= MAX_PER_CALLER:
            return False
        _once(
            "crowded-caller",
            f"more than {MAX_CONNECTIONS} connections at once: the oldest requests under way "
            "of the caller holding the most are closed (a script's flood of calls?)",
        )
        min(busiest, key=lambda connection: connection._begun).transport.close()
        return True

    def on_message_begin(self) -> None:
        _silent.pop(self, None)
        _idle.pop(self, None)
        self._cancel_request_timer()
        self._request_timer: asyncio.TimerHandle | None = self.loop.call_later(
            REQUEST_TIMEOUT, self._drop_unfinished
        )
        _arriving[self] = None
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        # Who asks: the first segment of the path as the guard reads it, decoded (the
        # gateway's, the agent's or a run's token, however its letters were encoded).
        path = str(self.scope.get("path", ""))
        self._caller = path.lstrip("/").split("/", 1)[0][:128].encode("utf-8", "replace")
        self._begun = next(_begun)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # kept open for a next request
            _idle[self] = None

    def on_message_complete(self) -> None:
        self._cancel_request_timer()  # the app's answer may take as long as the call does
        super().on_message_complete()

    def _cancel_request_timer(self) -> None:
        _arriving.pop(self, None)
        timer = getattr(self, "_request_timer", None)
        if timer is not None:
            timer.cancel()
            self._request_timer = None

    def _drop_unfinished(self) -> None:
        self._request_timer = None
        if not self.transport.is_closing():
            _once(
                "unfinished",
                f"closed connections whose request did not arrive whole within "
                f"{REQUEST_TIMEOUT:g} s (a body sent a little at a time?)",
            )
            self.transport.close()

    def _drop_if_silent(self) -> None:
        _silent.pop(self, None)
        if self.cycle is None and not self.transport.is_closing():
            _once(
                "silent",
                f"closed connections that sent no request within {FIRST_REQUEST_TIMEOUT:g} s",
            )
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        _silent.pop(self, None)
        _idle.pop(self, None)
        self._cancel_request_timer()
        timer = getattr(self, "_first_request_timer", None)
        if timer is None and getattr(self, "transport", None) is None:
            return  # refused in connection_made: uvicorn never knew it (its transport: None)
        if timer is not None:
            timer.cancel()
        super().connection_lost(exc)


RUN_BODIES = 4  # a run's bodies arriving at once may hold this many times the largest body
TOTAL_BODIES = 16  # and every caller's together this many times
# JSON values (about: commas and openers) of one call's arguments, and of the calls under way
# of one run and of every caller together (``toolcall.call_tool_bytes``). Decoded, each is a
# Python object of 30 to 100 bytes: 8 MB of `[{},{},...]` took the gateway 186 MB, and a
# script's dozen slow calls of it held 2 GB for as long as they ran.
MAX_CALL_VALUES = 1_000_000
RUN_VALUES = 2 * MAX_CALL_VALUES
TOTAL_VALUES = 4 * MAX_CALL_VALUES
# A call of at most this many values (some 2 MB decoded) is never refused for what other
# runs' calls hold, only past its own run's bound: two runs' slow calls of 1,000,000 values
# each filled TOTAL_VALUES, and every other session's call, `{}` too, was refused (413) for
# as long as they ran.
SMALL_CALL_VALUES = 10_000


class BodyBudget:
    """Bytes of request bodies held while they arrive: at most ``per_run`` for one run's
    connections together, ``total`` for all of them (callers with the gateway's own token
    count only in the total). One event loop uses it: no lock."""

    def __init__(
        self,
        per_run: int,
        total: int,
        *,
        what: str = "request bodies arriving at once",
        small: int = 0,
    ) -> None:
        # ``small``: a take of at most this much is bounded by its run's share alone
        self.per_run, self.total, self.what, self.small = per_run, total, what, small
        self.held = 0
        self.runs: dict[str, int] = {}

    @classmethod
    def for_body_limit(cls, max_body: int) -> BodyBudget:
        return cls(RUN_BODIES * max_body, TOTAL_BODIES * max_body)

    def take(self, run: str | None, size: int) -> bool:
        """Hold ``size`` more bytes for ``run``; False (nothing held) when that passes a bound."""
        of_run = self.runs.get(run, 0) if run is not None else 0
        past_total = self.held + size > self.total and size > self.small
        if past_total or (run is not None and of_run + size > self.per_run):
            _once(
                self.what,
                f"{self.what} passed what the gateway holds for them "
                f"({self.per_run} a run, {self.total} in all): the calls past it are refused",
            )
            return False
        self.held += size
        if run is not None:
            self.runs[run] = of_run + size
        return True

    def give_back(self, run: str | None, size: int) -> None:
        self.held -= size
        if run is not None:
            left = self.runs.pop(run, 0) - size
            if left > 0:
                self.runs[run] = left


def raise_file_limit() -> None:
    """Let the gateway use as many file descriptors as the system allows it (POSIX)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted: Any = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ValueError, OSError):  # macOS caps the soft limit below an unlimited hard one
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, 10240), hard))
