"""A new user's first hour, fifth pass: the angles the earlier ones (test_first_hour.py to
test_first_hour4.py, test_agent_first_hour.py) did not take. Day two: the gateway's state
file left from yesterday (the machine rebooted: its pid and port belong to other programs
now), and a gateway URL at which another program answers.

Each test asserts what the user is told, as the CLI shows it, with real processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    fixture_server,
    free_port,
    toolscript_cli,
    wait_for_port,
)
from toolscript.gateway.state import gateway_state_file, write_gateway_state
from toolscript.plumbing.processes import stop_process

CONFIG = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
ECHO = 'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "hi" })'


def run(folder: Path, *args: str, **env: str) -> Any:
    """The CLI run in ``folder`` (the project or one of its subfolders), its home the test's."""
    home = next(parent for parent in (folder, *folder.parents) if (parent / "home").is_dir())
    return toolscript_cli(*args, cwd=folder, env={"TOOLSCRIPT_HOME": str(home / "home"), **env})


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / ".toolscript.json").write_text(json.dumps(CONFIG))
    (tmp_path / "src").mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))  # where the test writes
    return tmp_path


@pytest.fixture
def web_page_server() -> Iterator[tuple[int, int]]:
    """Another program of the user's: a plain web server (pid, port) that answers 404 pages."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process=process)
        yield process.pid, port
    finally:
        stop_process(process, 10)


def leave_yesterdays_state(project: Path, pid: int, port: int) -> None:
    """The state file a gateway wrote yesterday and never removed (the machine went down
    under it), whose pid the system has given to another program since."""
    write_gateway_state(
        project / ".toolscript",
        {
            "url": f"http://127.0.0.1:{port}/yesterdays-token",
            "pid": pid,
            "host": "127.0.0.1",
            "port": port,
            "config": str(project / ".toolscript.json"),
            "started": time.time() - 86_400,
        },
    )


def test_yesterdays_state_file_naming_another_programs_pid_and_port(
    project: Path, web_page_server: tuple[int, int]
) -> None:
    # `gateway status` printed the web server's 404 page as the reason, with no hint; `exec`
    # printed it too and told the user to check TOOLSCRIPT_GATEWAY_URL, which they never
    # set; `gateway start` warned that "another gateway (pid P) already serves this project"
    # and told them to `kill P`: the web server.
    pid, port = web_page_server
    leave_yesterdays_state(project, pid, port)
    status = run(project / "src", "gateway", "status")
    assert status.returncode == 1, status
    assert f"what answers at 127.0.0.1:{port} is not a toolscript gateway" in status.stderr
    assert "hint: a gateway that ended left its address behind" in status.stderr
    assert "DOCTYPE" not in status.stderr + status.stdout, status.stderr
    as_json = json.loads(run(project, "gateway", "status", "--json").stdout)
    assert as_json["running"] is False
    assert "not a toolscript gateway" in as_json["error"]
    assert "DOCTYPE" not in as_json["error"]

    ran = run(project / "src", "exec", ECHO)  # it starts a gateway for the run, as with no file
    assert (ran.returncode, ran.stdout.strip()) == (0, '"hi"'), ran.stderr

    gateway = GatewayProcess(
        CONFIG, project, "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(project / "home")}
    )
    try:
        assert "another gateway" not in gateway.log
        assert f"kill {pid}" not in gateway.log
        listed = run(project / "src", "list-tools", "fx")
        assert listed.returncode == 0, listed.stderr
        assert "plain_text" in listed.stdout.split()
    finally:
        assert gateway.stop() == []
    assert not gateway_state_file(project / ".toolscript").exists()  # not put back for it
    assert psutil_running(pid)  # and the web server was left alone


def test_yesterdays_state_file_whose_port_nothing_listens_on(project: Path) -> None:
    # The pid is another program's, the port free: `list-tools` and `search` failed with
    # "the gateway at ... does not answer (ConnectError)" where, with no file left, they
    # start a gateway for the command; `exec` did start one.
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        leave_yesterdays_state(project, other.pid, free_port())
        listed = run(project / "src", "list-tools", "fx")
        assert listed.returncode == 0, listed.stderr
        assert "plain_text" in listed.stdout.split()
        assert "one is started for this command" in listed.stderr
        found = run(project, "search", "return the text as plain text", "--json")
        assert found.returncode == 0, found.stderr
        assert "fx" in {hit["server"] for hit in json.loads(found.stdout)["hits"]}
    finally:
        stop_process(other, 10)


def test_a_gateway_url_where_another_program_answers_says_so(
    project: Path, web_page_server: tuple[int, int]
) -> None:
    # TOOLSCRIPT_GATEWAY_URL with the wrong port (a dev server's): every command printed
    # the dev server's page as the gateway's error.
    _, port = web_page_server
    url = f"http://127.0.0.1:{port}/some-token"
    for args in (("list-tools", "fx"), ("search", "echo"), ("exec", ECHO)):
        answer = run(project, *args, TOOLSCRIPT_GATEWAY_URL=url)
        assert answer.returncode == 1, (args, answer)
        assert f"127.0.0.1:{port} is not a toolscript gateway" in answer.stderr, (args, answer)
        assert "DOCTYPE" not in answer.stderr, (args, answer.stderr)
        assert "hint: " in answer.stderr, (args, answer.stderr)


def psutil_running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_an_edit_that_breaks_the_json_is_named_and_the_gateway_still_answers(
    project: Path,
) -> None:
    # A trusted config saved with a comma too many: the gateway reported "not trusted yet ...
    # run `toolscript trust`" (trust then named the comma), and while it served the last good
    # configuration, as `exec` used it, list-tools, search and get-types refused to ask it.
    untrusting = {"TOOLSCRIPT_TRUSTED_PATHS": ""}
    config = project / ".toolscript.json"
    assert run(project, "trust", **untrusting).returncode == 0
    good = config.read_text()
    gateway = GatewayProcess(
        CONFIG,
        project,
        "--no-warm-checker",
        env={"TOOLSCRIPT_HOME": str(project / "home"), **untrusting},
    )
    try:
        config.write_text(good[:-1] + ",}")  # {"mcpServers": {...}, "search": {...},}
        health = gateway.wait_for_health(
            lambda health: health["config"]["error"], what="the edit's error"
        )
        assert health["config"]["error"].startswith(f"{config}:1:"), health["config"]
        assert "invalid JSON" in health["config"]["error"]
        assert "not trusted" not in gateway.log
        status = run(project, "gateway", "status", **untrusting)
        assert status.returncode == 3
        assert "invalid JSON" in status.stdout

        for args in (("list-tools", "fx"), ("get-types", "fx", "plain_text")):
            answer = run(project / "src", *args, **untrusting)
            assert answer.returncode == 0, (args, answer.stderr)
            assert "plain_text" in answer.stdout.replace("plainText", "plain_text"), args
            assert "invalid JSON" in answer.stderr, (args, answer.stderr)
            assert "configuration it loaded before" in answer.stderr, (args, answer.stderr)
        found = run(project, "search", "return the text as plain text", "-n", "1", **untrusting)
        assert (found.returncode, found.stdout.split()[:2]) == (0, ["fx", "plain_text"])
        checked = run(project, "config", "check", **untrusting)
        assert checked.returncode == 2 and "invalid JSON" in checked.stderr

        config.write_text(good)  # fixed as it was trusted
        gateway.wait_for_health(lambda health: not health["config"]["error"], what="the fix")
        assert "warning" not in run(project, "list-tools", "fx", **untrusting).stderr
    finally:
        assert gateway.stop() == []


def test_a_server_whose_token_is_not_set_is_not_started_and_the_rest_serve(
    project: Path,
) -> None:
    # One server's ${VAR} not exported made the whole file an error: `gateway start`, `exec`,
    # `search` and `list-servers` all exited 2 naming the first such variable, while `trust`
    # had said "starting them names what is missing".
    config = {
        **CONFIG,
        "mcpServers": {
            **CONFIG["mcpServers"],
            "tracker": fixture_server(env={"TRACKER_TOKEN": "${FIRST_HOUR5_UNSET_TOKEN}"}),
        },
    }
    gateway = GatewayProcess(
        config, project, "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(project / "home")}
    )
    try:
        servers = {server["name"]: server for server in gateway.health()["servers"].values()}
        assert servers["fx"]["state"] == "connected"
        assert servers["tracker"]["state"] == "failed"
        error = servers["tracker"]["error"]
        assert error.startswith(
            "not started: environment variable FIRST_HOUR5_UNSET_TOKEN is not set "
            "(${FIRST_HOUR5_UNSET_TOKEN} in env.TRACKER_TOKEN); export it, then start the "
            "gateway again"
        ), error
        assert gateway.log.count("FIRST_HOUR5_UNSET_TOKEN is not set") == 1, gateway.log
        ran = run(project, "exec", ECHO)
        assert (ran.returncode, ran.stdout.strip()) == (0, '"hi"'), ran.stderr
        listed = run(project, "list-servers", "--json")
        assert listed.returncode == 0, listed.stderr
        states = {server["name"]: server["state"] for server in json.loads(listed.stdout)}
        assert states == {"fx": "connected", "tracker": "failed"}
        assert "FIRST_HOUR5_UNSET_TOKEN is not set" in listed.stderr  # with where, once
    finally:
        assert gateway.stop() == []


def test_an_error_of_a_command_given_json_is_json_too(project: Path) -> None:
    # `list-tools nosuch --json | jq` read nothing: the error was text on stderr alone, and a
    # script had only the exit code to go on.
    cases = [
        (("list-tools", "nosuch", "--json"), 1, "server_not_found"),
        (("list-tools", "fx", "--json", "--config", "nowhere.json"), 2, "config_error"),
        (("get-types", "fx", "no_such_tool", "--json"), 1, "tool_not_found"),
        (("runs", "show", "nosuch", "--json"), 1, "not_found"),
    ]
    for args, code, kind in cases:
        answer = run(project, *args)
        assert answer.returncode == code, (args, answer)
        said = json.loads(answer.stdout)
        assert said["error"] == kind, (args, said)
        assert said["message"] and said["message"] in answer.stderr, (args, answer.stderr)
    plain = run(project, "list-tools", "nosuch")  # without --json: stderr alone, as before
    assert plain.stdout == "" and "server not found" in plain.stderr


def test_an_empty_search_is_a_usage_error_before_any_gateway(project: Path) -> None:
    # `search ""` started a gateway for the command, to say "no tool matches; try other
    # words" (exit 1), as if words had been given.
    for query in ("", "   "):
        answer = run(project, "search", query)
        assert answer.returncode == 2, answer
        assert "the search query is empty" in answer.stderr
        assert "toolscript list-tools SERVER" in answer.stderr
        assert "one is started for this command" not in answer.stderr
