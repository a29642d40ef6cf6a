"""A stdio face stopped by its client with a signal stops as when the client closes stdin:
its runs, gateway, servers, spare Deno and ``deno lsp`` stop, and it exits by itself with
the signal's exit status. Claude Code sends SIGINT, SIGTERM 0.1 s later, SIGKILL 0.4 s after
that; here the face gets 5 s before the SIGKILL that would fail the test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import argv, clean_env, python_bin

# a run that outlasts the face's --yield-after: execute answers with its id, it goes on
LONG_RUN = """import { tools } from "toolscript";
await tools.time.getCurrentTime({ timezone: "UTC" });
console.log("waiting");
await new Promise((done) => setTimeout(done, 120_000));
"""
QUICK_RUN = """import { tools } from "toolscript";
return (await tools.time.getCurrentTime({ timezone: "Asia/Tokyo" })).timezone;
"""


class Face:
    """``toolscript mcp`` over raw JSON-RPC on its stdin and stdout."""

    def __init__(self, directory: Path, home: Path) -> None:
        env = clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING", TOOLSCRIPT_HOME=str(home))
        config = str(directory / ".toolscript.json")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "mcp", "--yield-after", "1", "--config", config],
            cwd=directory,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.asked = 0

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.asked += 1
        self.send({"jsonrpc": "2.0", "id": self.asked, "method": method, "params": params})
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == self.asked:
                return dict(message["result"])
        raise AssertionError("the face closed its stdout")

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def execute(self, code: str) -> dict[str, Any]:
        return self.ask("tools/call", {"name": "execute", "arguments": {"code": code}})


def started_face(tmp_path: Path, servers: dict[str, object]) -> Face:
    """A face (initialized) on a project of ``servers``, its home in ``tmp_path``; the same
    project and home for a second call."""
    directory = tmp_path / "project"
    directory.mkdir(exist_ok=True)
    (directory / ".toolscript.json").write_text(json.dumps({"mcpServers": servers}))
    face = Face(directory, tmp_path / "home")
    face.ask(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "face-test", "version": "1"},
        },
    )
    face.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return face


def _started(tmp_path: Path) -> Face:
    return started_face(tmp_path, {"time": {"command": python_bin("mcp-server-time")}})


def _stopped(face: Face, stop: signal.Signals | None) -> tuple[int | None, list[psutil.Process]]:
    """Stop the face with ``stop`` (None: close its stdin); its exit status (None: it was
    still there after 5 s, and was killed) and the processes it left."""
    tree = psutil.Process(face.process.pid).children(recursive=True)
    assert any("mcp-server-time" in " ".join(argv(p)) for p in tree), [argv(p) for p in tree]
    if stop is None:
        assert face.process.stdin is not None
        face.process.stdin.close()
    else:
        face.process.send_signal(stop)
    try:
        code: int | None = face.process.wait(5)
    except subprocess.TimeoutExpired:
        code = None
        face.process.kill()
        face.process.wait()
    _, alive = psutil.wait_procs(tree, timeout=10)
    for left in alive:
        left.kill()
    return code, alive


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_an_idle_face_and_its_tree(tmp_path: Path, stop: signal.Signals) -> None:
    face = _started(tmp_path)
    ran = face.execute(QUICK_RUN)  # a run: the spare Deno and the checker start after it
    assert not ran.get("isError"), ran
    code, left = _stopped(face, stop)
    assert code in (128 + stop, -stop), f"the face did not exit by itself on {stop.name}: {code}"
    assert left == [], f"left running: {[p.pid for p in left]}"


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, None])
def test_the_face_stops_a_run_still_going(tmp_path: Path, stop: signal.Signals | None) -> None:
    """A run execute answered as still going (its Deno runs on) stops with the face, by a
    signal or by the client closing stdin."""
    face = _started(tmp_path)
    yielded = face.execute(LONG_RUN)
    assert yielded.get("structuredContent", {}).get("running") is True, yielded
    code, left = _stopped(face, stop)
    expected = (0,) if stop is None else (128 + stop, -stop)
    assert code in expected, f"the face did not exit by itself: {code}"
    assert left == [], f"left running: {[' '.join(argv(p)) for p in left]}"
