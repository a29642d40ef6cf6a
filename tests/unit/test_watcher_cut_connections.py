"""A progress watcher whose connection to the gateway is cut before an answer (a busy
gateway giving its place to another, its connection cap's abort, a proxy cutting a long
poll) takes that for no end of the run: it looks again, and the script goes on.

Before, ``gateway_request`` answered such a cut as "nothing listens" (a reset) or as an
unreachable gateway (closed without a word), and two in a row made exec and the MCP face
kill a healthy script (``ProgressWatcher``'s ``on_gone``).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from toolscript.execution.runhandle import ProgressWatcher, RunHandle

REPORT = {"message": "halfway", "source": "script"}


class CuttingPeer(threading.Thread):
    """A real TCP peer at the gateway's address: it closes its first ``cuts`` connections
    before answering (by reset, then by a plain close, in turn), then answers as a gateway
    whose run goes on with one progress report."""

    def __init__(self, cuts: int) -> None:
        super().__init__(daemon=True)
        self.cuts = cuts
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
    found = CuttingPeer(cuts=4)
    found.start()
    yield found
    found.close()


def test_connections_cut_before_an_answer_stop_no_script(peer: CuttingPeer) -> None:
    url = f"http://127.0.0.1:{peer.port}/token"
    gone: list[bool] = []
    shown: list[dict[str, Any]] = []
    watcher: ProgressWatcher

    def show(report: dict[str, Any]) -> None:
        shown.append(report)
        watcher.done.set()  # the script ended after its report: the watch ends

    watcher = ProgressWatcher(
        RunHandle(url, "run-1", url, None), show, on_gone=lambda: gone.append(True)
    )
    watcher.run()
    assert not gone and not watcher.gone.is_set()
    assert shown == [REPORT]  # it looked again until the gateway answered
    assert peer.taken == 5  # four cut, then the answer
