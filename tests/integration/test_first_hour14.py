"""A user's first hour, fourteenth pass: what tripped new users the earlier passes
(test_first_hour.py to test_first_hour13.py) did not meet. A failed server counted 0 tools
beside the tools list-tools served of it; `trust` after a pull listing the whole config
again, not what changed; a tool file named in French; a saved script that takes no input;
a request no configured server can do answered with a confident wrong tool; a command
silent while the gateway waits for a slow server; and removing toolscript with gateways
running in projects the user forgot.

Each test asserts what the user is told, with real processes; the first ones share one
gateway.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    clean_env,
    face_call,
    gateway_cli,
    python_bin,
    toolscript_cli,
    wait_until,
)

WEEKLY = """import { tools } from "toolscript";

/** The forecast for Lyon. */
export default async function weekly() {
  return await tools.meteo.forecast({ city: "Lyon" });
}
"""

METEO = '''def forecast(city: str) -> str:
    """The weather forecast for a city."""
    return f"sunny in {city}"
'''


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A project whose echo server listed its tools to a first gateway, then was repointed
    at a file that is not there, and a fresh gateway started for it; with the time server,
    a tool file météo.py and a saved script that takes no input."""
    directory = tmp_path_factory.mktemp("projet café")
    echo: dict[str, Any] = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py")]}
    (directory / "outils").mkdir()
    (directory / "outils" / "météo.py").write_text(METEO)
    (directory / "toolscripts").mkdir()
    (directory / "toolscripts" / "weekly.ts").write_text(WEEKLY)
    config = {
        "mcpServers": {"echo": echo, "time": {"command": python_bin("mcp-server-time")}},
        "localTools": {"dir": "outils"},
    }
    first = GatewayProcess(config, directory)
    try:
        first.wait_for_health(
            lambda health: health["servers"]["echo"]["state"] == "connected", what="echo"
        )
    finally:
        assert first.stop() == []
    echo["args"] = [str(directory / "moved_away.py")]
    gateway = GatewayProcess(config, directory)
    try:
        gateway.wait_for_health(
            lambda health: (
                health["servers"]["echo"]["state"] == "failed"
                and health["search"]["semantic"] in ("ready", "unavailable")
            ),
            timeout=90,
            what="echo failed and search ready",
        )
    except BaseException:
        gateway.stop()  # a fixture that fails before its yield is not torn down
        raise
    yield gateway
    assert gateway.stop() == []


def test_a_failed_server_counts_the_tools_it_listed_last(gateway: GatewayProcess) -> None:
    """`list-tools echo` listed its tools from the last build, while `list-servers`,
    `gateway status` and the face's list_servers said it had 0."""
    listed = gateway_cli(gateway, "list-servers")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.startswith("echo\t"))
    kept = len(json.loads(gateway_cli(gateway, "list-tools", "echo", "--json").stdout))
    assert kept == 6  # faulty_server's, as list-tools serves them
    assert row.split("\t")[2:4] == ["failed", "6 (last known)"], row
    (echo,) = [
        s
        for s in json.loads(gateway_cli(gateway, "list-servers", "--json").stdout)
        if s["name"] == "echo"
    ]
    assert (echo["tools"], echo["last_known_tools"]) == (0, 6), echo
    status = gateway_cli(gateway, "gateway", "status")
    assert status.returncode == 3, status
    assert "(and 6 last known of servers not connected); search: " in status.stdout
    assert "echo\tfailed\t6 (last known)\texited while connecting: " in status.stdout
    answer = face_call(gateway, "list_servers", {})
    text = answer.content[0].text
    assert "echo: failed, 0 tools (6 as last listed, by the last build); error: " in text, text


def test_a_tool_file_named_in_french_and_a_script_that_takes_no_input(
    gateway: GatewayProcess,
) -> None:
    """météo.py was `tools.mto` (tools.météo: "Did you mean 'mto'?"); `toolscript run
    weekly` of `async function weekly()` failed: "Expected 0 arguments, but got 1"."""
    ran = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript";\nreturn await tools.meteo.forecast({ city: "Paris" });',
    )
    assert (ran.returncode, ran.stdout) == (0, '"sunny in Paris"\n'), ran
    weekly = gateway_cli(gateway, "run", "weekly")
    assert (weekly.returncode, weekly.stdout) == (0, '"sunny in Lyon"\n'), weekly
    given = gateway_cli(gateway, "run", "weekly", "--input", '{"city": "Nice"}')
    assert given.returncode == 2, given
    assert "saved script weekly takes no input (async function weekly()), but it was given " in (
        given.stderr
    )
    through_face = face_call(gateway, "run_script", {"name": "weekly", "input": {}})
    assert "sunny in Lyon" in through_face.content[0].text, through_face


def test_a_request_no_server_can_do_is_said_to_match_nothing(gateway: GatewayProcess) -> None:
    """ "convert this PDF to text" answered the clock's convert_time at 1.00 with no note (the
    word "convert"), and the face's search_tools never said that nothing matched well."""
    if gateway.health()["search"]["semantic"] != "ready":
        pytest.skip("the flag needs the embedding model (the semantic extra)")
    pdf = "convert a PDF invoice into a spreadsheet"
    found = gateway_cli(gateway, "search", pdf, "-n", "2")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("time\tconvert_time\t1.00"), found.stdout
    assert "nothing matched well: no tool is close to the request in meaning" in found.stderr
    assert json.loads(gateway_cli(gateway, "search", pdf, "--json").stdout)["weak"] is True
    # a script's search() says it too, on each hit
    script = f'import {{ search }} from "toolscript";\nreturn (await search("{pdf}"))[0].weak;'
    ran = gateway_cli(gateway, "exec", script)
    assert (ran.returncode, ran.stdout) == (0, "true\n"), ran
    answer = face_call(gateway, "search_tools", {"query": "book a flight to Tokyo"})
    assert answer.content[0].text.startswith("Nothing matched well: "), answer.content[0].text
    # a request a tool does fit is not flagged
    fits = gateway_cli(gateway, "search", "what time is it in Tokyo", "-n", "1")
    assert fits.stdout.startswith("time\tget_current_time"), fits
    assert "nothing matched" not in fits.stderr


def test_a_search_names_a_server_still_connecting(tmp_path: Path) -> None:
    """A fresh project whose clock server was still connecting when the gateway served the
    others: "what time is it" answered fetch's fetch, and nothing said clock was not searched."""
    go = tmp_path / "go"
    clock = {
        "command": "sh",
        "args": [
            "-c",
            f'while [ ! -e "{go}" ]; do sleep 0.1; done; exec "{python_bin("mcp-server-time")}"',
        ],
    }
    config = {"mcpServers": {"clock": clock, "fetch": {"command": python_bin("mcp-server-fetch")}}}
    gateway = GatewayProcess(
        config | {"search": {"semantic": False}}, tmp_path, "--ready-wait", "0"
    )
    try:
        gateway.wait_for_health(lambda health: health["servers"]["fetch"]["state"] == "connected")
        asked = gateway_cli(gateway, "search", "what time is it in tokyo")
        assert asked.returncode == 0, asked.stderr
        assert "note: not searched, no tools listed yet: clock (connecting); search again " in (
            asked.stderr
        )
        go.touch()
        gateway.wait_for_health(lambda health: health["servers"]["clock"]["state"] == "connected")
        again = gateway_cli(gateway, "search", "what time is it in tokyo", "-n", "1")
        assert again.stdout.startswith("clock\tget_current_time"), again
        assert "not searched" not in again.stderr
    finally:
        go.touch()
        assert gateway.stop() == []


def test_trust_after_a_pull_shows_what_changed(tmp_path: Path) -> None:
    """`trust` (and `config check`) after a teammate's pull listed every server again; the
    one added, the one whose command changed and the saved script added were lines among
    them, or nowhere."""
    env = {"TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "trust"), "TOOLSCRIPT_TRUSTED_PATHS": ""}
    servers: dict[str, Any] = {
        "notes": {"command": "uvx", "args": ["mcp-notes"]},
        "jira": {"command": "uvx", "args": ["mcp-jira"]},
        "same": {"command": "uvx", "args": ["same"]},
    }
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    first = toolscript_cli("trust", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert "  jira: uvx mcp-jira\n" in first.stdout and "changed since" not in first.stdout
    # the pull
    servers["notes"]["args"] = ["mcp-notes@2"]
    del servers["jira"]
    servers["search"] = {"url": "https://api.example.com/mcp", "headers": {"K": "${FH14_KEY}"}}
    path.write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "toolscripts").mkdir()
    (tmp_path / "toolscripts" / "weekly.ts").write_text("export default async function w() {}\n")
    checked = toolscript_cli("config", "check", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stderr
    assert "note: not trusted as it is now, so nothing it names starts; changed since you " in (
        checked.stderr
    )
    trusted = toolscript_cli("trust", cwd=tmp_path, env=env)
    assert trusted.returncode == 0, trusted.stderr
    lines = trusted.stdout.splitlines()
    assert lines[1].startswith("changed since you last trusted it ("), lines
    assert lines[2:] == [
        "  server added: search: https://api.example.com/mcp",
        "    is sent your ${FH14_KEY} in headers.K",
        "  server changed: notes: uvx mcp-notes@2",
        "    target was: uvx mcp-notes",
        "  server removed: jira",
        "  saved script added: toolscripts/weekly.ts",
        "the other 1 server is as you trusted it; `toolscript trust --full` lists every server",
    ], trusted.stdout
    for shown in (checked.stderr, trusted.stdout):
        assert "  same: " not in shown  # as trusted before: not listed again
    full = toolscript_cli("trust", "--full", cwd=tmp_path, env=env)
    assert "  same: uvx same\n" in full.stdout and "nothing changed since you last" in full.stdout
    as_json = json.loads(toolscript_cli("trust", "--json", cwd=tmp_path, env=env).stdout)
    assert as_json["changes"]["since"] and len(as_json["servers"]) == 3, as_json
    assert toolscript_cli("trust", "--revoke", cwd=tmp_path, env=env).returncode == 0
    again = toolscript_cli("trust", "--json", cwd=tmp_path, env=env)
    assert json.loads(again.stdout)["changes"] is None  # forgotten: nothing to compare with


def test_a_command_says_it_waits_and_stop_all_stops_every_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`list-servers` right after `gateway start &` sat silent while a slow server started;
    removing toolscript asked for `gateway stop` in each project, which a user who forgot
    one could not list."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))  # its own gateways alone
    env = clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home"))
    go = tmp_path / "go"  # the slow server starts once the test has seen the command wait
    time_server = python_bin("mcp-server-time")
    slow = {
        "command": "sh",
        "args": ["-c", f'while [ ! -e "{go}" ]; do sleep 0.1; done; exec "{time_server}"'],
    }
    started = []
    for name, server in (("slow", slow), ("quick", {"command": time_server})):
        project = tmp_path / name
        project.mkdir()
        config = {"mcpServers": {name: server}, "search": {"semantic": False}}
        (project / ".toolscript.json").write_text(json.dumps(config))
        started.append(
            subprocess.Popen(
                [sys.executable, "-m", "toolscript", "gateway", "start"],
                cwd=project,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        )
    try:
        from toolscript.gateway.state import gateway_state_file

        mark = gateway_state_file(tmp_path / "slow" / ".toolscript")
        wait_until(mark.exists, bool, 60, "the slow gateway's starting mark")
        listing = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "list-servers"],
            cwd=tmp_path / "slow",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert listing.stderr is not None
        said = listing.stderr.readline()  # before the gateway is ready: it waits on the server
        assert said.startswith("toolscript: waiting for this project's gateway (pid "), said
        go.touch()
        out, err = listing.communicate(timeout=120)
        assert listing.returncode == 0, err
        assert "slow\tstdio\tconnected\t2" in out, out
        for process in started:  # both serve: each printed its URL
            assert process.stdout is not None and process.stdout.readline().startswith("http")
        children = [
            child for process in started for child in psutil.Process(process.pid).children(True)
        ]
        stopped = toolscript_cli("gateway", "stop", "--all", cwd=tmp_path, env=env)
        assert stopped.returncode == 0, stopped
        for process, name in zip(started, ("slow", "quick"), strict=True):
            said = (
                f"gateway: stopped (pid {process.pid}) for {tmp_path / name / '.toolscript.json'}"
            )
            assert said in stopped.stdout, stopped.stdout
            assert process.wait(10) == 0
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == [], alive
        none = toolscript_cli("gateway", "stop", "--all", "--json", cwd=tmp_path, env=env)
        assert json.loads(none.stdout)["gateways"] == [], none
    finally:
        go.touch()
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
