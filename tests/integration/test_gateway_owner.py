"""``gateway start --stop-with PID:START``: a session's gateway stops with the Claude Code it
serves, even one that ends while the gateway still starts (its SIGTERM handlers not yet in
place: a SIGTERM then would kill it outright, leaving its servers running)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.helpers import SERVERS, clean_env, wait_until
from toolscript.plumbing.processes import process_identity

# ignores SIGTERM and stays when its stdin closes: only SIGKILL ends it
STUBBORN = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py"), "--stubborn"]}
OWNER_LOOKS = 2.0  # seconds between two looks at the owner (``when_gone``'s default)


def test_an_owner_that_ends_while_its_gateway_starts_leaves_no_server(tmp_path: Path) -> None:
    """The owner ends once the gateway spawned its servers and before it could serve; the
    gateway is held (SIGSTOP, a machine too busy to reach its handlers) until past its next
    look at the owner. It must still stop as SIGTERM stops it, its stubborn server with it."""
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / ".toolscript.json").write_text(json.dumps({"mcpServers": {"stuck": STUBBORN}}))
    owner = subprocess.Popen(["sleep", "600"])
    log = tmp_path / "gateway.log"
    start = ["gateway", "start", "--stop-with", process_identity(owner.pid)]
    with log.open("w") as stderr:
        gateway = subprocess.Popen(
            [sys.executable, "-m", "toolscript", *start],
            cwd=directory,
            env=clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home")),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    root = psutil.Process(gateway.pid)
    servers: list[psutil.Process] = []
    try:
        servers = wait_until(
            lambda: root.children(),
            lambda found: any("faulty_server.py" in " ".join(c.cmdline()) for c in found),
            what="the stubborn server's spawn",
        )
        os.kill(gateway.pid, signal.SIGSTOP)
        owner.kill()
        owner.wait()
        time.sleep(OWNER_LOOKS + 0.5)  # (not a measure: the look is then due at once)
        os.kill(gateway.pid, signal.SIGCONT)
        code = gateway.wait(60)
    finally:
        owner.kill()
        owner.wait()
        gateway.kill()
        gateway.wait()
    _, alive = psutil.wait_procs(servers, timeout=20)
    for process in alive:
        process.kill()
    assert alive == [], f"left running: {alive}\n{log.read_text()}"
    assert code == 0, log.read_text()
    assert "ended: stopping" in log.read_text()
