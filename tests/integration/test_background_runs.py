"""Background runs (`exec --background`, `runs wait`, `runs stop`) and progress reports
(a script's `progress()`, a server's notifications/progress) against a real gateway."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    argv,
    fixture_server,
    node_server,
    running_gateway,
    toolscript_cli,
    wait_until,
)

SLOW = """console.log("started");
await new Promise((resolve) => setTimeout(resolve, 600_000));
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {
        "mcpServers": {
            "everything": {"command": node_server("mcp-server-everything")},
            "fx": fixture_server(),
        }
    }
    with running_gateway(config, tmp_path_factory.mktemp("background")) as started:
        yield started


def cli(
    gateway: GatewayProcess, home: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    return toolscript_cli(*args, cwd=gateway.directory, env=env, timeout=timeout)


def start(gateway: GatewayProcess, home: Path, code: str, *options: str) -> str:
    started = cli(gateway, home, "exec", "--background", "--json", code, *options)
    assert started.returncode == 0, started.stderr
    run_id: str = json.loads(started.stdout)["run"]
    return run_id


def sandboxes_of(gateway: GatewayProcess) -> list[psutil.Process]:
    """The gateway's background runners and the Deno each started."""
    found = []
    for process in gateway.descendants():
        command = argv(process)
        runner = "toolscript.execution.detached" in command
        if runner or (command[1:2] == ["run"] and "deno" in Path(command[0]).name):
            found.append(process)
    return found


def test_a_background_run_is_waited_on_from_a_second_cli_process(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    code = """import { tools, progress } from "toolscript";
console.log("first line");
await progress("fetched 40 of 120 issues", 0.33);
console.error("a warning");
const echoed = await tools.fx.plainText({ text: "hi" });
return { echoed };
"""
    run_id = start(gateway, toolscript_home, code)
    # The command that started it is gone; another one follows the run to its end.
    waited = cli(gateway, toolscript_home, "runs", "wait", run_id)
    assert waited.returncode == 0, waited.stderr
    lines = waited.stdout.splitlines()
    assert lines[0] == "first line"
    assert json.loads(lines[-1]) == {"echoed": "hi"}
    assert "a warning" in waited.stderr
    assert "toolscript: progress: fetched 40 of 120 issues (33%)" in waited.stderr
    # the run log is the gateway's user's (its state directory), as exec's runs are
    shown = toolscript_cli("runs", "show", run_id, "--json", cwd=gateway.directory)
    assert shown.returncode == 0, shown.stderr
    logged = json.loads(shown.stdout)
    assert logged["origin"] == "background"
    assert logged["status"] == "ok"
    assert [call["tool"] for call in logged["calls_made"]] == ["fx__plain_text"]


def test_a_background_run_keeps_its_limits(gateway: GatewayProcess, toolscript_home: Path) -> None:
    timed = start(gateway, toolscript_home, SLOW, "--timeout", "2")
    calls = start(
        gateway,
        toolscript_home,
        'import { tools } from "toolscript";\nfor (let i = 0; i < 5; i++) await tools.fx.plainText({});',
        "--max-calls",
        "2",
    )
    printed = start(
        gateway, toolscript_home, 'console.log("y".repeat(5000));', "--max-output", "100"
    )
    memory = start(
        gateway,
        toolscript_home,
        "const kept = []; while (true) kept.push(new Array(1e6).fill(1));",
        "--memory",
        "32",
    )
    waited = {
        name: cli(gateway, toolscript_home, "runs", "wait", run_id)
        for name, run_id in [
            ("time", timed),
            ("calls", calls),
            ("output", printed),
            ("memory", memory),
        ]
    }
    assert waited["time"].returncode == 124, waited["time"].stderr
    assert "ran longer than 2 s" in waited["time"].stderr
    assert waited["calls"].returncode == 122, waited["calls"].stderr
    assert "more than 2 tool calls" in waited["calls"].stderr
    assert waited["output"].returncode == 123, waited["output"].stderr
    assert waited["memory"].returncode == 125, waited["memory"].stderr


def test_a_wait_that_times_out_says_how_to_go_on_and_a_stopped_run_ends(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    run_id = start(gateway, toolscript_home, SLOW)
    first = wait_until(
        lambda: cli(gateway, toolscript_home, "runs", "wait", run_id, "--timeout", "2"),
        lambda waited: waited.stdout,
        120,
        "the run's first line",
    )
    assert first.returncode == 3, first.stderr
    assert first.stdout == "started\n"
    go_on = f"toolscript runs wait {run_id} --from 8:0"
    assert go_on in first.stderr
    stopped = cli(gateway, toolscript_home, "runs", "stop", run_id, "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["status"] == "stopped"
    rest = cli(gateway, toolscript_home, "runs", "wait", run_id, "--from", "8:0")
    assert rest.returncode == 143
    assert rest.stdout == ""  # what the first wait showed is not shown again
    assert "was stopped" in rest.stderr
    wait_until(lambda: sandboxes_of(gateway), lambda left: not left, 20, "no sandbox left")


def test_a_script_cannot_wait_on_or_stop_a_background_run(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    victim = start(gateway, toolscript_home, SLOW)
    probe = f"""const base = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
const answers = [];
for (const [method, path] of [["GET", "/runs/{victim}/output"], ["POST", "/runs/{victim}/stop"],
    ["POST", "/runs/start"], ["GET", "/runs/{victim}/progress"]]) {{
  const response = await fetch(base + path, {{ method, body: method === "POST" ? "{{}}" : undefined }});
  answers.push(response.status);
}}
return answers;
"""
    result = cli(gateway, toolscript_home, "exec", probe)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [401, 401, 401, 401]
    still = cli(gateway, toolscript_home, "runs", "wait", victim, "--timeout", "1")
    assert still.returncode == 3  # untouched
    cli(gateway, toolscript_home, "runs", "stop", victim)


def test_progress_of_a_script_and_of_a_server_shows_on_execs_stderr(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    code = """import { tools, progress } from "toolscript";
await progress("fetched 40 of 120 issues", 0.33);
await tools.everything.triggerLongRunningOperation({ duration: 0.4, steps: 2 });
"""
    result = cli(gateway, toolscript_home, "exec", code)
    assert result.returncode == 0, result.stderr
    assert "toolscript: progress: fetched 40 of 120 issues (33%)" in result.stderr
    assert "toolscript: progress: everything.trigger-long-running-operation: 50%" in result.stderr
    assert "toolscript: progress: everything.trigger-long-running-operation: 100%" in result.stderr


def test_a_background_run_outlives_its_cli_but_not_the_gateway(
    tmp_path: Path, toolscript_home: Path
) -> None:
    with running_gateway({"mcpServers": {}}, tmp_path) as own:
        run_id = start(own, toolscript_home, SLOW)
        wait_until(
            lambda: sandboxes_of(own),
            lambda found: len(found) >= 2,
            60,
            "the runner and its Deno",
            log=lambda: own.log,
        )
        running = sandboxes_of(own)
        left = own.stop()
        assert left == []
        _, alive = psutil.wait_procs(running, timeout=10)
        assert alive == [], [argv(process) for process in alive]
    shown = toolscript_cli("runs", "show", run_id, "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["status"] == "stopped"


def test_a_killed_gateway_leaves_no_runner_or_sandbox(
    tmp_path: Path, toolscript_home: Path
) -> None:
    """SIGKILL gives the gateway no shutdown: the runner sees its stdin close instead."""
    with running_gateway({"mcpServers": {}}, tmp_path) as own:
        start(own, toolscript_home, SLOW)
        running = wait_until(
            lambda: sandboxes_of(own),
            lambda found: len(found) >= 2,
            60,
            "the runner and its Deno",
            log=lambda: own.log,
        )
        family = own.descendants()  # its servers and search worker too, for the clean-up
        own.process.kill()
        own.process.wait()
        _, alive = psutil.wait_procs(running, timeout=20)
        assert alive == [], [argv(process) for process in alive]
        # the rest of the family leaves as each finds its pipe closed (a search worker once
        # its model is loaded); whatever has not by now is this test's to stop
        _, rest = psutil.wait_procs(family, timeout=5)
        for leftover in rest:
            leftover.kill()


def test_json_without_background_is_refused(tmp_path: Path) -> None:
    refused = toolscript_cli("exec", "--json", "return 1", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--json goes with --background" in refused.stderr


def test_the_work_that_waits_for_an_idle_gateway_does_not_wait_for_a_background_run(
    tmp_path: Path,
) -> None:
    """The warm checker (and the search model) start once no script runs; a background run
    may take hours, and the gateway counts it out."""
    with running_gateway({"mcpServers": {}}, tmp_path) as own:
        started = own.client.post("runs/start", json={"script": SLOW})
        assert started.status_code == 200, started.text
        own.wait_for_health(
            lambda health: health["checker"]["state"] == "ready",
            timeout=120,
            what="the warm checker, started while the background run runs",
        )
        assert own.client.post(f"runs/{started.json()['run']}/stop").json()["status"] == "stopped"


@pytest.mark.timeout(600)  # two gateways, one after the other
def test_a_wait_on_a_run_whose_gateway_restarted_tells_how_it_ended(
    tmp_path: Path, toolscript_home: Path
) -> None:
    # The run is the gateway's: a restarted one holds no such run, and the wait said only
    # "no background run in this gateway"; the run log knows it was stopped with its gateway.
    with running_gateway({"mcpServers": {}}, tmp_path) as first:
        run_id = start(first, toolscript_home, SLOW)
        wait_until(
            lambda: cli(first, toolscript_home, "runs", "wait", run_id, "--timeout", "1"),
            lambda waited: waited.stdout,
            120,
            "the run's first line",
        )
        assert first.stop() == [], "processes outlived the gateway"
    with running_gateway({"mcpServers": {}}, tmp_path) as second:
        # (the run log is the gateway's user's: this process's home, not toolscript_home)
        env = {"TOOLSCRIPT_GATEWAY_URL": second.url}
        waited = toolscript_cli("runs", "wait", run_id, cwd=tmp_path, env=env)
        assert waited.returncode == 143, waited.stderr
        assert "by the run log" in waited.stderr, waited.stderr
        assert f"run {run_id} was stopped\n" in waited.stderr, waited.stderr
        assert second.stop() == [], "processes outlived the gateway"
