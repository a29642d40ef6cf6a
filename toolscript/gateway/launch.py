"""Starting ``toolscript gateway start`` as a process and reading the URL it prints when ready.

The one way the hooks, exec's ephemeral gateway, the tests and the benchmarks start a
gateway. The gateway prints its URL on stdout once every server has been tried, and
nothing else there; its log goes to stderr. Light on imports: exec's start-up uses it.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from toolscript.plumbing.processes import stop_process

__all__ = ["LaunchedGateway", "gateway_command", "start_gateway", "wait_for_url"]


def gateway_command(*args: str) -> list[str]:
    """The command line of ``toolscript gateway start ARGS`` with this interpreter."""
    # -P: no folder of the caller's on the module path (run in a cloned repository, its
    # `toolscript/` or `json.py` would be imported in place of ours, trusted config or not)
    return [sys.executable, "-P", "-m", "toolscript", "gateway", "start", *args]


@dataclass
class LaunchedGateway:
    """A started gateway: ``url`` is empty when it exited (or did not answer) in time."""

    process: subprocess.Popen[str]
    url: str

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM, wait ``grace`` seconds, SIGKILL (the gateway stops its own servers)."""
        stop_process(self.process, grace)


def start_gateway(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stderr: int | IO[Any] | None = subprocess.PIPE,
    url_file: Path | None = None,
    detach: bool = False,
    wait: float = 120.0,
    on_spawn: Callable[[subprocess.Popen[str]], object] | None = None,
) -> LaunchedGateway:
    """Start a gateway with ``args`` and wait up to ``wait`` seconds for its URL.

    Its stdout is a pipe, or ``url_file`` for a gateway that must outlive its starter
    (with ``detach``, also out of the starter's session, so a Ctrl+C there misses it).
    ``on_spawn`` runs as soon as the process exists, before the wait (to drain its stderr
    pipe, or to have it stopped should the starter die while waiting).
    """
    # The URL holds the gateway's own token: a file made here is its user's alone.
    out = (
        os.fdopen(os.open(url_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w")
        if url_file is not None
        else None
    )
    try:
        process = subprocess.Popen(
            gateway_command(*args),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out if out is not None else subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=detach,
        )
    finally:
        if out is not None:
            out.close()
    if on_spawn is not None:
        on_spawn(process)
    deadline = time.monotonic() + wait
    if url_file is not None:
        url = _poll_file(url_file, process, deadline)
    else:
        url = _read_line(process, deadline)
    return LaunchedGateway(process, url)


def wait_for_url(process: subprocess.Popen[str], wait: float = 120.0) -> LaunchedGateway:
    """A gateway spawned earlier (with stdout a pipe): wait up to ``wait`` seconds for its URL."""
    return LaunchedGateway(process, _read_line(process, time.monotonic() + wait))


def _read_line(process: subprocess.Popen[str], deadline: float) -> str:
    assert process.stdout is not None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return ""
        ready, _, _ = select.select([process.stdout], [], [], min(left, 1.0))
        if ready:  # the URL arrives as one line; end of file means the gateway exited
            return process.stdout.readline().strip()


def _poll_file(path: Path, process: subprocess.Popen[str], deadline: float) -> str:
    while time.monotonic() < deadline:
        url = path.read_text().strip()
        if url or process.poll() is not None:
            return url
        time.sleep(0.05)
    return ""
