"""A progress watcher whose connections to a gateway that still runs are cut (busy, its
listener restarting) stops no script: it asks the gateway's process, not the port, whether
the gateway is gone (``RunHandle.gateway_identity``, ``ProgressWatcher``'s ``on_gone``).

Before, two cut connections in a row killed a person's script. The process is asked rather
than the port again: a script squatting a gone gateway's port would get the request, the
run's token in its path (tests/integration/test_attacks_stop68.py's squat tests).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from toolscript.execution.runhandle import ProgressWatcher, RunHandle, registered
from toolscript.plumbing.processes import process_identity

REPORT = {"message": "halfway", "source": "script"}


class CuttingPeer(threading.Thread):
    """A real TCP peer at the gateway's address: it closes its first ``cuts`` connections
    before answering (by reset, then by a plain close, in turn), then answers as a gateway
    whose run goes on with one progress report."""

    def __init__(self, cuts: int, on_cut: Any = None) -> None:
        super().__init__(daemon=True)
        self.cuts = cuts
        self.on_cut = on_cut  # called after each cut
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.taken = 0

    def run(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                self.taken += 1
                if self.taken <= self.cuts:
                    if self.taken % 2:  # a reset (SO_LINGER 0), as uvicorn's abort
                        connection.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                    connection.close()
                    if self.on_cut is not None:
                        self.on_cut()
                    continue
                body = json.dumps({"progress": [REPORT], "next": 1, "ended": False}).encode()
                connection.sendall(
                    b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def peer() -> Iterator[CuttingPeer]:
    found = CuttingPeer(cuts=3)
    found.start()
    yield found
    found.close()


def watch(peer: CuttingPeer, identity: str) -> tuple[bool, list[dict[str, Any]]]:
    """Whether the watcher of a run at ``peer``, its gateway the process ``identity``,
    called ``on_gone``, and what it showed (the first report ends the watch)."""
    url = f"http://127.0.0.1:{peer.port}/token"
    gone: list[bool] = []
    shown: list[dict[str, Any]] = []
    watcher: ProgressWatcher

    def show(report: dict[str, Any]) -> None:
        shown.append(report)
        watcher.done.set()  # the script ended after its report: the watch ends

    handle = RunHandle(url, "run-1", url, None, gateway_identity=identity)
    watcher = ProgressWatcher(handle, show, on_gone=lambda: gone.append(True))
    watcher.run()
    return bool(gone) or watcher.gone.is_set(), shown


def test_cut_connections_to_a_gateway_that_still_runs_stop_no_script(peer: CuttingPeer) -> None:
    # (this test's own process stands for the gateway's: it runs)
    gone, shown = watch(peer, process_identity(os.getpid()))
    assert not gone
    assert shown == [REPORT]  # it looked again until the gateway answered
    assert peer.taken == 4  # three cut, then the answer


def test_a_cut_connection_to_a_gateway_that_ended_stops_the_script_unasked(
    peer: CuttingPeer,
) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    gone, shown = watch(peer, f"{int(ended.stdout)}:1.00")
    assert gone and shown == []
    assert peer.taken == 1  # nothing asked again at the port a squatter may hold


def test_a_gateway_killed_as_it_cuts_the_connection_is_not_asked_again() -> None:
    """A killed process closes its sockets before it ends: the cut comes while it is still
    listed. The watcher looks at it again after a pause, not at the port (where the script
    may listen by then)."""
    gateway = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    assert gateway.stdin is not None
    peer = CuttingPeer(cuts=3, on_cut=gateway.stdin.close)  # it ends as its connection is cut
    peer.start()
    try:
        gone, shown = watch(peer, process_identity(gateway.pid))
    finally:
        peer.close()
        gateway.wait()
    assert gone and shown == []
    assert peer.taken == 1


def test_a_gateway_served_in_this_process_is_not_watched_by_its_process() -> None:
    answer = {"id": "r", "token": "t", "gateway": process_identity(os.getpid())}
    assert registered("http://127.0.0.1:1/own", answer).gateway_identity == ""
    answer["gateway"] = "1:2.00"
    assert registered("http://127.0.0.1:1/own", answer).gateway_identity == "1:2.00"
