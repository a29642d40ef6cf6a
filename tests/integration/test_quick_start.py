"""The README's quick start pasted as one block: `toolscript gateway start &` and then, at
once, commands that need that gateway. They must find it and wait for it however busy
the machine is, and start no second gateway; with no gateway at all, every command that
needs one starts an ephemeral one for itself, as exec does."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from tests.helpers import argv, clean_env, python_bin, toolscript_cli
from toolscript.gateway.state import gateway_state_file
from toolscript.plumbing.processes import stop_process

TOOLSCRIPT = f"{shlex.quote(sys.executable)} -m toolscript"
CLOCK = 'import { tools } from "toolscript";\nreturn await tools.time.getCurrentTime({ timezone: "Asia/Tokyo" });\n'


def time_project(directory: Path) -> Path:
    config = {
        "mcpServers": {"time": {"command": python_bin("mcp-server-time")}},
        "search": {"semantic": False},
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".toolscript.json").write_text(json.dumps(config))
    (directory / "clock.ts").write_text(CLOCK)
    return directory


@contextmanager
def busy_machine(burners: int = 3) -> Iterator[None]:
    """Processes that burn CPU for as long as the block runs."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)
    ]
    try:
        yield
    finally:
        for process in spinning:
            stop_process(process, 5)


class GatewayWatch:
    """Every `gateway start` process that appears below ``root`` while it runs."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, list[str]] = {}
        self.parents: dict[int, int] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(0.02):
            try:
                below = psutil.Process(self.root).children(recursive=True)
            except psutil.Error:
                return
            for process in below:
                try:
                    line, parent = argv(process), process.ppid()
                except psutil.Error:
                    continue
                if line[1:5] == ["-m", "toolscript", "gateway", "start"]:
                    self.seen.setdefault(process.pid, line)
                    self.parents.setdefault(process.pid, parent)

    def stop(self) -> dict[int, list[str]]:
        """The gateways seen, without a gateway's own children caught between fork and exec
        (they carry its command line for that moment)."""
        self._done.set()
        self._thread.join(5)
        return {pid: line for pid, line in self.seen.items() if self.parents[pid] not in self.seen}


def run_block(
    directory: Path, block: str, timeout: float = 240
) -> tuple[str, dict[int, list[str]]]:
    """Run ``block`` in bash as a user pastes it; its output and the gateways it started."""
    shell = subprocess.Popen(
        ["bash", "-c", block],
        cwd=directory,
        env=clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    watch = GatewayWatch(shell.pid)
    try:
        output, _ = shell.communicate(timeout=timeout)
    finally:
        seen = watch.stop()
        pid_file = directory / "gateway.pid"
        if pid_file.exists() and psutil.pid_exists(int(pid_file.read_text())):
            psutil.Process(int(pid_file.read_text())).terminate()
        stop_process(shell, 10)
    return output, seen


def test_commands_right_after_gateway_start_find_it_on_a_busy_machine(tmp_path: Path) -> None:
    project = time_project(tmp_path / "project")
    block = f"""
{TOOLSCRIPT} gateway start > gateway.url 2> gateway.log &
echo $! > gateway.pid
{TOOLSCRIPT} search time; echo "search exit $?"
{TOOLSCRIPT} list-servers; echo "list-servers exit $?"
{TOOLSCRIPT} exec clock.ts; echo "exec exit $?"
kill $(cat gateway.pid); wait
"""
    with busy_machine():
        output, gateways = run_block(project, block)
    assert "search exit 0" in output, output
    assert "get_current_time" in output
    assert "no gateway is running" not in output
    assert "list-servers exit 0" in output
    assert "time\tstdio\tconnected\t2" in output, output  # the live state, not a bare row
    assert "exec exit 0" in output and "Asia/Tokyo" in output, output
    # The one gateway the block started: exec found it rather than start its own.
    assert len(gateways) == 1, gateways
    assert not any("--ephemeral" in line for line in gateways.values())
    assert (project / "gateway.url").read_text().startswith("http://127.0.0.1:")


SLOW_START = """import os, sys, time
from pathlib import Path
from toolscript.gateway.state import write_gateway_state
cache = Path(".toolscript").resolve()
time.sleep(1.5)  # a start whose interpreter is slow to get going: no mark yet
write_gateway_state(cache, {"pid": os.getpid(), "starting": True})
time.sleep(1.0)
write_gateway_state(cache, {"url": "http://127.0.0.1:9/token", "pid": os.getpid()})
time.sleep(30)
"""
ASK = """import json
from pathlib import Path
from toolscript.gateway.state import ready_gateway_state
state = ready_gateway_state(Path(".toolscript").resolve(), wait=60)
print(json.dumps(state))
"""


def test_a_start_beside_a_command_is_waited_for_before_it_wrote_its_mark(tmp_path: Path) -> None:
    """The job `gateway start &` started just before a command, whose interpreter has not
    reached its mark yet, is still found: the command waits for its mark, then for it."""
    project = time_project(tmp_path / "project")
    (project / "slow_start.py").write_text(SLOW_START)
    (project / "ask.py").write_text(ASK)
    python = shlex.quote(sys.executable)
    block = f"""
{python} slow_start.py toolscript gateway start &
echo $! > gateway.pid
{python} ask.py
kill %1; wait
"""
    output, _ = run_block(project, block, timeout=60)
    state = json.loads(output.strip().splitlines()[-1])
    assert state is not None, output
    assert state["url"] == "http://127.0.0.1:9/token"
    assert state["pid"] == int((project / "gateway.pid").read_text())


def test_commands_that_need_a_gateway_start_one_when_none_runs(tmp_path: Path) -> None:
    project = time_project(tmp_path / "project")
    (project / "report.ts").write_text(
        'import { tools } from "toolscript";\n'
        "export default async function report(input: { zone: string }) {\n"
        "  return await tools.time.getCurrentTime({ timezone: input.zone });\n}\n"
    )
    commands = [
        ("search", "time"),
        ("list-tools", "time"),
        ("get-types", "time", "get_current_time"),
        ("save", "report", "report.ts"),
        ("list-scripts",),
    ]
    outputs = {}
    for command in commands:
        result = toolscript_cli(*command, cwd=project, timeout=240)
        assert result.returncode == 0, (command, result.stderr)
        assert "one is started for this command" in result.stderr, command
        assert "no gateway is running" not in result.stderr
        outputs[command[0]] = result.stdout
    assert "get_current_time" in outputs["search"]
    assert "get_current_time" in outputs["list-tools"]
    assert "getCurrentTime" in outputs["get-types"]
    assert (project / "toolscripts" / "report.ts").exists()
    assert "report" in outputs["list-scripts"]
    # Each ephemeral gateway stopped with its command and recorded nothing.
    assert not gateway_state_file(project / ".toolscript").exists()
    leftovers = [
        child
        for child in psutil.Process().children(recursive=True)
        if "gateway" in " ".join(argv(child))
    ]
    assert leftovers == []
