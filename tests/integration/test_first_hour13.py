"""A user's first hour, thirteenth pass: what tripped new users the earlier passes
(test_first_hour.py to test_first_hour12.py) did not meet. A server that fails in a gateway
started fresh, whose tools the project's last build listed; a failure reason whose end says
what to do, in `list-servers` on a terminal and in a pipe; `toolscript runs` in a project
folder that was moved; a first script that forgot its import, with a gateway running.

Each test asserts what the user is told, with real processes; they share one gateway, but
for the one whose project is moved.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    clean_env,
    gateway_cli,
    on_a_terminal,
    toolscript_cli,
)

ECHO = 'import { tools } from "toolscript";\nreturn await tools.echo.echo({ text: "hi" });\n'
# A server that needs a key: it says on stderr what to set and where, at the end of a long line.
NEEDS_KEY = (
    "import sys; print('weather: the Weather API refused to start: no API key was found in "
    "the environment of this process; set WEATHER_API_KEY in the env of its entry', "
    "file=sys.stderr); sys.exit(1)"
)

# A tool file with a dependency no cache of this test holds.
SIZES = """# /// script
# dependencies = ["humanize"]
# ///
import humanize


def size(n: int) -> str:
    \"\"\"A size in bytes as people read it.\"\"\"
    return humanize.naturalsize(n)
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A project whose echo server listed its tools to a first gateway, then was repointed
    at a file that is not there (its script moved), and a fresh gateway started for it; and a
    server that exits asking for a key."""
    directory = tmp_path_factory.mktemp("project")
    echo: dict[str, Any] = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py")]}
    weather = {"command": sys.executable, "args": ["-c", NEEDS_KEY]}
    (directory / "tools").mkdir()
    (directory / "tools" / "sizes.py").write_text(SIZES)
    config = {
        "mcpServers": {"echo": echo, "weather": weather},
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    # an offline machine: uv is to use its cache alone (an empty one here)
    offline = {"UV_OFFLINE": "1", "UV_CACHE_DIR": str(directory / "uv-cache")}
    first = GatewayProcess(config, directory, env=offline)
    try:
        first.wait_for_health(
            lambda health: health["servers"]["echo"]["state"] == "connected", what="echo"
        )
    finally:
        assert first.stop() == []
    echo["args"] = [str(directory / "moved_away.py")]
    gateway = GatewayProcess(config, directory, env=offline)
    try:
        gateway.wait_for_health(
            lambda health: (
                {health["servers"][name]["state"] for name in ("echo", "weather", "sizes")}
                == {"failed"}
            ),
            what="echo, weather and sizes failed",
        )
    except BaseException:
        gateway.stop()  # a fixture that fails before its yield is not torn down
        raise
    yield gateway
    assert gateway.stop() == []


def test_a_fresh_gateway_lists_a_failed_servers_last_known_tools(gateway: GatewayProcess) -> None:
    """Search and get-types served echo's tools from the last build, but `list-tools echo`
    failed (exit 1, "not available"), and get-types did not say they were stale."""
    listed = gateway_cli(gateway, "list-tools", "echo", "--verbose")
    assert listed.returncode == 0, listed.stderr
    assert "echo\tallow\tEcho the text back." in listed.stdout, listed.stdout
    assert "note: echo is failed (exited while connecting: " in listed.stderr
    assert "the tools listed are from its last listing, and a call of one fails until it " in (
        listed.stderr
    )
    as_json = gateway_cli(gateway, "list-tools", "echo", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert "echo" in [tool["name"] for tool in json.loads(as_json.stdout)]
    types = gateway_cli(gateway, "get-types", "echo", "echo")
    assert types.returncode == 0, types.stderr
    assert "// echo is failed (exited while connecting: " in types.stdout, types.stdout
    assert "its types below are from its last listing" in types.stdout
    assert "echo(params?: EchoEchoParams): Promise<ToolResult>;" in types.stdout
    found = gateway_cli(gateway, "search", "echo the text back", "-n", "1")
    assert found.stdout.startswith("echo\techo"), found
    # the call type-checks (the module has its tools) and says the server failed, and why
    ran = gateway_cli(gateway, "exec", ECHO)
    assert ran.returncode == 1, ran
    assert "server 'echo' is not available (failed): exited while connecting: " in ran.stderr
    assert "moved_away.py" in ran.stderr
    # a server that never listed a tool is still an error, not an empty list
    weather = gateway_cli(gateway, "list-tools", "weather")
    assert weather.returncode == 1 and "server 'weather' is not available" in weather.stderr


def test_list_servers_keeps_the_end_of_a_reason_that_says_what_to_do(
    gateway: GatewayProcess,
) -> None:
    """The reason column was cut at 48 characters, in a pipe too: "set WEATHER_API_KEY in the
    env of its entry" was only in --json."""
    end = "set WEATHER_API_KEY in the env of its entry"
    piped = gateway_cli(gateway, "list-servers")
    assert piped.returncode == 0, piped.stderr
    row = next(line for line in piped.stdout.splitlines() if line.startswith("weather\t"))
    assert end in row.split("\t")[4], row
    # exported in the shell it still is not there: a stdio server gets its entry's env
    assert "(it names WEATHER_API_KEY: a stdio server is given only HOME, LOGNAME, PATH, " in row
    assert 'so write "env": {"WEATHER_API_KEY": "${WEATHER_API_KEY}"} in its entry)' in row
    env = clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url, COLUMNS="80", NO_COLOR="1")
    seen = on_a_terminal("list-servers", cwd=gateway.directory, env=env).decode()
    plain = re.sub(r"\x1b\[[0-9;]*m", "", seen).replace("\r", "")
    # after the table, each reason it cut, whole on its line (the terminal wraps it)
    assert re.search(rf"^weather: exited while connecting: .*{end}", plain, re.M), plain
    assert re.search(r"^echo: exited while connecting: .*moved_away.py", plain, re.M), plain


def test_a_script_that_forgot_its_import_is_told_with_a_gateway_running(
    gateway: GatewayProcess,
) -> None:
    """Deno said only "Cannot find name 'tools'": the hint to import came only when no
    gateway ran."""
    ran = gateway_cli(gateway, "exec", 'return await tools.echo.echo({ text: "hi" })')
    assert ran.returncode == 1, ran
    assert "Cannot find name 'tools'" in ran.stderr
    assert (
        "hint: `tools` comes from toolscript's module: begin the script with import { tools } "
        'from "toolscript";'
    ) in ran.stderr, ran.stderr


def test_a_script_naming_a_server_of_an_edit_not_served_is_told_why(
    gateway: GatewayProcess,
) -> None:
    """A teammate's pull added a server, its merge left conflict markers: exec of a script
    calling the new server said only "Property 'time' does not exist on type 'Tools'"."""
    kept = gateway.config_path.read_text()
    pulled = json.loads(kept)
    pulled["mcpServers"]["time"] = {"command": "mcp-server-time"}
    gateway.config_path.write_text(
        f"<<<<<<< HEAD\n{kept}\n=======\n{json.dumps(pulled)}\n>>>>>>> origin/main\n"
    )
    try:
        gateway.wait_for_health(lambda health: health["config"]["error"], what="the edit refused")
        script = 'import { tools } from "toolscript";\nreturn await tools.time.getCurrentTime({});'
        ran = gateway_cli(gateway, "exec", script)
        assert ran.returncode == 1, ran
        assert "Property 'time' does not exist on type 'Tools'" in ran.stderr
        said = "note: the config's last edit is not served, so the gateway serves the previous one"
        assert said in ran.stderr, ran.stderr
        assert f"{gateway.config_path}:1:1" in ran.stderr, ran.stderr
    finally:
        gateway.config_path.write_text(kept)
    gateway.wait_for_health(lambda health: not health["config"]["error"], what="the edit undone")


def test_runs_wait_takes_the_start_of_an_id_and_names_a_mistyped_one(
    gateway: GatewayProcess,
) -> None:
    """`runs wait` with the start of a run's id (as `runs show` takes it), or with a
    mistyped id, said "the gateway stopped or restarted before run ... ended": neither
    was so."""
    started = gateway_cli(
        gateway,
        "exec",
        "--background",
        "--json",
        "await new Promise((r) => setTimeout(r, 500)); return 5",
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    # at once: the run log, written in batches, may not hold the run yet; the gateway finds
    # it among its own runs
    waited = gateway_cli(gateway, "runs", "wait", run_id[:-2])
    assert (waited.returncode, waited.stdout) == (0, "5\n"), waited.stderr
    mistyped = run_id[:-2] + ("zz" if not run_id.endswith("zz") else "yy")
    wrong = gateway_cli(gateway, "runs", "wait", mistyped, "--json")
    assert wrong.returncode == 1, wrong
    assert json.loads(wrong.stdout)["error"] == "not_found", wrong.stdout
    assert f"no run '{mistyped}': the gateway has none under way by that id" in wrong.stderr
    assert "stopped or restarted" not in wrong.stderr


def test_the_gateway_takes_the_start_of_a_live_runs_id(gateway: GatewayProcess) -> None:
    """`runs wait`/`runs stop` looked the start of an id up in the run log alone, which the
    gateway writes in batches: a run started a moment before was "no run" (the CI met it).
    The gateway's routes take a unique start of one of its runs' ids, and name the runs an
    ambiguous start matches."""
    ids = []
    for _ in range(2):
        started = gateway_cli(
            gateway,
            "exec",
            "--background",
            "--json",
            "await new Promise((r) => setTimeout(r, 60_000))",
        )
        assert started.returncode == 0, started.stderr
        ids.append(json.loads(started.stdout)["run"])
    newest, older = sorted(ids, reverse=True)
    common = newest[
        : next(at for at, (a, b) in enumerate(zip(newest, older, strict=True)) if a != b)
    ]
    both = httpx.post(f"{gateway.url}/runs/{common}/stop", timeout=30)
    assert both.status_code == 400, both.text
    assert newest in both.text and older in both.text, both.text
    for run_id in ids:
        output = httpx.get(f"{gateway.url}/runs/{run_id[:-2]}/output", timeout=30)
        assert output.status_code == 200, output.text
        assert output.json()["id"] == run_id
        stopped = httpx.post(f"{gateway.url}/runs/{run_id[:-2]}/stop", timeout=30)
        assert stopped.status_code == 200, stopped.text
        assert (stopped.json()["id"], stopped.json()["status"]) == (run_id, "stopped")
    unknown = httpx.post(f"{gateway.url}/runs/{common}zzzz/stop", timeout=30)
    assert unknown.status_code == 404, unknown.text


def test_an_offline_uv_setting_reaches_a_tool_files_install(gateway: GatewayProcess) -> None:
    """UV_OFFLINE=1 (and a proxy, UV_INDEX, ...) never reached the `uv run` of a tool file
    with dependencies: uv went to the network anyway (here it reached the registry and
    installed; offline, it failed after its retries, saying nothing of the setting)."""
    listed = json.loads(gateway_cli(gateway, "list-servers", "--json").stdout)
    sizes = next(server for server in listed if server["name"] == "sizes")
    assert sizes["state"] == "failed", sizes
    assert "uv could not run sizes.py" in sizes["error"], sizes
    assert "the network was disabled" in sizes["error"], sizes


def test_a_cloned_config_not_trusted_yet_is_listed_by_config_check(tmp_path: Path) -> None:
    """A teammate's clone: `config check` said "valid, 2 servers" and nothing of trust, the
    refusal said "read it" with no word of where to see what it starts and sends, and
    `search` first said a gateway was started for it (none was)."""
    echo = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py")]}
    api = {"url": "https://api.example.com/mcp", "headers": {"X-Key": "${FH13_KEY}"}}
    config = {"mcpServers": {"echo": echo, "api": api}, "search": {"semantic": False}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    env = {"TOOLSCRIPT_TRUSTED_PATHS": "", "TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "cfg")}
    checked = toolscript_cli("config", "check", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stderr
    assert "valid, 2 servers" in checked.stdout
    assert "note: not trusted yet, so nothing it names starts; once trusted it starts:" in (
        checked.stderr
    )
    assert f"  echo: {sys.executable} {SERVERS / 'faulty_server.py'}\n" in checked.stderr
    assert "  api: https://api.example.com/mcp (sent your ${FH13_KEY} in headers.X-Key)" in (
        checked.stderr
    )
    as_json = toolscript_cli("config", "check", "--json", cwd=tmp_path, env=env)
    assert json.loads(as_json.stdout)["trusted"] is False
    refused = toolscript_cli("exec", ECHO, cwd=tmp_path, env=env)
    assert refused.returncode == 2, refused
    assert "hint: read it (`toolscript config check` lists what it starts and sends), then " in (
        refused.stderr
    )
    # search before trusting: the refusal, not first a note that a gateway is started
    searched = toolscript_cli("search", "echo", cwd=tmp_path, env=env)
    assert searched.returncode == 2, searched
    assert searched.stderr.startswith("toolscript: error: "), searched.stderr
    assert "is not trusted yet" in searched.stderr and "note:" not in searched.stderr
    assert toolscript_cli("trust", cwd=tmp_path, env=env).returncode == 0
    trusted = toolscript_cli("config", "check", cwd=tmp_path, env=env)
    assert "not trusted" not in trusted.stderr, trusted.stderr


def test_runs_in_a_moved_project_names_its_folder_and_where_the_old_runs_are(
    tmp_path: Path,
) -> None:
    """After `mv project renamed`, `toolscript runs` said "no runs yet", naming no folder,
    and the runs of the old path were nowhere to be found."""
    old, new = tmp_path / "project", tmp_path / "renamed"
    old.mkdir()
    echo = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py")]}
    config = {"mcpServers": {"echo": echo}, "search": {"semantic": False}}
    (old / ".toolscript.json").write_text(json.dumps(config))
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    ran = toolscript_cli("exec", ECHO, cwd=old, env=env)
    assert ran.returncode == 0, ran.stderr
    old.rename(new)
    runs = toolscript_cli("runs", cwd=new, env=env)
    assert runs.returncode == 0, runs.stderr
    assert runs.stdout == f"no runs yet in {new}: `toolscript exec` logs each one\n"
    assert "note: runs of project folders that are gone (moved, renamed or deleted)" in (
        runs.stderr
    )
    assert f"  {old}: 1 run, the last " in runs.stderr, runs.stderr
    moved = re.search(r"`(mv .*)`", runs.stderr)
    assert moved is not None, runs.stderr
    as_json = toolscript_cli("runs", "--json", cwd=new, env=env)
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == [], as_json
    # what it says to type keeps them with the project
    subprocess.run(moved.group(1), shell=True, check=True)
    kept = toolscript_cli("runs", "--json", cwd=new, env=env)
    (run,) = json.loads(kept.stdout)
    assert run["status"] == "ok" and run["project"] == str(new), run
