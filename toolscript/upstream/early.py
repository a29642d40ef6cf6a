"""Stdio servers spawned as soon as the trusted config is read, before the gateway's imports.

A server's own start (a Python or Node interpreter loading its SDK) takes about as long as
the gateway's imports (the MCP SDK, Litestar); spawned first, the two overlap and the URL
comes when the slowest server is ready rather than after both. Only the standard library
is imported here: this runs before anything heavy is.

Each process is spawned exactly as ``upstream/stdio.py`` spawns one (the SDK's inherited
environment plus the entry's ``env``, its ``cwd``, a process group of its own, stderr to a
temporary file, behind ``processes.gated``'s gate where a watchdog follows what is
tethered); ``UpstreamServer`` takes it for its first connection (``stdio.early_transport``)
when the entry is still the same, and a process nobody took is stopped (``discard``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from toolscript.config import ServerConfig
from toolscript.plumbing.processes import (
    GATE_OPEN,
    gated,
    program_to_spawn,
    signal_quietly,
    tether,
    untether,
)
from toolscript.plumbing.stderrfile import new_stderr_file

__all__ = [
    "HURRIED",
    "INHERITED_ENV",
    "POLITE",
    "EarlyServer",
    "StopGraces",
    "discard",
    "spawn_early",
    "spawn_key",
]


@dataclass(frozen=True)
class StopGraces:
    """Seconds a stdio server's stop gives it at each step of the spec's order (close its
    stdin, then SIGTERM, then SIGKILL to its process group): to exit once its stdin is
    closed, to exit after SIGTERM, and for its end to be seen after SIGKILL. A server is
    gone within their sum whatever it does."""

    stdin: float
    term: float
    kill: float = 0.5

    def steps(self) -> tuple[tuple[signal.Signals | None, float], ...]:
        return ((None, self.stdin), (signal.SIGTERM, self.term), (signal.SIGKILL, self.kill))


# A gateway stopping (SIGTERM; the session's end gives it 10 s).
POLITE = StopGraces(stdin=1.0, term=0.5)
# A program leaving with its gateway (the MCP face, whose client kills it soon after asking
# it to stop: Claude Code's SIGKILL comes about 0.5 s after its SIGINT, the grace it gives
# its own stdio servers): TERM and KILL come sooner, each server's wait beside the others'.
HURRIED = StopGraces(stdin=0.25, term=0.2)

# The SDK's DEFAULT_INHERITED_ENV_VARS on POSIX (mcp.client.stdio), copied so that this
# module imports no SDK; tests/unit/test_sdk_contract.py pins the two together.
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")


def inherited_environment() -> dict[str, str]:
    """What ``mcp.client.stdio.get_default_environment`` returns (shell functions left out)."""
    return {
        key: value
        for key in INHERITED_ENV
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }


def spawn_key(server: ServerConfig) -> tuple[Any, ...]:
    """What a spawn depends on: a process spawned for another key is not this entry's."""
    return (server.command, tuple(server.args), tuple(sorted(server.env.items())), server.cwd)


@dataclass
class EarlyServer:
    """A server process spawned ahead of its connection, and its stderr file."""

    process: subprocess.Popen[bytes]
    stderr: IO[str]
    key: tuple[Any, ...]

    def usable(self, server: ServerConfig) -> bool:
        return self.process.poll() is None and self.key == spawn_key(server)

    def stop(self, graces: StopGraces = POLITE) -> None:
        """Close its stdin (the spec's polite ask), then TERM and KILL its process group."""
        stop_early(self.process, graces=graces)
        self.stderr.close()


def spawn_early(servers: Iterable[ServerConfig]) -> dict[str, EarlyServer]:
    """Spawn every enabled stdio server now; a server that cannot be spawned is left to the
    gateway, which reports why as it would have. One whose entry names a variable that is
    not set is never started (its token would be sent empty): the gateway says why."""
    spawned: dict[str, EarlyServer] = {}
    for server in servers:
        if server.disabled or server.unset or server.transport != "stdio" or not server.command:
            continue
        stderr = new_stderr_file()  # lives as long as the server process
        env = inherited_environment() | dict(server.env)
        try:
            argv = [program_to_spawn(server.command, env=env, cwd=server.cwd), *server.args]
            launched = gated(argv, env=env, cwd=server.cwd)
            process = subprocess.Popen(
                launched,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                cwd=server.cwd,
                start_new_session=True,
                bufsize=0,
            )
        except OSError:
            stderr.close()
            continue
        tether(process.pid, group=True, server=True)
        if launched != argv:  # (its program runs from here: the watchdog knows it)
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.write(GATE_OPEN)
        spawned[server.name] = EarlyServer(process, stderr, spawn_key(server))
    return spawned


def discard(early: dict[str, EarlyServer]) -> None:
    """Stop every process in ``early`` (none was taken by a connection), side by side."""
    servers = list(early.values())
    early.clear()
    stop_early(*(server.process for server in servers))
    for server in servers:
        server.stderr.close()


def stop_early(*processes: subprocess.Popen[bytes], graces: StopGraces = POLITE) -> None:
    """The stdio transport's stop, blocking, for each of ``processes`` at once: close its
    stdin, wait, TERM then KILL its group (the waits shared: the slowest sets the time)."""
    for process in processes:
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
    left = list(processes)
    for sig, grace in graces.steps():
        if sig is not None:
            for process in left:
                signal_quietly(process.pid, sig, group=True)
        deadline = time.monotonic() + grace
        while any(process.poll() is None for process in left) and time.monotonic() < deadline:
            time.sleep(0.01)
        left = [process for process in left if process.returncode is None]
        if not left:
            break
    for process in processes:
        untether(process.pid, group=True)
        if process.stdout is not None:
            with contextlib.suppress(OSError):
                process.stdout.close()
