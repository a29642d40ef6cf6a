"""A tool file that hangs on import never holds the gateway (issue 49, item 4).

Describing a file has a deadline (its error names the file and the deadline, the other
servers serve), and a stop ends it at once: SIGTERM stops the gateway promptly with no
describing process left, and a gateway killed outright leaves none behind either.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import argv, running_gateway
from toolscript.config import ServerConfig
from toolscript.upstream import local
from toolscript.upstream.base import ServerState
from toolscript.upstream.local import LocalToolServer

HANGS = "import time\n\ntime.sleep(900)\n\n\ndef never() -> int:\n    return 1\n"
HANGS_IN_WORKER = "# /// script\n# dependencies = []\n# ///\n" + HANGS
GOOD = 'def ping() -> str:\n    """Answer pong."""\n    return "pong"\n'
EXIT_WAIT = 60.0  # a bound far under the 600 s the gateway could wait before, not a timing


def _project(directory: Path, hanging: str) -> dict[str, object]:
    tools = directory / "tools"
    tools.mkdir()
    (tools / "slow.py").write_text(hanging)
    (tools / "good.py").write_text(GOOD)
    return {"mcpServers": {}, "localTools": {"dir": "tools"}}


def _describing(gateway: psutil.Process) -> list[psutil.Process]:
    """The gateway's descendants that run the worker on slow.py."""
    found = []
    for child in gateway.children(recursive=True):
        try:
            if any(word.endswith("slow.py") for word in argv(child)):
                found.append(child)
        except psutil.Error:
            continue
    return found


def _wait_for(condition: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.1)


@pytest.mark.parametrize("hanging", [HANGS, HANGS_IN_WORKER], ids=["internal", "external"])
def test_sigterm_stops_a_gateway_whose_tool_file_hangs_on_import(
    tmp_path: Path, hanging: str
) -> None:
    config = _project(tmp_path, hanging)
    with running_gateway(config, tmp_path, "--ready-wait", "1") as gateway:
        # The rest of the gateway serves meanwhile.
        answer = gateway.client.post("tools/good__ping", json={})
        assert answer.status_code == 200, answer.text
        assert json.loads(answer.text) == "pong" or "pong" in answer.text
        process = psutil.Process(gateway.process.pid)
        if hanging is HANGS_IN_WORKER:
            _wait_for(lambda: len(_describing(process)) >= 2)  # uv, and the worker under it
        descendants = process.children(recursive=True)
        gateway.process.send_signal(signal.SIGTERM)
        gateway.process.wait(EXIT_WAIT)  # before: up to 600 s (worker) or never (in-process)
        _, alive = psutil.wait_procs(descendants, timeout=EXIT_WAIT)
        assert not alive, f"left running: {[argv(p) for p in alive if p.is_running()]}"


def test_a_killed_gateway_leaves_no_describing_process(tmp_path: Path) -> None:
    config = _project(tmp_path, HANGS_IN_WORKER)
    with running_gateway(config, tmp_path, "--ready-wait", "1") as gateway:
        process = psutil.Process(gateway.process.pid)
        _wait_for(lambda: len(_describing(process)) >= 2)
        describing = _describing(process)
        gateway.process.kill()  # what Claude Code's SessionEnd hook does after 10 s
        gateway.process.wait(EXIT_WAIT)
        _, alive = psutil.wait_procs(describing, timeout=EXIT_WAIT)
        try:
            assert not alive, f"orphaned: {[argv(p) for p in alive if p.is_running()]}"
        finally:
            for leftover in alive:
                leftover.kill()


@pytest.mark.parametrize("hanging", [HANGS, HANGS_IN_WORKER], ids=["internal", "external"])
def test_describing_a_tool_file_has_a_deadline(
    tmp_path: Path, hanging: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "slow.py"
    path.write_text(hanging)
    monkeypatch.setattr(local, "IMPORT_TIMEOUT", 1.0)
    monkeypatch.setattr(local, "INSTALL_TIMEOUT", 3.0)
    server = LocalToolServer(
        ServerConfig(name="slow", transport="local", command=str(path)), gateway=None
    )

    async def main() -> None:
        running = asyncio.ensure_future(server.run())
        await server.first_attempt_done.wait()
        await server.stop()
        await asyncio.wait_for(running, EXIT_WAIT)

    asyncio.run(main())
    assert server.first_attempt_done.is_set()
    assert server.state == ServerState.STOPPED
    assert server.error is not None
    deadline = "1 s" if hanging is HANGS else "3 s"
    assert str(path) in server.error and f"took over {deadline}" in server.error
    assert server.status()["error"] == server.error
