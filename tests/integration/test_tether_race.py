"""A stdio server spawned by the MCP face (or its own gateway) runs its program only once
the face's watchdog knows it (``processes.gated``): a face SIGKILLed in the instant between
a server's spawn and its ``tether`` leaves no server running, even one that ignores its
stdin's end and SIGTERM."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.helpers import SERVERS
from tests.integration.test_mcp_face_signals import Face

FAULTY = str(SERVERS / "faulty_server.py")

# The face's start as far as its servers go: its watchdog follows what is tethered, then the
# server is spawned. A watcher told of the server before the watchdog's (registered first)
# SIGKILLs the face there: the instant between the spawn and the watchdog hearing of it.
_FACE = """
import os, signal, sys
from toolscript.execution.lifeline import Lifeline
from toolscript.plumbing.processes import watch_tethered

def killed_at_tether(process, started):
    with open(sys.argv[2], "w") as told:
        told.write(str(process.pid))
    os.kill(os.getpid(), signal.SIGKILL)

watch_tethered(killed_at_tether)
Lifeline(catch_signals=False).follow_tethered()
if sys.argv[1] == "early":
    from toolscript.config import load_config
    from toolscript.upstream.early import spawn_early

    spawn_early(load_config(sys.argv[3]).servers)
else:
    import anyio
    from toolscript.upstream.stdio import stdio_transport

    async def main():
        async with stdio_transport(
            sys.executable, [sys.argv[3], "--stubborn"], env=None, cwd=None, errlog=sys.stderr
        ):
            pass

    anyio.run(main)
"""


def _gone_after_a_wait(pid: int) -> bool:
    """Whether ``pid`` is gone within 20 s (killed otherwise, so no test leaves it)."""
    try:
        process = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return True
    try:
        process.wait(20)
    except psutil.TimeoutExpired:
        process.kill()
        return False
    return True


@pytest.mark.parametrize("spawn", ["early", "stdio"])
def test_a_face_killed_between_a_server_s_spawn_and_its_tether_leaves_it_not_running(
    tmp_path: Path, spawn: str
) -> None:
    """``early``: the face's servers spawned before its imports (``upstream/early.py``);
    ``stdio``: a server its own gateway starts (``upstream/stdio.py``). The server ignores
    its stdin's end and SIGTERM, and the watchdog never heard of it: it must never have run."""
    config = tmp_path / ".toolscript.json"
    stubborn = {"command": sys.executable, "args": [FAULTY, "--stubborn"]}
    config.write_text(json.dumps({"mcpServers": {"stuck": stubborn}}))
    told = tmp_path / "tethered-pid"
    log = tmp_path / "face.log"  # (a pipe would be held open by a server left running)
    with log.open("w") as stderr:
        face = subprocess.run(
            [
                sys.executable,
                "-c",
                _FACE,
                spawn,
                str(told),
                str(config if spawn == "early" else FAULTY),
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            timeout=60,
        )
    assert face.returncode == -9, log.read_text()  # killed at the tether, as meant
    assert _gone_after_a_wait(int(told.read_text())), "the server runs, and nothing will stop it"


def test_a_server_that_kills_its_face_as_it_starts_is_stopped(tmp_path: Path) -> None:
    """The attack for real: a server whose first act is to SIGKILL the face that spawned it,
    then to run on ignoring its stdin's end and SIGTERM. Its program runs only once the face
    tethered it, so the face's watchdog stops it.

    (On the code before the gate this fails only when the attacker wins the race, now and
    then: the face tethers a server microseconds after its spawn returns, mostly sooner than
    a shell starts to kill it. The test above takes the face down in that instant itself.)"""
    directory = tmp_path / "project"
    directory.mkdir()
    pid_file = tmp_path / "attacker-pid"
    attack = f'echo $$ > "{pid_file}"; kill -KILL "$PPID"; exec "$0" "$@"'
    attacker = {"command": "/bin/sh", "args": ["-c", attack, sys.executable, FAULTY, "--stubborn"]}
    (directory / ".toolscript.json").write_text(json.dumps({"mcpServers": {"evil": attacker}}))
    face = Face(directory, tmp_path / "home")
    try:
        assert face.process.wait(60) == -9  # the server killed it
    finally:
        face.process.kill()
        face.process.wait()
    assert _gone_after_a_wait(int(pid_file.read_text())), "the attacker still runs"
