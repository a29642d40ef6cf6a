"""What a command waits for of a gateway still starting (`gateway start &` just before it):
the servers its script calls, not the slowest of the others. `exec` did so already
(test_first_hour15.py); `exec --background` and `toolscript run NAME` waited for every
server, up to the gateway's whole ready wait, though their script called a quick one.

Each test has a gateway of its own, still starting: a clock, and a slow server that
connects only once the test makes its `go` file. A command that needs the clock alone
ends while the slow server is still not started; one that calls the slow server waits.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import (
    command_held_by,
    gated_server,
    python_bin,
    starting_gateway,
    toolscript_cli,
    wait_for_start_mark,
)

CLOCK_SCRIPT = (
    'import { tools } from "toolscript";\n'
    'return (await tools.clock.getCurrentTime({ timezone: "UTC" })).timezone;\n'
)
SLOW_SCRIPT = CLOCK_SCRIPT.replace("tools.clock", "tools.slow")
SERVES_EARLY = (
    "toolscript: this project's gateway is still connecting slow; the script calls none of "
    "them, so it serves now without them (they join when connected)"
)


@dataclass
class Starting:
    directory: Path
    go: Path  # the slow server starts once this file exists

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return toolscript_cli(*args, cwd=self.directory)


@pytest.fixture
def starting(tmp_path: Path) -> Iterator[Starting]:
    """A project whose `gateway start` was just begun: the clock connects, the slow server
    not until the test says so; its saved script `utcZone` calls the clock."""
    go = tmp_path / "go"
    clock = python_bin("mcp-server-time")
    config = {
        "mcpServers": {"clock": {"command": clock}, "slow": gated_server(go, clock)},
        "search": {"semantic": False},
    }
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    (tmp_path / "toolscripts").mkdir()
    for name, server in (("utcZone", "clock"), ("slowZone", "slow")):
        (tmp_path / "toolscripts" / f"{name}.ts").write_text(
            'import { tools } from "toolscript";\n'
            f"/** The {server} server's name of UTC. */\n"
            f"export default async function {name}() {{\n"
            f'  return (await tools.{server}.getCurrentTime({{ timezone: "UTC" }})).timezone;\n'
            "}\n"
        )
    with starting_gateway(tmp_path, go):
        wait_for_start_mark(tmp_path, "slow")
        yield Starting(tmp_path, go)


def test_a_background_run_waits_only_for_the_servers_its_script_calls(
    starting: Starting,
) -> None:
    """`exec --background` of a clock script waited for the slow server before it printed
    its run's id; one of a slow script still waits for it, and says so."""
    with command_held_by(
        starting.go, starting.directory, "exec", "--background", SLOW_SCRIPT
    ) as slow_start:
        assert slow_start.stderr is not None
        said = slow_start.stderr.readline()
        assert "to connect slow, which the script calls" in said, said
        clock = starting.cli("exec", "--background", CLOCK_SCRIPT)
        assert clock.returncode == 0, clock
        assert SERVES_EARLY in clock.stderr, clock.stderr
        assert not starting.go.exists()  # the slow server was never waited for
        waited = starting.cli("runs", "wait", clock.stdout.strip())
        assert (waited.returncode, waited.stdout) == (0, '"UTC"\n'), waited
        starting.go.touch()
        out, err = slow_start.communicate(timeout=120)
        assert slow_start.returncode == 0, err
        waited = starting.cli("runs", "wait", out.strip())
        assert (waited.returncode, waited.stdout) == (0, '"UTC"\n'), waited


def test_a_saved_script_run_waits_only_for_the_servers_it_calls(starting: Starting) -> None:
    """`toolscript run utcZone` ran `scripts.utcZone()`, which names no server: it waited
    for every one. Its file says it calls the clock alone. `run slowZone` waits for the
    slow server, still connecting after the gateway served (its check failed at once)."""
    with command_held_by(starting.go, starting.directory, "run", "slowZone") as slow_run:
        assert slow_run.stderr is not None
        said = slow_run.stderr.readline()
        assert "to connect slow, which the script calls" in said, said
        ran = starting.cli("run", "utcZone")
        assert (ran.returncode, ran.stdout) == (0, '"UTC"\n'), ran
        assert SERVES_EARLY in ran.stderr, ran.stderr
        assert not starting.go.exists()
        starting.go.touch()
        out, err = slow_run.communicate(timeout=120)
        assert (slow_run.returncode, out) == (0, '"UTC"\n'), err


def test_a_script_file_run_as_a_command_waits_only_for_its_servers(starting: Starting) -> None:
    """`toolscript SCRIPT.ts` is `exec --file SCRIPT.ts`: the clock alone is waited for."""
    (starting.directory / "zone.ts").write_text(CLOCK_SCRIPT)
    ran = starting.cli("zone.ts")
    assert (ran.returncode, ran.stdout) == (0, '"UTC"\n'), ran
    assert SERVES_EARLY in ran.stderr, ran.stderr
    assert not starting.go.exists()


def test_list_tools_and_get_types_of_a_server_wait_only_for_it(starting: Starting) -> None:
    """`list-tools clock` and `get-types clock` waited for the slow server they do not ask
    about; they answer once the clock is tried."""
    listed = starting.cli("list-tools", "clock")
    assert listed.returncode == 0 and "get_current_time" in listed.stdout, listed
    assert (
        "toolscript: this project's gateway is still connecting slow; the command asks for "
        "none of them, so it serves now without them (they join when connected)"
    ) in listed.stderr, listed.stderr
    typed = starting.cli("get-types", "clock")
    assert typed.returncode == 0 and "getCurrentTime" in typed.stdout, typed
    assert not starting.go.exists()
