"""A stdio server that ends while idle, before the gateway's supervisor has noticed: the next
call reconnects it and gets the answer, never an error for a call the server did not see.

Under load the gateway serves the call that comes right after the kill before ``run`` has
let the ended session go (CI's ``went away during pid: ClosedResourceError``). Here the
supervisor is held busy on purpose (in its ``on_tools_changed``), or the event loop is, so
the call meets that session every time.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import anyio

from tests.helpers import SERVERS, wait_for_exit, wait_until
from toolscript.config import ServerConfig
from toolscript.plumbing.processes import process_alive
from toolscript.upstream.base import ServerState
from toolscript.upstream.early import spawn_early
from toolscript.upstream.server import UpstreamServer

FAULTY = SERVERS / "faulty_server.py"

# Runs faulty_server on its own stdin and stdout; once that server is gone, closes its copy
# of stdout (the gateway reads the end of the stream) and stays until its stdin closes, as a
# wrapper or a server slow in its clean-up does.
WRAPPER = f"""
import os, subprocess, sys
subprocess.run([sys.executable, {str(FAULTY)!r}])
os.close(1)
sys.stdin.buffer.read()
"""


def faulty_entry(*args: str) -> ServerConfig:
    return ServerConfig(name="f", transport="stdio", command=sys.executable, args=args)


def pid_of(result: dict[str, Any]) -> int:
    assert not result.get("isError"), result
    return int(result["content"][0]["text"])


def wait_until_exited(pid: int) -> None:
    """Until our child ``pid`` has exited, all its threads, but is not reaped (its pid still
    exists). ``wait_for_exit`` may return sooner: the main thread is a zombie while the
    others still die, and the process's stdout is open until the last one is gone."""
    if not hasattr(os, "waitid"):  # macOS before Python 3.13: the zombie is the nearest
        wait_for_exit(pid)
        return
    wait_until(
        lambda: os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT),
        lambda exited: exited is not None,
        10,
        f"process {pid}'s exit",
    )


class BusySupervisor:
    """``on_tools_changed`` that holds the supervisor on its first connection until released,
    deaf to cancellation as work in a thread is (the end of the session cancels the rest)."""

    def __init__(self) -> None:
        self.released = anyio.Event()

    async def __call__(self, server: UpstreamServer) -> None:
        with anyio.CancelScope(shield=True):
            await self.released.wait()


async def killed_while_idle(server: UpstreamServer, kill: Any) -> None:
    """Connect ``server``, run ``kill`` (which returns once the server is gone), call its
    pid: a new process answers, and it stays connected."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.run)
        await server.first_attempt_done.wait()
        assert server.state == ServerState.CONNECTED
        first = pid_of(await server.call_tool("pid", {}))
        await kill(first)
        with anyio.fail_after(30):
            second = pid_of(await server.call_tool("pid", {}))
        assert second != first, "answered by a new process"
        assert server.state == ServerState.CONNECTED
        assert pid_of(await server.call_tool("pid", {})) == second
        await server.stop()


def test_a_server_killed_while_the_gateway_was_too_busy_to_read_its_end() -> None:
    # Spawned early, as `gateway start` spawns its servers: nobody reaps it, so once killed
    # it stays a zombie, and its pid exists until it is stopped.
    early = spawn_early([faulty_entry(str(FAULTY))])["f"]
    server = UpstreamServer(faulty_entry(str(FAULTY)), early=early)

    async def kill(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        wait_until_exited(pid)  # blocking the event loop: the end of its stdout is not read

    anyio.run(killed_while_idle, server, kill)
    wait_for_exit(early.process.pid)


def test_a_call_before_the_busy_supervisor_lets_go_waits_for_the_reconnect() -> None:
    busy = BusySupervisor()
    early = spawn_early([faulty_entry(str(FAULTY))])["f"]
    server = UpstreamServer(faulty_entry(str(FAULTY)), early=early, on_tools_changed=busy)

    async def kill(pid: int) -> None:
        os.kill(pid, signal.SIGKILL)
        await anyio.to_thread.run_sync(wait_until_exited, pid)  # its end is read meanwhile
        busy.released.set()  # the call below comes before the supervisor runs again

    anyio.run(killed_while_idle, server, kill)
    wait_for_exit(early.process.pid)


def test_a_server_whose_stdout_ended_before_it_exited_is_reconnected() -> None:
    busy = BusySupervisor()
    server = UpstreamServer(faulty_entry("-c", WRAPPER), on_tools_changed=busy)

    async def kill(pid: int) -> None:
        wrapper = server.server_pid
        assert wrapper is not None and wrapper != pid
        os.kill(pid, signal.SIGKILL)  # the server inside; the wrapper lives on
        with anyio.fail_after(10):
            while not server._lost.is_set():  # the gateway has read the end of its stdout
                await anyio.sleep(0.01)
        assert process_alive(wrapper)
        busy.released.set()  # the call below comes before the supervisor runs again

    anyio.run(killed_while_idle, server, kill)
