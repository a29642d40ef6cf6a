"""The stdio face ends quickly and leaves nothing running however its client ends it: by a
signal (it stops what it started before it exits), or by SIGKILL, which it never sees (its
watchdog stops what it started: servers, ``deno lsp``, the spare Deno, the search worker;
the watchdog itself then leaves), and the next face in the project starts as the first
did. A server that ignores its stdin's end and SIGTERM is killed either way.

Claude Code ends a session with SIGINT, SIGTERM 0.1 s later and SIGKILL about 0.4 s after
that (docs/plugin.md): a face still stopping is killed mid-way."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.helpers import (
    SERVERS,
    argv,
    python_bin,
    toolscript_cli,
    wait_until,
)
from tests.integration.test_mcp_face_signals import QUICK_RUN, Face, started_face
from toolscript.search.semantic import semantic_installed

# ignores SIGTERM and stays when its stdin closes: only SIGKILL ends it
STUBBORN = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py"), "--stubborn"]}


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _kind(process: psutil.Process) -> str:
    """What a process of the face's tree is, by its command line."""
    line = " ".join(argv(process))
    for kind, mark in (
        ("time server", "mcp-server-time"),
        ("stubborn server", "faulty_server.py"),
        ("watchdog", "watchdog.sh"),
        ("search worker", "toolscript.search.process"),
        ("deno lsp", "deno lsp"),
        ("deno", "deno run"),  # the spare (or a sandbox still running)
    ):
        if mark in line:
            return kind
    return line


def _ran(face: Face) -> None:
    """A quick run, waited for (the face yields a run after 1 s: a first one may take longer)."""
    ran = face.execute(QUICK_RUN)
    for _ in range(60):
        if not ran.get("structuredContent", {}).get("running"):
            break
        run = ran["structuredContent"]["run"]
        ran = face.ask("tools/call", {"name": "wait_run", "arguments": {"run": run}})
    assert not ran.get("isError"), ran
    assert ran["structuredContent"] == {"result": "Asia/Tokyo"}, ran


def _whole_tree(face: Face, *servers: str) -> list[psutil.Process]:
    """Every process below the face once it holds ``servers``, its watchdog, the spare Deno
    and ``deno lsp`` (started after a run, once the gateway is idle) and, where semantic
    search is installed, its search worker (taken as it appears, most likely still loading)."""
    wanted = {*servers, "watchdog", "deno", "deno lsp"}
    if semantic_installed():
        wanted.add("search worker")
    root = psutil.Process(face.process.pid)

    def tree() -> list[psutil.Process]:
        return root.children(recursive=True)

    return wait_until(
        tree,
        lambda found: wanted <= {_kind(process) for process in found},
        timeout=60,
        what=f"the face's tree with {sorted(wanted)}",
    )


def _left(tree: list[psutil.Process]) -> list[str]:
    return [f"{_kind(process)} ({process.pid})" for process in tree if _running(process)]


def _left_after_a_wait(tree: list[psutil.Process]) -> list[str]:
    """What of ``tree`` still runs after 20 s (then killed, so no test leaves it)."""
    _, alive = psutil.wait_procs(tree, timeout=20)
    left = _left(alive)
    for process in alive:
        process.kill()
    return left


def test_after_sigterm_nothing_of_the_face_is_left_once_it_exits(tmp_path: Path) -> None:
    """A search worker still loading as the face stopped was unknown to the gateway's stop:
    it outlived the face until its load ended."""
    face = started_face(tmp_path, {"time": {"command": python_bin("mcp-server-time")}})
    _ran(face)
    tree = _whole_tree(face, "time server")
    face.process.send_signal(signal.SIGTERM)
    try:
        code = face.process.wait(30)
        left = _left(tree)  # at once: the face waited for each
    finally:
        face.process.kill()
        psutil.wait_procs(tree, timeout=10)
    assert code == 128 + signal.SIGTERM, code
    assert left == [], f"still running once the face exited: {left}"


def test_a_killed_face_leaves_nothing_and_the_next_one_starts(tmp_path: Path) -> None:
    """SIGKILL: no clean-up by the face. Its watchdog stops every server (a stubborn one by
    SIGKILL), ``deno lsp``, the spare and the search worker, and leaves; a second face in
    the same project and home serves, runs a script and logs it."""
    servers = {"time": {"command": python_bin("mcp-server-time")}, "stuck": STUBBORN}
    face = started_face(tmp_path, servers)
    _ran(face)
    tree = _whole_tree(face, "time server", "stubborn server")
    face.process.kill()
    face.process.wait()
    left = _left_after_a_wait(tree)
    assert left == [], f"left running after the face was killed: {left}"

    again = started_face(tmp_path, servers)
    try:
        _ran(again)
        assert again.process.stdin is not None
        again.process.stdin.close()
        assert again.process.wait(30) == 0
    finally:
        again.process.kill()
    env = {"TOOLSCRIPT_HOME": str(tmp_path / "home")}
    runs = toolscript_cli("runs", "--json", cwd=tmp_path / "project", env=env)
    assert runs.returncode == 0, runs.stderr
    assert any(run["status"] == "ok" for run in json.loads(runs.stdout)), runs.stdout


def test_a_stubborn_server_is_killed_when_claude_code_ends_the_face(tmp_path: Path) -> None:
    """Claude Code's ending: SIGINT, SIGTERM 0.1 s later, SIGKILL 0.4 s after. The server
    ignores both its stdin's end and SIGTERM; it is gone in the end all the same (by the
    face's own stop, or by its watchdog once the face was killed)."""
    servers = {"time": {"command": python_bin("mcp-server-time")}, "stuck": STUBBORN}
    face = started_face(tmp_path, servers)
    _ran(face)
    tree = _whole_tree(face, "time server", "stubborn server")
    face.process.send_signal(signal.SIGINT)
    time.sleep(0.1)
    face.process.send_signal(signal.SIGTERM)
    try:
        face.process.wait(0.4)
    except subprocess.TimeoutExpired:
        face.process.kill()
    face.process.wait()
    left = _left_after_a_wait(tree)
    assert left == [], f"left running after the face ended: {left}"


def test_a_stubborn_server_is_killed_before_a_signalled_face_exits(tmp_path: Path) -> None:
    """SIGTERM alone: the face stops the server itself (stdin closed, SIGTERM, SIGKILL)
    before it exits by itself."""
    servers = {"time": {"command": python_bin("mcp-server-time")}, "stuck": STUBBORN}
    face = started_face(tmp_path, servers)
    _ran(face)
    root = psutil.Process(face.process.pid)
    tree = wait_until(
        lambda: root.children(recursive=True),
        lambda found: "stubborn server" in {_kind(process) for process in found},
        what="the stubborn server",
    )
    face.process.send_signal(signal.SIGTERM)
    try:
        code = face.process.wait(30)
        left = _left(tree)
    finally:
        face.process.kill()
        for process in psutil.wait_procs(tree, timeout=10)[1]:
            process.kill()
    assert code == 128 + signal.SIGTERM, code
    assert left == [], f"still running once the face exited: {left}"


def test_a_face_killed_while_it_starts_leaves_no_server(tmp_path: Path) -> None:
    """The face spawns its servers first thing, then imports the MCP SDK (a second or
    more): killed meanwhile, before it serves, it still leaves none running."""
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / ".toolscript.json").write_text(json.dumps({"mcpServers": {"stuck": STUBBORN}}))
    face = Face(directory, tmp_path / "home")
    root = psutil.Process(face.process.pid)
    try:
        tree = wait_until(
            lambda: root.children(recursive=True),
            lambda found: "stubborn server" in {_kind(process) for process in found},
            what="the stubborn server's spawn",
        )
        # (killed within the import of the MCP SDK; the instant between the spawn and its
        # tether to the watchdog is test_tether_race's)
        time.sleep(0.3)
    finally:
        face.process.kill()
        face.process.wait()
    left = _left_after_a_wait(tree)
    assert left == [], f"left running after the face was killed: {left}"
