"""The stdio transport: a server process and newline-delimited JSON-RPC over its pipes.

The SDK's ``stdio_client`` joins every chunk of a long line onto what it read before,
so one 50 MB answer costs it minutes of copying; this reader keeps the chunks of the
line in progress and joins them once (linear in the line's size). Spawning and the
spec's shutdown sequence (close stdin, wait, TERM then KILL the process group) are the
SDK's own, with shorter waits: a server stops within two seconds whatever it does.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.lowlevel
import mcp_types
import msgspec
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from toolscript.plumbing.jsonvalues import cut_nesting, json_values
from toolscript.plumbing.processes import (
    GATE_OPEN,
    gated,
    program_to_spawn,
    signal_quietly,
    tether,
    untether,
)
from toolscript.upstream.early import POLITE, EarlyServer, StopGraces
from toolscript.upstream.limits import (
    REQUEST_RATE,
    NoticeFlood,
    RateWindow,
    RequestFlood,
    listing_or_error,
)
from toolscript.upstream.sdk import (
    TransportStreams,
    create_process,
    executable_command,
    get_default_environment,
    stop_server_process,
)

__all__ = ["early_transport", "stdio_transport"]

log = logging.getLogger("toolscript.upstream")

WRITER_FLUSH_TIMEOUT = 0.5
# One message (a line) a server may send: past it the server is taken as broken, its
# connection dropped (its calls fail at once; it is started again), rather than every byte
# it writes with no newline held until the gateway runs out of memory. Real answers are a
# few MB at most; the gateway reads 50 MB ones in well under a second.
MAX_LINE = 128 * 1024 * 1024
# JSON values (about: its commas and openers) of one message, counted before it is decoded:
# decoded and checked, each is some 200 bytes of the gateway's, so a 30 MB answer of
# `{"p0":{},"p1":{},...}` took it 0.58 GB, and 128 MB of `[{},{},...]` some 8 GB. Past it, the
# server is taken as broken as past MAX_LINE. Real answers hold far fewer.
MAX_LINE_VALUES = 4_000_000
# Levels of a message read as the server sent them when it is nested past the decoder's
# depth: deeper objects and arrays are read as empty ones (``_decode_cut``). Real schemas
# and results hold about 10.
NESTING_CUT = 256


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str] | None,
    cwd: str | Path | None,
    errlog: IO[str],
    on_spawn: Callable[[int], None] | None = None,
    graces: Callable[[], StopGraces] = lambda: POLITE,
) -> AsyncIterator[TransportStreams]:
    """Start the server; yield (read, write) message streams; stop it and its children,
    with the ``graces`` its stop is given then (``early.py``)."""
    if cwd is not None and not Path(cwd).is_dir():  # else "command not found: CWD"
        raise NotADirectoryError(f'its "cwd" is not a folder: {cwd}')
    environment = get_default_environment() | (env or {})
    argv = [program_to_spawn(await executable_command(command), env=environment, cwd=cwd), *args]
    launched = gated(argv, env=environment, cwd=cwd)
    process = await create_process(
        command=launched[0],
        args=launched[1:],
        env=environment,
        errlog=errlog,  # type: ignore[arg-type]
        cwd=cwd,
    )
    tether(process.pid, group=True, server=True)
    if launched != argv:  # (its program runs from here: the watchdog knows it)
        assert process.stdin is not None
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.send(GATE_OPEN)
    if on_spawn is not None:
        on_spawn(process.pid)
    async with _message_streams(
        process, lambda process: _stop_server(process, graces())
    ) as streams:
        yield streams


@asynccontextmanager
async def early_transport(
    early: EarlyServer, graces: Callable[[], StopGraces] = lambda: POLITE
) -> AsyncIterator[TransportStreams]:
    """The streams of a server spawned before the gateway's imports (``upstream/early.py``);
    stopped as ``stdio_transport`` stops its own."""
    process = _EarlyProcess(early.process)
    async with _message_streams(process, lambda process: _stop_early(process, graces())) as streams:
        yield streams


@asynccontextmanager
async def _message_streams(
    process: Any, stop: Callable[[Any], Awaitable[None]]
) -> AsyncIterator[TransportStreams]:
    """(read, write) message streams over ``process``'s stdout and stdin; ``stop`` at the end."""
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    async def read_stdout() -> None:
        assert process.stdout is not None
        async with to_session:
            with suppress(
                anyio.ClosedResourceError,
                anyio.BrokenResourceError,
                anyio.EndOfStream,
                ConnectionError,
                OSError,
            ):
                try:
                    await _deliver_lines(process.stdout, to_session)
                except _Oversized as exc:
                    log.warning("the server of pid %s: %s", getattr(process, "pid", "?"), exc)
        # The session is gone or the server closed stdout: keep the pipe drained so a
        # server flushing its last output can still exit.
        with (
            anyio.CancelScope(shield=True),
            suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError, ConnectionError),
        ):
            while True:
                await process.stdout.receive()

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for item in from_session:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading: end the session rather than let a request hang.
            await to_session.aclose()
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_stdout)
        tasks.start_soon(write_stdin)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(WRITER_FLUSH_TIMEOUT):
                    await writer_done.wait()
                await stop(process)
                untether(process.pid, group=True)
                for stream in (read_stream, write_stream, to_session, from_session):
                    await stream.aclose()
            tasks.cancel_scope.cancel()


async def _stop_server(process: Any, graces: StopGraces) -> None:
    """The SDK's shutdown (close stdin, wait, then TERM and KILL the process group, closing the
    pipes once it exited), with its waits cut short: TERM and KILL come sooner here."""
    for sig, grace in graces.steps():
        if sig is not None:
            signal_quietly(process.pid, sig, group=True)
        with anyio.move_on_after(grace):
            await stop_server_process(process)  # returns once the process is gone
            return


class _EarlyProcess:
    """What the streams and the stop need of a ``subprocess.Popen``: a pid, stdout to
    receive from and stdin to send to without blocking the event loop."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.pid = process.pid
        self.stdout = _PipeReader(process.stdout)
        self.stdin = _PipeWriter(process.stdin)


class _PipeReader:
    def __init__(self, pipe: IO[bytes]) -> None:
        self.pipe, self.fd = pipe, pipe.fileno()
        os.set_blocking(self.fd, False)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self.pipe.closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self.fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if not self.pipe.closed:
            anyio.notify_closing(self.fd)
            self.pipe.close()


class _PipeWriter:
    def __init__(self, pipe: IO[bytes]) -> None:
        self.pipe, self.fd = pipe, pipe.fileno()
        os.set_blocking(self.fd, False)

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.pipe.closed:
                raise anyio.ClosedResourceError
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            view = view[written:]

    async def aclose(self) -> None:
        if not self.pipe.closed:
            anyio.notify_closing(self.fd)
            self.pipe.close()


async def _stop_early(process: _EarlyProcess, graces: StopGraces) -> None:
    """``_stop_server`` for a process spawned early: close stdin, wait, TERM then KILL the
    group, each with the same grace; then its stdout."""
    await process.stdin.aclose()
    for sig, grace in graces.steps():
        if sig is not None:
            signal_quietly(process.pid, sig, group=True)
        with anyio.move_on_after(grace):
            while process.process.poll() is None:
                await anyio.sleep(0.01)
        if process.process.returncode is not None:
            break
    await process.stdout.aclose()


async def _deliver_lines(
    stdout: anyio.abc.ByteReceiveStream,
    to_session: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    """Each line of ``stdout`` as a message, or as the exception its parse raised."""
    pending = bytearray()  # the line in progress, grown in place (no copy per chunk or join)
    notices = RateWindow()
    requests = RateWindow(REQUEST_RATE)  # of the server's own (pings, questions, roots)
    while True:
        chunk = await stdout.receive()
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if pending:
                pending += memoryview(chunk)[start:end]
                line: bytes | bytearray = pending
                pending = bytearray()
            else:
                line = chunk[start:end]
            start = end + 1
            if line.strip():
                if json_values(line) > MAX_LINE_VALUES:
                    raise _Oversized(
                        f"a message of more than {MAX_LINE_VALUES:,} JSON values: its "
                        "connection is dropped"
                    )
                # Parsed before the send, and not kept by this frame after it: a large
                # line is memory only while its message is.
                decoded = _decode(line)
                if decoded is _TOO_DEEP:  # (seconds for the largest: not on the loop)
                    decoded = await anyio.to_thread.run_sync(_decode_cut, line)
                if _is_notification(decoded) and not notices.admit(
                    anyio.current_time(), decoded["method"]
                ):
                    del line, decoded
                    if notices.dropped == 1:
                        await to_session.send(NoticeFlood())
                    continue
                if _is_request(decoded) and not requests.admit(anyio.current_time()):
                    del line, decoded
                    if requests.dropped == 1:
                        await to_session.send(RequestFlood())
                    continue
                message = _validated(line, decoded)
                del line, decoded
                await to_session.send(message)
                del message
        if start < len(chunk):
            pending += memoryview(chunk)[start:]
            if len(pending) > MAX_LINE:
                raise _Oversized(
                    f"a message over {MAX_LINE // (1024 * 1024)} MB (no newline yet): its "
                    "connection is dropped"
                )


class _Oversized(ConnectionError):
    """A server's line past ``MAX_LINE``."""


def _is_notification(decoded: Any) -> bool:
    return isinstance(decoded, dict) and "method" in decoded and "id" not in decoded


def _is_request(decoded: Any) -> bool:
    return isinstance(decoded, dict) and "method" in decoded and "id" in decoded


def parse_line(line: bytes | bytearray) -> SessionMessage | Exception:
    """One line of a server's stdout: a message, or the reason it is none.

    msgspec makes the JSON's strings once, straight from the line (a 50 MB text is 50 MB
    more, not twice that); pydantic then checks the message without copying them.
    """
    decoded = _decode(line)
    return _validated(line, _decode_cut(line) if decoded is _TOO_DEEP else decoded)


def _decode(line: bytes | bytearray) -> Any:
    try:
        return msgspec.json.decode(line)
    except msgspec.DecodeError:
        return _UNPARSED
    except RecursionError:  # nested past the decoder's depth (about 1,000 levels)
        return _TOO_DEEP


def _decode_cut(line: bytes | bytearray) -> Any:
    """A message nested past the decoder's depth, read with what is deeper than
    ``NESTING_CUT`` levels as empty: a listing so read is served (a schema that deep is
    served open, ``limits.bound_schema``), any other answer is its request's error. Its
    connection stays (it was dropped, and with it every other tool of the server)."""
    try:
        decoded = msgspec.json.decode(cut_nesting(line, NESTING_CUT))
    except (msgspec.DecodeError, RecursionError):
        return _UNPARSED
    return listing_or_error(decoded, NESTING_CUT)


def _validated(line: bytes | bytearray, decoded: Any) -> SessionMessage | Exception:
    try:
        if decoded is _UNPARSED:  # pydantic's error names what was wrong (and the line)
            message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        else:
            message = mcp_types.jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message)


_UNPARSED = object()
_TOO_DEEP = object()
