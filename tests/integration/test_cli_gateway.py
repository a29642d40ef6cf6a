"""gateway status, list-tools and list-servers against a real gateway process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    clean_env,
    fixture_server,
    python_bin,
    running_gateway,
    toolscript_cli,
)
from toolscript.gateway.guard import agent_url


def run(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return toolscript_cli(*args, cwd=cwd, env=env, timeout=60)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("project")
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time"), "description": "Clock"},
            "fx": fixture_server(),
        }
    }
    with running_gateway(config, directory) as gateway:
        yield gateway


def test_status_finds_the_project_gateway(project: GatewayProcess) -> None:
    result = run("gateway", "status", "--json", cwd=project.directory)
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["running"] is True
    assert status["url"] == agent_url(project.url)  # never the gateway's own token
    assert status["servers"]["time"]["state"] == "connected"
    text = run("gateway", "status", cwd=project.directory)
    assert "running at" in text.stdout
    assert "time\tconnected\t2" in text.stdout


def test_status_from_environment_variable(project: GatewayProcess, tmp_path: Path) -> None:
    result = run("gateway", "status", cwd=tmp_path, TOOLSCRIPT_GATEWAY_URL=project.url)
    assert result.returncode == 0


def test_status_when_nothing_runs(tmp_path: Path) -> None:
    result = run("gateway", "status", cwd=tmp_path)
    assert result.returncode == 1
    assert "not running" in result.stderr
    assert "gateway start" in result.stderr
    dead = run(
        "gateway", "status", "--json", cwd=tmp_path, TOOLSCRIPT_GATEWAY_URL="http://127.0.0.1:9/x"
    )
    assert dead.returncode == 1
    assert json.loads(dead.stdout)["running"] is False
    told = run("gateway", "status", cwd=tmp_path, TOOLSCRIPT_GATEWAY_URL="http://127.0.0.1:9/x")
    assert told.returncode == 1
    hint = told.stderr.split("hint: ", 1)[1]
    assert "gateway status" not in hint  # not this very command again
    assert "unset TOOLSCRIPT_GATEWAY_URL" in hint
    elsewhere = run("search", "x", cwd=tmp_path, TOOLSCRIPT_GATEWAY_URL="http://127.0.0.1:9/x")
    assert elsewhere.returncode == 1
    assert "unset TOOLSCRIPT_GATEWAY_URL" in elsewhere.stderr  # the URL came from it


def test_gateway_stop_says_the_gateway_of_the_environment_is_not_its_own(
    project: GatewayProcess, tmp_path: Path
) -> None:
    """In a Claude Code session TOOLSCRIPT_GATEWAY_URL names the session's gateway, which
    `gateway status` reports running: `gateway stop` says why it leaves it, not that none runs."""
    left = run("gateway", "stop", cwd=tmp_path, TOOLSCRIPT_GATEWAY_URL=project.url)
    assert left.returncode == 0
    assert "TOOLSCRIPT_GATEWAY_URL" in left.stderr
    assert left.stderr != "gateway: not running\n"
    assert (
        run("gateway", "status", cwd=tmp_path, TOOLSCRIPT_GATEWAY_URL=project.url).returncode == 0
    )


def test_a_second_gateway_for_a_project_names_the_first_and_exits(tmp_path: Path) -> None:
    config = {"mcpServers": {"fx": fixture_server()}}
    with running_gateway(config, tmp_path) as first:
        second = run("gateway", "start", "--port", "0", cwd=tmp_path)
        assert second.returncode == 1, second.stderr
        assert f"a gateway already serves this project (pid {first.process.pid}" in second.stderr
        assert "`toolscript gateway stop`" in second.stderr
        assert second.stdout == ""  # no URL: nothing started
        status = json.loads(run("gateway", "status", "--json", cwd=tmp_path).stdout)
        assert status["running"] is True and status["url"] == agent_url(first.url)
        private = run("exec", "return 1", cwd=tmp_path)  # the project's gateway still serves
        assert private.returncode == 0, private.stderr


def test_two_gateway_starts_at_once_leave_one_serving(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {}, "search": {"semantic": False}})
    )
    starts = [
        subprocess.Popen(
            [sys.executable, "-m", "toolscript", "gateway", "start", "--port", "0"],
            cwd=tmp_path,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        refused = None
        deadline = time.monotonic() + 120
        while refused is None and time.monotonic() < deadline:
            refused = next((start for start in starts if start.poll() is not None), None)
            time.sleep(0.1)
        assert refused is not None, "both gateways kept serving"
        assert refused.returncode == 1
        assert "a gateway already serves this project" in (
            refused.stderr.read() if refused.stderr else ""
        )
        serving = next(start for start in starts if start is not refused)
        assert serving.poll() is None
        status = json.loads(run("gateway", "status", "--json", cwd=tmp_path).stdout)
        assert serving.stdout is not None
        assert status["running"] is True and status["url"] == agent_url(
            serving.stdout.readline().strip()
        )
    finally:
        for start in starts:
            if start.poll() is None:
                start.terminate()
                start.wait(30)


def test_status_degraded_exit_code(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"gone": {"command": "no-such-binary-here"}}}, tmp_path):
        result = run("gateway", "status", cwd=tmp_path)
    assert result.returncode == 3
    assert "no-such-binary-here" in result.stdout


def test_list_tools(project: GatewayProcess) -> None:
    plain = run("list-tools", "time", cwd=project.directory)
    assert plain.returncode == 0
    assert sorted(plain.stdout.split()) == ["convert_time", "get_current_time"]
    verbose = run("list-tools", "fx", "--verbose", cwd=project.directory)
    assert "plain_text\tallow\tReturn the text as a plain text block." in verbose.stdout
    as_json = json.loads(run("list-tools", "time", "--json", cwd=project.directory).stdout)
    assert {tool["name"] for tool in as_json} == {"convert_time", "get_current_time"}
    assert all("inputSchema" in tool for tool in as_json)


def test_list_tools_unknown_server(project: GatewayProcess) -> None:
    result = run("list-tools", "tmie", cwd=project.directory)
    assert result.returncode == 1
    assert "server not found: 'tmie'" in result.stderr
    assert "configured: time, fx" in result.stderr
    assert "did you mean: time?" in result.stderr


def test_list_tools_without_config_or_gateway(tmp_path: Path) -> None:
    result = run("list-tools", "github", cwd=tmp_path)
    assert result.returncode == 1
    assert "zero servers configured" in result.stderr
    (tmp_path / ".toolscript.json").write_text('{"mcpServers": {"github": {"command": "x"}}}')
    no_gateway = run("list-tools", "github", cwd=tmp_path)
    assert no_gateway.returncode == 1
    assert "gateway start" in no_gateway.stderr


def test_list_servers_adds_live_state(project: GatewayProcess) -> None:
    servers = json.loads(run("list-servers", "--json", cwd=project.directory).stdout)
    assert servers[0]["state"] == "connected"
    assert servers[0]["tools"] == 2
    text = run("list-servers", cwd=project.directory).stdout
    assert text.splitlines()[0] == "time\tstdio\tconnected\t2\t\tClock\t.toolscript.json"


def test_gateway_stop_stops_the_project_gateway_and_its_servers(tmp_path: Path) -> None:
    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    with running_gateway(config, tmp_path) as gateway:
        family = gateway.descendants()
        assert family  # its server
        stopped = run("gateway", "stop", cwd=tmp_path)
        assert stopped.returncode == 0, stopped.stderr
        assert f"gateway: stopped (pid {gateway.process.pid})" in stopped.stdout
        assert gateway.process.wait(timeout=10) is not None
        _, alive = psutil.wait_procs(family, timeout=10)
        assert alive == []
        assert run("gateway", "status", cwd=tmp_path).returncode == 1
        again = run("gateway", "stop", "--json", cwd=tmp_path)
        assert again.returncode == 0
        assert json.loads(again.stdout) == {"running": False, "stopped": False}


def test_gateway_stop_never_signals_another_program_given_the_gateway_s_pid(
    tmp_path: Path,
) -> None:
    """A gateway killed outright leaves its state file; a program later given its number is
    not that gateway (no answer at the file's URL, started after the file): left alone."""
    cache = subprocess.run(
        [
            sys.executable,
            "-c",
            "from toolscript.plumbing.paths import user_cache_dir as d; print(d())",
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with running_gateway({"mcpServers": {}}, tmp_path) as gateway:
        (state_file,) = [
            path
            for path in (Path(cache) / "gateways").glob("*.json")
            if json.loads(path.read_text()).get("pid") == gateway.process.pid
        ]
        gateway.process.kill()
        gateway.process.wait(timeout=10)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state = json.loads(state_file.read_text())
        state_file.write_text(json.dumps(state | {"pid": other.pid, "started": time.time() - 3600}))
        left = run("gateway", "stop", cwd=tmp_path)
        assert left.returncode == 0 and "not running" in left.stderr, left.stderr
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
        state_file.unlink(missing_ok=True)
