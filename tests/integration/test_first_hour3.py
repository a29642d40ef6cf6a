"""A new user's first hour, third pass: the angles the first two (test_first_hour.py,
test_first_hour2.py) did not take. Two gateways of one project (a Claude Code session's
beside the terminal) and a gateway URL exported in another project; a gateway left running
by an older toolscript across an upgrade; servers already defined in other clients that
`init` cannot import as written; an OAuth server whose entry sends headers; and what a user
reaches for in a script (``runs wait --json``) or after a wrong name (resources, prompts).

Each test asserts what the user is told, as the CLI shows it, with real processes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolscript
from tests.helpers import GatewayProcess, clean_env, fixture_server, toolscript_cli, wait_until


def run(project: Path, *args: str, home: Path, stdin: str | None = None, **env: str) -> Any:
    return toolscript_cli(
        *args, cwd=project, env={"TOOLSCRIPT_HOME": str(home), **env}, stdin=stdin
    )


# -- a Claude Code session's gateway beside the user's terminal ---------------------


@pytest.fixture(scope="module")
def session_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, int]]:
    """A project whose only gateway is a Claude Code session's (started by the plugin's
    SessionStart hook): the project, the toolscript home, the session gateway's pid."""
    base = tmp_path_factory.mktemp("session-project")
    project, home = base / "project", base / "home"
    (project / "src" / "deep").mkdir(parents=True)
    (project / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}})
    )
    payload = json.dumps({"session_id": "session-one", "cwd": str(project)})
    started = run(
        project,
        "hook",
        "session-start",
        home=home,
        stdin=payload,
        CLAUDE_PROJECT_DIR=str(project),
    )
    assert "gateway ready" in started.stdout, started.stdout + started.stderr
    pid = int((home / "sessions" / "session-one.pid").read_text())
    yield project, home, pid
    run(project, "hook", "session-end", home=home, stdin=payload)
    import psutil

    wait_until(lambda: psutil.pid_exists(pid), lambda alive: not alive, 30, "the session's end")


def test_status_in_a_terminal_names_the_sessions_gateway_of_the_project(
    session_project: tuple[Path, Path, int],
) -> None:
    """`gateway status` said "not running" and nothing more while the project's Claude Code
    session ran its own gateway: a user checking why the agent's tools fail (or whether the
    plugin works) was told none runs. It still exits 1 (the project's own gateway is not
    running), and says which session gateway serves the project and how it is."""
    project, home, pid = session_project
    status = run(project / "src" / "deep", "gateway", "status", home=home)
    assert status.returncode == 1
    assert "this project's own gateway is not running" in status.stderr
    assert "Claude Code sessions: 1 run a gateway of their own for this project" in status.stderr
    assert f"pid {pid} at http://127.0.0.1:" in status.stderr
    assert "ok, 1/1 servers connected" in status.stderr
    token = (home / "sessions" / "session-one.url").read_text().strip().rsplit("/", 1)[1]
    assert token not in status.stderr + status.stdout  # its URL without its token

    as_json = run(project, "gateway", "status", "--json", home=home)
    assert as_json.returncode == 1
    sessions = json.loads(as_json.stdout)["sessions"]
    assert [(s["pid"], s["status"], s["connected"], s["servers"]) for s in sessions] == [
        (pid, "ok", 1, 1)
    ]


def test_stop_in_a_terminal_says_the_sessions_gateway_is_the_sessions_to_stop(
    session_project: tuple[Path, Path, int],
) -> None:
    project, home, pid = session_project
    stopped = run(project, "gateway", "stop", home=home)
    assert stopped.returncode == 0
    assert "gateway: not running" in stopped.stderr
    assert f"pid {pid}" in stopped.stderr and "it stops with its session" in stopped.stderr
    as_json = json.loads(run(project, "gateway", "stop", "--json", home=home).stdout)
    assert as_json["stopped"] is False and [s["pid"] for s in as_json["sessions"]] == [pid]
    import psutil

    assert psutil.pid_exists(pid)  # left alone: its session's to stop


def test_another_projects_status_does_not_name_this_projects_session(
    session_project: tuple[Path, Path, int], tmp_path: Path
) -> None:
    _, home, _ = session_project
    (tmp_path / ".toolscript.json").write_text("{}")
    status = run(tmp_path, "gateway", "status", home=home)
    assert status.returncode == 1
    assert "gateway: not running" in status.stderr
    assert "Claude Code sessions" not in status.stderr


def test_a_gateway_of_the_installed_code_is_not_said_to_be_older(
    session_project: tuple[Path, Path, int],
) -> None:
    project, home, _ = session_project
    url = (home / "sessions" / "session-one.url").read_text().strip()
    status = run(project, "gateway", "status", home=home, TOOLSCRIPT_GATEWAY_URL=url)
    assert status.returncode == 0, status.stderr
    assert "gateway: running" in status.stdout
    assert "not the one installed now" not in status.stdout + status.stderr


# -- upgrading while a gateway runs ---------------------------------------------------

# A gateway started by the toolscript installed before an upgrade: the code it loaded is
# what it runs (its version as it reports it; the package in the test's place is shared).
OLDER_GATEWAY = (
    "import sys, toolscript; toolscript.__version__ = '0.0.1'; "
    "from toolscript.cli.entry import main; sys.argv[0] = 'toolscript'; main()"
)


@contextlib.contextmanager
def older_gateway(
    project: Path, home: Path, flag: str
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A gateway of the toolscript installed before an upgrade (``OLDER_GATEWAY``) for the
    fixture server in ``project``, started with ``flag``: the process and its URL; stopped
    after, unless it was."""
    (project / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}})
    )
    gateway = subprocess.Popen(
        [sys.executable, "-c", OLDER_GATEWAY, "gateway", "start", flag],
        cwd=project,
        env=clean_env(TOOLSCRIPT_HOME=str(home)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert gateway.stdout is not None
        url = gateway.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield gateway, url
    finally:
        if gateway.poll() is None:
            gateway.terminate()
            try:
                gateway.wait(30)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()


def test_a_gateway_started_before_an_upgrade_is_said_to_run_the_older_code(
    tmp_path: Path,
) -> None:
    """After `pip install -U toolscript` a gateway started before goes on running the code it
    loaded, beside a CLI of the new one: `gateway status` said nothing of it. It now names
    both and says how to restart it."""
    home = tmp_path / "home"
    with older_gateway(tmp_path, home, "--no-warm-checker") as (gateway, _):
        status = run(tmp_path, "gateway", "status", home=home)
        assert status.returncode == 0, status.stderr
        assert "warning: this gateway runs toolscript 0.0.1 (code " in status.stdout
        assert f"not the one installed now, toolscript {toolscript.__version__}" in status.stdout
        assert "restart it to run the new one (`toolscript gateway stop`" in status.stdout
        as_json = json.loads(run(tmp_path, "gateway", "status", "--json", home=home).stdout)
        assert as_json["toolscript"]["version"] == "0.0.1"
        assert as_json["installed"]["version"] == toolscript.__version__
        stopped = run(tmp_path, "gateway", "stop", home=home)
        assert stopped.returncode == 0, stopped.stderr
        assert gateway.wait(30) is not None


# -- runs wait in a script ------------------------------------------------------------


def test_runs_wait_json_prints_one_object_with_how_the_run_ended(
    session_project: tuple[Path, Path, int],
) -> None:
    """`runs wait` had no --json (every other command that prints data has one): a shell
    script waiting on a background run had to split its streams and read its exit code."""
    project, home, _ = session_project
    url = (home / "sessions" / "session-one.url").read_text().strip()

    def cli(*args: str) -> Any:
        return run(project, *args, home=home, TOOLSCRIPT_GATEWAY_URL=url)

    def started(code: str) -> str:
        launched = cli("exec", "--background", "--json", code)
        assert launched.returncode == 0, launched.stderr
        return str(json.loads(launched.stdout)["run"])

    done = started('console.log("hello"); console.error("careful"); return { n: 1 };')
    waited = cli("runs", "wait", done, "--json")
    assert waited.returncode == 0, waited.stderr
    answer = json.loads(waited.stdout)
    assert {k: answer[k] for k in ("run", "ended", "status", "exit")} == {
        "run": done,
        "ended": True,
        "status": "ok",
        "exit": 0,
    }
    assert answer["stdout"].splitlines()[0] == "hello"
    assert json.loads(answer["stdout"].splitlines()[-1]) == {"n": 1}
    assert "careful" in answer["stderr"]

    going = started('console.log("started"); await new Promise((r) => setTimeout(r, 600_000));')
    still = wait_until(
        lambda: cli("runs", "wait", going, "--json", "--timeout", "1"),
        lambda waited: json.loads(waited.stdout)["stdout"],
        120,
        "the run's first line",
    )
    assert still.returncode == 3
    answer = json.loads(still.stdout)
    assert answer["ended"] is False and answer["status"] == "running"
    assert answer["stdout"] == "started\n" and answer["from"] == "8:0"
    # the object's stderr is the run's alone; how to go on waiting is said on the command's
    # (it was in the run's stderr, as if the script had printed it)
    assert answer["stderr"] == "", answer
    assert f"runs wait {going} --from 8:0" in still.stderr, still.stderr
    assert cli("runs", "stop", going).returncode == 0


# -- servers defined in other clients -------------------------------------------------


def init_in(project: Path, *args: str) -> Any:
    """`toolscript init` with a home of the test's own (no real client's config read)."""
    home = project / "home"
    home.mkdir(exist_ok=True)
    return toolscript_cli("init", *args, cwd=project, env={"HOME": str(home)})


def test_init_says_why_no_entry_of_a_clients_file_was_imported(tmp_path: Path) -> None:
    """A .mcp.json whose every entry toolscript cannot run (a command as an array, a
    websocket server, env values that are objects) made init say it "found no MCP servers"
    with not one word of the three entries it skipped, or why."""
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "split": {"command": ["npx", "-y", "some-server"]},
                    "socket": {"type": "websocket", "url": "https://example.com/mcp"},
                    "nested": {"command": "some-server", "env": {"OPTIONS": {"a": 1}}},
                }
            }
        )
    )
    for args in ((), ("--yes",), ("--json",)):
        said = init_in(tmp_path, *args)
        assert said.returncode == 2, said.stderr
        assert "found no MCP server toolscript can run as written in Claude Code" in said.stderr, (
            said.stderr
        )
        assert "export the variable it names" in said.stderr
    assert not (tmp_path / ".toolscript.json").exists()
    shown = init_in(tmp_path).stdout
    assert "mcpServers.split.command: expected a string, got array; 'split' skipped" in shown
    assert (
        "transport 'websocket' is not one toolscript connects to (stdio, http, sse); 'socket' skipped"
        in shown
    )
    assert "mcpServers.nested.env.OPTIONS: expected a string, got object" in shown
    report = json.loads(init_in(tmp_path, "--json").stdout)
    assert report["import"] == [] and len(report["found"][0]["warnings"]) == 3


def test_init_json_reports_what_it_finds_beside_an_existing_config(tmp_path: Path) -> None:
    """`init --json` "alone only reports", its help says: in a project that has a
    .toolscript.json already (the Quick start's) it refused with "exists already"."""
    (tmp_path / ".toolscript.json").write_text('{"mcpServers": {}}\n')
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"t": {"command": "mcp-server-time"}}}')
    report = init_in(tmp_path, "--json")
    assert report.returncode == 0, report.stderr
    answer = json.loads(report.stdout)
    assert answer["import"] == ["claude-code"]
    assert answer["exists"] is True and answer["written"] is False
    assert (tmp_path / ".toolscript.json").read_text() == '{"mcpServers": {}}\n'
    asked = init_in(tmp_path)  # shows what it found, then says how to add it
    assert asked.returncode == 2
    assert "t: mcp-server-time" in asked.stdout
    assert 'add "import": ["claude-code"] to it by hand' in asked.stderr


# -- an OAuth server whose entry also sends headers -----------------------------------


def test_a_sign_in_to_a_server_whose_headers_were_refused_is_taken_at_once(
    tmp_path: Path,
) -> None:
    """A server with headers in its entry that answers 401 is retried with backoff (its
    headers may hold a token that expired): `toolscript auth`, which its error suggests for
    an OAuth server, was seen only at the next retry, up to a minute later, where its help
    says a running gateway picks a sign-in up within seconds."""
    from tests.integration.test_oauth import OAuthServer, project

    server = OAuthServer("http")
    try:
        directory, env = project(tmp_path, server, headers={"X-Team": "infra"})
        gateway = GatewayProcess(
            json.loads((directory / ".toolscript.json").read_text()), directory, env=env
        )
        try:
            failed = gateway.wait_for_health(
                lambda health: health["servers"]["secure"]["attempts"] >= 5,
                60,
                "five refused attempts (the next one 16 s away)",
            )["servers"]["secure"]
            assert failed["state"] == "failed"
            assert "`toolscript auth secure`" in failed["error"]
            signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
            assert signed.returncode == 0, signed.stderr
            gateway.wait_for_health(
                lambda health: health["servers"]["secure"]["state"] == "connected",
                8,
                "the sign-in taken before the next retry",
            )
        finally:
            assert gateway.stop() == []
    finally:
        server.stop()


def test_list_servers_in_another_project_does_not_show_the_named_gateways_states(
    session_project: tuple[Path, Path, int], tmp_path: Path
) -> None:
    """TOOLSCRIPT_GATEWAY_URL (a session's, exported in one project) and a command run in
    another project: list-servers showed this project's servers with the states of the
    other's servers of the same names, "connected" for a server nothing had started."""
    project, home, _ = session_project
    url = (home / "sessions" / "session-one.url").read_text().strip()
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    other = run(tmp_path, "list-servers", "--json", home=home, TOOLSCRIPT_GATEWAY_URL=url)
    assert other.returncode == 0, other.stderr
    (listed,) = json.loads(other.stdout)
    assert listed["name"] == "fx" and "state" not in listed
    said = run(tmp_path, "list-servers", home=home, TOOLSCRIPT_GATEWAY_URL=url).stderr
    assert f"serves {project / '.toolscript.json'}, not this project's config" in said
    own = run(project / "src", "list-servers", "--json", home=home, TOOLSCRIPT_GATEWAY_URL=url)
    assert json.loads(own.stdout)[0]["state"] == "connected"


def test_a_sessions_gateway_started_before_an_upgrade_is_said_to_be_older(
    tmp_path: Path,
) -> None:
    """A Claude Code session's gateway, started before the upgrade, is listed by `gateway
    status` in a terminal with what to do: restart the session."""
    home = tmp_path / "home"
    # as the plugin starts one: private, no state file
    with older_gateway(tmp_path, home, "--no-state") as (gateway, url):
        sessions = home / "sessions"  # the files the SessionStart hook keeps
        sessions.mkdir(parents=True)
        (sessions / "old-session.pid").write_text(str(gateway.pid))
        (sessions / "old-session.url").write_text(url + "\n")
        status = run(tmp_path, "gateway", "status", home=home)
        assert status.returncode == 1
        assert f"pid {gateway.pid} at " in status.stderr
        assert "(it runs the toolscript installed before; restart the session" in status.stderr


def test_a_resource_or_prompt_the_server_does_not_have_says_where_to_look(
    session_project: tuple[Path, Path, int],
) -> None:
    project, home, _ = session_project
    url = (home / "sessions" / "session-one.url").read_text().strip()
    for args, lister in (
        (("read-resource", "fx", "fx://no/such"), "list-resources"),
        (("get-prompt", "fx", "nope"), "list-prompts"),
    ):
        said = run(project, *args, home=home, TOOLSCRIPT_GATEWAY_URL=url)
        assert said.returncode == 1, said.stderr
        assert f"hint: `toolscript {lister} fx` lists what it offers" in said.stderr
