"""What a new user trips on in the first hour, done as they did it: the CLI as a process.

Each test asserts the message, the exit code, and that nothing is left running.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    InteractiveShell,
    clean_env,
    fixture_server,
    fx_waits_for,
    interruptible_exec,
    needs_semantic,
    python_bin,
    returning,
    running_gateway,
    toolscript_cli,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[2]
GHOST = {"command": "no-such-program-for-toolscript"}


def run(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return toolscript_cli(*args, cwd=project, env={"TOOLSCRIPT_HOME": str(project / "home"), **env})


def toolscript_processes_under(directory: Path) -> list[str]:
    """toolscript processes (and their servers) started in ``directory``: none may outlive a test."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        try:
            if process.info["cwd"] and Path(process.info["cwd"]).is_relative_to(directory):
                found.append(" ".join(process.info["cmdline"] or [])[:120])
        except (psutil.Error, ValueError):
            continue
    return found


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    wait_until(
        lambda: toolscript_processes_under(tmp_path),
        lambda left: left == [],
        10,
        "the end of every process the test started",
    )


# -- commands and arguments ---------------------------------------------------------


def test_exec_of_a_path_runs_the_file(project: Path) -> None:
    (project / "scripts").mkdir()
    (project / "scripts" / "job.ts").write_text("return { ran: 'job' };\n")
    ran = run(project, "exec", "scripts/job.ts")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"ran": "job"}
    missing = run(project, "exec", "scripts/nope.ts")
    assert missing.returncode == 2
    assert "file not found: scripts/nope.ts" in missing.stderr
    assert "TS2304" not in missing.stderr


def test_config_goes_before_the_command_too(project: Path) -> None:
    (project / "other.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    for args in (
        ["--config", "other.json", "list-servers"],
        ["list-servers", "--config", "other.json"],
    ):
        listed = run(project, *args)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("fx\t")


def test_exec_with_a_broken_config_says_it_once(project: Path) -> None:
    (project / "broken.json").write_text('{\n  "mcpServers": {\n')
    ran = run(
        project, "exec", "--config", "broken.json", 'import { tools } from "toolscript"; return 1'
    )
    assert ran.returncode == 2
    assert ran.stderr.count("toolscript: error:") == 1
    assert "broken.json:3:" in ran.stderr
    assert "ephemeral" not in ran.stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["exec", "--timeout", "-1", "return 1"], "--timeout"),
        (["exec", "--memory", "0", "return 1"], "--memory"),
        (["exec", "--max-output", "0", "return 1"], "--max-output"),
        (["exec", "--timeout", "abc", "return 1"], "--timeout"),
        (["search", "-n", "0", "time"], "--limit"),
        (["search", "-n", "-3", "time"], "--limit"),
    ],
)
def test_values_that_make_no_sense_are_usage_errors(
    project: Path, args: list[str], option: str
) -> None:
    result = run(project, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"Invalid value for '{option}'" in result.stderr
    assert result.stdout == ""


def test_exec_usage_errors_read_like_every_commands(project: Path) -> None:
    exec_error = run(project, "exec", "--bogus", "return 1")
    search_error = run(project, "search", "--bogus", "x")
    assert exec_error.returncode == search_error.returncode == 2
    assert "Usage: toolscript exec" in exec_error.stderr
    assert "No such option: --bogus" in exec_error.stderr
    assert "usage: toolscript exec [--file" not in exec_error.stderr  # argparse's style


# -- servers that failed ------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway_with_a_ghost(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("ghost")
    config = {"mcpServers": {"fx": fixture_server(), "ghost": GHOST}}
    gateway = GatewayProcess(config, directory, env={"TOOLSCRIPT_HOME": str(directory / "home")})
    yield gateway
    assert gateway.stop() == []


def test_a_failed_server_is_explained_not_empty(gateway_with_a_ghost: GatewayProcess) -> None:
    directory = gateway_with_a_ghost.directory
    for command in (["list-tools", "ghost"], ["get-types", "ghost"]):
        result = run(directory, *command)
        assert result.returncode != 0, command
        assert "command not found: no-such-program-for-toolscript" in result.stderr
        assert "hint:" in result.stderr and ".toolscript.json" in result.stderr
        assert "declare const tools" not in result.stdout
    servers = run(directory, "list-servers")
    ghost_row = next(line for line in servers.stdout.splitlines() if line.startswith("ghost"))
    assert "command not found" in ghost_row
    listed = json.loads(run(directory, "list-servers", "--json").stdout)
    ghost = next(server for server in listed if server["name"] == "ghost")
    assert ghost["error"] == "command not found: no-such-program-for-toolscript"


def test_save_names_the_users_file_in_its_errors(gateway_with_a_ghost: GatewayProcess) -> None:
    # It named toolscripts/report.ts:5:9, a file that was never written.
    directory = gateway_with_a_ghost.directory
    (directory / "draft.ts").write_text(
        "/** A report. */\n"
        "export default async function report(input: { a: string }) {\n"
        "  const n: number = input.a;\n"
        "  return n;\n"
        "}\n"
    )
    saved = run(directory, "save", "report", "draft.ts")
    assert saved.returncode == 1
    assert saved.stderr.startswith("draft.ts:3:9: TS2322 ")
    assert "toolscripts/report.ts" not in saved.stderr
    assert not (directory / "toolscripts" / "report.ts").exists()


def test_a_script_naming_a_failed_server_is_told_why(
    gateway_with_a_ghost: GatewayProcess,
) -> None:
    # A gateway runs: the note sent the user to `gateway start`, which refuses (one serves);
    # then to `gateway status`, which says no more than the note's reason, given whole.
    result = run(
        gateway_with_a_ghost.directory,
        "exec",
        returning("tools.ghost.anything({})"),
    )
    assert result.returncode == 1
    notes = [line for line in result.stderr.splitlines() if "not available" in line]
    assert notes == [
        "toolscript: warning: not available: ghost (command not found: "
        "no-such-program-for-toolscript)"
    ]


def test_a_command_with_its_arguments_in_one_string_says_where_they_go(project: Path) -> None:
    # "command": "npx -y @modelcontextprotocol/server-memory" is a new user's first config.
    spaced = {"command": "no-such-program-for-toolscript --stdio -v"}
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"spaced": spaced}}))
    result = run(
        project,
        "exec",
        "--no-check",
        returning("tools.spaced.anything({})"),
    )
    assert result.returncode == 1
    assert (
        "not available: spaced (command not found: no-such-program-for-toolscript --stdio -v "
        '(the program goes in "command", each argument in "args": '
        '"command": "no-such-program-for-toolscript", "args": ["--stdio", "-v"]))'
    ) in result.stderr


def test_a_missing_path_with_spaces_is_not_split_into_arguments(project: Path) -> None:
    # macOS keeps programs under "~/Library/Application Support": a path with a space that
    # is not there is not found, and splitting it at the space is no program and arguments.
    missing = str(project / "Application Support" / "server")
    (project / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"spaced": {"command": missing}}})
    )
    result = run(
        project,
        "exec",
        "--no-check",
        returning("tools.spaced.anything({})"),
    )
    assert result.returncode == 1
    assert f"not available: spaced (command not found: {missing})" in result.stderr
    assert "the program goes in" not in result.stderr


def test_a_server_that_never_answers_says_what_to_check(project: Path) -> None:
    # A command that runs but speaks no MCP (a typo'd subcommand, a server waiting for a
    # login prompt) said only "timed out while connecting".
    silent = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}
    gateway = GatewayProcess(
        {"mcpServers": {"fx": fixture_server(), "silent": silent}},
        project,
        "--connect-timeout",
        "1",
        "--ready-wait",
        "5",
        env={"TOOLSCRIPT_HOME": str(project / "home")},
    )
    try:
        gateway.wait_for_log("silent: timed out while connecting")
        listed = json.loads(run(project, "list-servers", "--json").stdout)
        error = next(server for server in listed if server["name"] == "silent")["error"]
        assert error == (
            "timed out while connecting: no MCP answer in 1 s (is it an MCP server on stdio? "
            "a slow one gets longer with `toolscript gateway start --connect-timeout SECONDS`)"
        )
    finally:
        assert gateway.stop() == []


def test_a_server_that_exits_while_connecting_says_its_last_words(project: Path) -> None:
    # A wrong argument (mcp-server-git --repository /nonexistent) said "Connection closed"
    # in list-servers and --json, the cause only in `gateway status`'s stderr column.
    exits = {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no repo at /nope')"]}
    # `npx -y` of a package that does not exist ends with its log's path, after the reason
    npx = "print('npm error 404  @x/server-nope@* could not be found'); print('npm error 404'); "
    npx += "print('npm error A complete log of this run can be found in: /x.log'); exit(1)"
    missing = {
        "command": sys.executable,
        "args": ["-c", f"import sys; sys.stdout = sys.stderr; {npx}"],
    }
    gateway = GatewayProcess(
        {"mcpServers": {"fx": fixture_server(), "exits": exits, "missing": missing}},
        project,
        env={"TOOLSCRIPT_HOME": str(project / "home")},
    )
    try:
        listed = json.loads(run(project, "list-servers", "--json").stdout)
        errors = {server["name"]: server["error"] for server in listed}
        assert errors["exits"].startswith("exited while connecting: no repo at /nope ("), errors
        assert errors["missing"].startswith(
            "exited while connecting: npm error 404  @x/server-nope@* could not be found ("
        ), errors
    finally:
        assert gateway.stop() == []


def test_a_server_whose_cwd_is_missing_is_not_called_a_missing_command(project: Path) -> None:
    # "cwd": "nope" said "command not found: /project/nope": the command is there.
    gateway = GatewayProcess(
        {"mcpServers": {"fx": fixture_server(), "lost": fixture_server(cwd="nope")}},
        project,
        env={"TOOLSCRIPT_HOME": str(project / "home")},
    )
    try:
        listed = json.loads(run(project, "list-servers", "--json").stdout)
        error = next(server for server in listed if server["name"] == "lost")["error"]
        assert "command not found" not in error
        assert f'"cwd" is not a folder: {project / "nope"}' in error, error
    finally:
        assert gateway.stop() == []


def test_a_url_server_that_cannot_be_reached_names_where(project: Path) -> None:
    # httpx's "All connection attempts failed" named no host; a token in the URL stays out.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    closed = {"url": f"http://user:pw@127.0.0.1:{port}/mcp?token=abc123"}
    gateway = GatewayProcess(
        {"mcpServers": {"fx": fixture_server(), "closed": closed}},
        project,
        env={"TOOLSCRIPT_HOME": str(project / "home")},
    )
    try:
        listed = json.loads(run(project, "list-servers", "--json").stdout)
        error = next(server for server in listed if server["name"] == "closed")["error"]
        assert error.startswith(f"cannot connect to http://127.0.0.1:{port}: "), error
        assert "abc123" not in error and "pw" not in error
    finally:
        assert gateway.stop() == []


def test_exec_without_a_gateway_keeps_the_gateways_log_out(project: Path) -> None:
    config = {"mcpServers": {"fx": fixture_server(), "ghost": GHOST}}
    (project / ".toolscript.json").write_text(json.dumps(config))
    quiet = run(
        project,
        "exec",
        returning('tools.fx.plainText({ text: "hi" })'),
    )
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout) == "hi"
    assert quiet.stderr == ""  # no WARNING lines of the temporary gateway
    uses_ghost = run(
        project,
        "exec",
        "--no-check",
        returning("tools.ghost.anything({})"),
    )
    assert uses_ghost.returncode == 1
    notes = [line for line in uses_ghost.stderr.splitlines() if "not available" in line]
    assert len(notes) == 1 and "ghost (command not found" in notes[0]
    # its error is the whole reason: no "run `toolscript gateway start` to see why" after it
    assert notes[0].endswith(")") and "to see why" not in uses_ghost.stderr, notes[0]
    assert "WARNING" not in uses_ghost.stderr


def trusted_gateway(project: Path, config: dict[str, Any]) -> tuple[GatewayProcess, dict[str, str]]:
    """A gateway on ``config``, trusted as a user does it (`toolscript trust`, trust records
    of the project's own, nothing trusted by path), and the environment of its commands."""
    env = {
        "TOOLSCRIPT_HOME": str(project / "home"),
        "TOOLSCRIPT_CONFIG_HOME": str(project / "trust"),
        "TOOLSCRIPT_TRUSTED_PATHS": "",
    }
    (project / ".toolscript.json").write_text(json.dumps(config))
    assert run(project, "trust", **env).returncode == 0
    return GatewayProcess(config, project, env=env), env


def test_an_edit_that_did_not_load_is_named_where_its_server_is_missing(project: Path) -> None:
    # The user trusts the config, starts the gateway, then adds a server: the edit waits for
    # `toolscript trust` again. list-servers said "unknown" and list-tools "server not
    # found (configured: fx)" of a server in the file, neither saying why.
    config = {"mcpServers": {"fx": fixture_server()}}
    gateway, env = trusted_gateway(project, config)
    try:
        edited = {"mcpServers": {**config["mcpServers"], "more": fixture_server()}}
        (project / ".toolscript.json").write_text(json.dumps(edited))
        gateway.wait_for_log("is not trusted yet")
        listed = run(project, "list-servers", **env)
        assert listed.returncode == 0, listed.stderr
        assert "more\tstdio\tunknown" in listed.stdout
        assert "note: the config's last edit did not load" in listed.stderr
        assert "is not trusted yet" in listed.stderr and "toolscript trust" in listed.stderr
        tools = run(project, "list-tools", "more", **env)
        assert tools.returncode == 1
        assert "server not found: 'more' (configured: fx)" in tools.stderr
        assert "hint: the config's last edit did not load" in tools.stderr
        assert "toolscript trust" in tools.stderr
        # An edit of fx's own entry: every name is served, the edit is not.
        config["mcpServers"]["fx"]["description"] = "edited"
        (project / ".toolscript.json").write_text(json.dumps(config))
        listed = run(project, "list-servers", **env)  # (the file is judged as it is now)
        assert listed.returncode == 0, listed.stderr
        assert "note: the gateway serves the config as it was when trusted: " in listed.stderr
        assert "run `toolscript trust`" in listed.stderr
    finally:
        assert gateway.stop() == []


def test_a_gateway_started_with_ampersand_keeps_its_info_lines_off_the_terminal(
    project: Path,
) -> None:
    """`toolscript gateway start &` shares the user's terminal: its INFO lines landed among
    the output of the commands typed after it, and on the prompt."""
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    start = f"{sys.executable} -m toolscript gateway start &"
    shell = InteractiveShell(project)
    try:
        shell.type(start)
        wait_until(shell.read, lambda seen: "http://127.0.0.1:" in seen, 60, "the gateway's URL")
        shell.type(f"{sys.executable} -m toolscript gateway stop")
        wait_until(shell.read, lambda seen: "gateway: stopped" in seen, 60, "the stop")
    finally:
        shell.close()
    assert " INFO " not in shell.seen, shell.seen


def test_list_servers_without_a_gateway_says_why_state_is_empty(project: Path) -> None:
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    listed = run(project, "list-servers")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("fx\tstdio\t\t\t")
    assert "no gateway runs for this project" in listed.stderr
    assert "toolscript gateway start &" in listed.stderr
    # A project not trusted yet: `gateway start` would refuse, so trust is the next step.
    untrusted = {"TOOLSCRIPT_TRUSTED_PATHS": "", "TOOLSCRIPT_CONFIG_HOME": str(project / "trust")}
    listed = run(project, "list-servers", **untrusted)
    assert listed.returncode == 0, listed.stderr
    assert "is not trusted yet" in listed.stderr and "run `toolscript trust`" in listed.stderr
    assert "gateway start" not in listed.stderr


def test_get_types_takes_a_tool_named_as_approve_and_scripts_name_it(project: Path) -> None:
    config = {"mcpServers": {"my-fx": fixture_server()}}
    (project / ".toolscript.json").write_text(json.dumps(config))
    for spelled in ("my-fx.plain_text", "tools.myFx.plainText", "my-fx plainText"):
        typed = run(project, "get-types", *spelled.split())
        assert typed.returncode == 0, (spelled, typed.stderr)
        assert "plainText(" in typed.stdout and "jsonText(" not in typed.stdout, spelled
    whole = run(project, "get-types", "tools.myFx")
    assert whole.returncode == 0, whole.stderr
    assert "plainText(" in whole.stdout and "jsonText(" in whole.stdout


def test_a_server_with_no_prompts_is_said_to_have_none(project: Path) -> None:
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    listed = run(project, "list-prompts", "fx")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == ""
    assert "fx offers no prompts" in listed.stderr  # it printed nothing at all


def test_search_without_a_gateway_says_why_it_is_keyword_only(project: Path) -> None:
    """The gateway started for one search loads no model: the user turned nothing off."""
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    found = run(project, "search", "echo a message", "-n", "1")
    assert found.returncode == 0, found.stderr
    assert "loads no embedding model" in found.stderr
    assert "turned off" not in found.stderr
    (project / ".toolscript.json").write_text("{}")
    nothing = run(project, "search", "echo a message")
    assert nothing.returncode == 1
    assert "no servers are configured (add them under mcpServers in " in nothing.stderr


def test_list_servers_with_a_gateway_of_no_servers_yet_says_it_runs(project: Path) -> None:
    # init found no servers, the gateway runs, the user adds one: the edit waits for
    # `toolscript trust`. list-servers said "no gateway runs for this project", though one
    # serves (every server it serves, none, was taken for no gateway).
    config: dict[str, Any] = {"mcpServers": {}}
    gateway, env = trusted_gateway(project, config)
    try:
        (project / ".toolscript.json").write_text(
            json.dumps({"mcpServers": {"fx": fixture_server()}})
        )
        gateway.wait_for_log("is not trusted yet")
        listed = run(project, "list-servers", **env)
        assert listed.returncode == 0, listed.stderr
        assert "fx\tstdio\tunknown" in listed.stdout
        assert "no gateway runs" not in listed.stderr
        assert "note: the config's last edit did not load" in listed.stderr
        assert "is not trusted yet" in listed.stderr and "toolscript trust" in listed.stderr
    finally:
        assert gateway.stop() == []


# -- what a script's errors look like -------------------------------------------------


def test_errors_point_at_the_users_own_lines(project: Path) -> None:
    runtime = run(project, "exec", "const x: any = null; return x.foo")
    assert runtime.returncode == 1
    assert "__toolscriptResult" not in runtime.stderr
    assert "const x: any = null; return x.foo" in runtime.stderr
    assert re.search(r"<inline>\.ts:1:31\b", runtime.stderr), runtime.stderr
    (project / "two.ts").write_text("const a = 1;\nreturn {a")
    syntax = run(project, "exec", "two.ts")
    assert syntax.returncode == 1
    assert "})();" not in syntax.stderr
    assert re.search(r"two\.ts:2:\d+", syntax.stderr), syntax.stderr
    piped = toolscript_cli(
        "exec",
        "-",
        cwd=project,
        stdin="const y: number = 'no';\nreturn y",
        env={"TOOLSCRIPT_HOME": str(project / "home")},
    )
    assert piped.returncode == 1
    assert re.search(r"<stdin>\.ts:1:7\b", piped.stderr), piped.stderr


def test_a_script_without_its_import_is_told_the_line_it_lacks(project: Path) -> None:
    forgot = "return await tools.time.getCurrentTime({ timezone: 'UTC' })"
    for args in (["exec", forgot], ["exec", "--no-check", forgot]):
        ran = run(project, *args)
        assert ran.returncode == 1
        assert 'import { tools } from "toolscript";' in ran.stderr, ran.stderr
    thrown = run(project, "exec", "const tools = { a: 1 }; throw new Error(String(tools.a))")
    assert thrown.returncode == 1
    assert "import {" not in thrown.stderr  # its own `tools`: nothing forgotten


def test_a_saved_script_run_with_exec_says_how_it_runs(project: Path) -> None:
    """A file in the shape `save --help` shows only defines its function: exec ran it and
    printed nothing, exit 0."""
    (project / "report.ts").write_text(
        "/** Echo the team. */\n"
        "export default async function report(input: { team: string }) {\n"
        "  return input.team;\n}\n"
    )
    ran = run(project, "report.ts")
    assert ran.returncode == 0, ran.stderr
    assert "toolscript save NAME report.ts" in ran.stderr
    assert "toolscript run NAME --input" in ran.stderr
    (project / "calls.ts").write_text(
        "export default async function f(i: { a: number }) { return i.a }\nreturn await f({ a: 4 });\n"
    )
    called = run(project, "calls.ts")
    assert called.returncode == 0 and called.stdout.strip() == "4"
    assert called.stderr == ""


def test_a_run_stopped_by_ctrl_c_is_logged_with_the_exit_code_the_shell_saw(
    project: Path,
) -> None:
    config = {"mcpServers": {"fx": fixture_server(timeout=60)}, "search": {"semantic": False}}
    code = 'import { tools } from "toolscript";\nawait tools.fx.sleep({ seconds: 7.25 });'
    with running_gateway(config, project) as gateway:
        stopped = interruptible_exec(code, cwd=project)
        try:
            fx_waits_for(gateway, sleeping=7.25, timeout=60)
            stopped.send_signal(signal.SIGINT)
            stopped.communicate(timeout=60)
        finally:
            if stopped.poll() is None:
                stopped.kill()
        assert stopped.returncode == 130
        logged = toolscript_cli("runs", "--json", "-n", "1", cwd=project, env={})
        assert logged.returncode == 0, logged.stderr
        (run_row,) = json.loads(logged.stdout)
        assert run_row["exit"] == 130, run_row


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("10n", "serialize a BigInt"),
        ("() => 1", "it is a function"),
        ("(() => { const a: any = {}; a.self = a; return a; })()", "circular structure"),
    ],
)
def test_a_return_value_json_cannot_hold_is_one_clear_error(
    project: Path, value: str, why: str
) -> None:
    ran = run(project, "exec", f"return {value}")
    assert ran.returncode == 1
    assert ran.stdout == ""  # not "undefined" as if it were the value
    assert "return value cannot be written as JSON" in ran.stderr and why in ran.stderr
    assert "__toolscript" not in ran.stderr and len(ran.stderr.splitlines()) == 1


def test_a_run_that_ended_is_said_to_have_ended(project: Path) -> None:
    """`runs stop`, `runs wait` and `exec --resume` of a run that finished, with no gateway
    running: they spoke of background runs, or of a script the log does not keep."""
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    ran = run(project, "exec", 'import { tools } from "toolscript"; return 1')
    assert ran.returncode == 0, ran.stderr
    listed = run(project, "runs", "--json", "-n", "1")
    run_id = json.loads(listed.stdout)[0]["id"]
    for command in ("stop", "wait"):
        left = run(project, "runs", command, run_id)
        assert left.returncode == 2
        assert f"run {run_id} is not under way" in left.stderr, left.stderr
        assert "background run needs" not in left.stderr
    resumed = run(project, "exec", "--resume", run_id)
    assert resumed.returncode != 0
    assert "did not stop for an approval (ok): there is nothing to resume" in resumed.stderr
    assert "keeps no script" not in resumed.stderr


def test_refusals_say_what_scripts_cannot_do(project: Path) -> None:
    refused = run(project, "exec", "--no-check", 'return Deno.readTextFileSync("/etc/hostname")')
    assert refused.returncode == 1
    assert "scripts cannot read files" in refused.stderr
    assert "--allow-read" not in refused.stderr


def test_out_of_memory_is_one_line(project: Path) -> None:
    hog = "const a = []; while (true) a.push(new Array(1e6).fill(1));"
    result = run(project, "exec", "--no-check", "--memory", "32", hog)
    assert result.returncode == 125
    assert "Last few GCs" not in result.stderr and "C stack trace" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "toolscript: error: the toolscript ran out of memory (limit 32 MB, raise --memory)"
    ]


# -- hints and docs that point somewhere ----------------------------------------------


def test_config_check_without_a_file_says_how_to_make_one(project: Path) -> None:
    checked = run(project, "config", "check")
    assert checked.returncode == 0  # zero servers is a valid project
    assert "no .toolscript.json here or in a folder above" in checked.stderr
    assert "toolscript init" in checked.stderr


def test_the_schema_ships_with_the_package(project: Path) -> None:
    printed = run(project, "config", "schema")
    assert printed.returncode == 0
    schema = json.loads(printed.stdout)
    assert schema["properties"]["mcpServers"]
    (project / ".toolscript.json").write_text('{"mcpServers": {"a": {"type": "ftp"}}}')
    checked = run(project, "config", "check")
    assert checked.returncode == 2
    assert "toolscript config schema" in checked.stderr
    assert "schemas/toolscript.schema.json" not in checked.stderr


def test_doit_with_a_config_it_cannot_use_says_why_without_a_traceback(project: Path) -> None:
    (project / "dodo.py").write_text("from toolscript.pipeline.dodo import *  # noqa: F403\n")
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    for trusted_paths, said in (("", "is not trusted yet"), (str(project), "a comma after")):
        if trusted_paths:
            (project / ".toolscript.json").write_text('{"mcpServers": {},}')
        doit = subprocess.run(
            [python_bin("doit"), "list"],
            cwd=project,
            env=clean_env(
                TOOLSCRIPT_HOME=str(project / "home"),
                TOOLSCRIPT_CONFIG_HOME=str(project / "trust"),
                TOOLSCRIPT_TRUSTED_PATHS=trusted_paths,
            ),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert doit.returncode == 2, doit.stderr
        assert "Traceback" not in doit.stderr
        assert doit.stderr.startswith("toolscript: error: ") and said in doit.stderr


def test_doit_after_an_edit_that_restarted_a_server_finds_its_fetch_up_to_date(
    project: Path,
) -> None:
    # The gateway built while fx restarted (its policy changed), so its fetch recorded "not
    # reached", and was never run again once fx answered: `doit` then listed it "R".
    (project / "dodo.py").write_text("from toolscript.pipeline.dodo import *  # noqa: F403\n")
    config: dict[str, Any] = {"mcpServers": {"fx": fixture_server()}}
    env = {"TOOLSCRIPT_HOME": str(project / "home")}
    gateway = GatewayProcess(config, project, env=env)
    try:
        config["mcpServers"]["fx"]["policy"] = {"echo": "ask"}
        (project / ".toolscript.json").write_text(json.dumps(config))

        def after_the_restart() -> list[str]:
            lines = gateway.log.splitlines()
            reconnected = [i for i, line in enumerate(lines) if "fx: connected" in line]
            return lines[reconnected[1] :] if len(reconnected) > 1 else []

        wait_until(
            after_the_restart,
            lambda lines: any("artifacts:" in line for line in lines),
            60,
            "fx's restart and the build after it",
        )
        doit = subprocess.run(
            [python_bin("doit"), "list", "--all", "--status"],
            cwd=project,
            env=clean_env(**env),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert doit.returncode == 0, doit.stderr
        assert [line for line in doit.stdout.splitlines() if line.startswith("R fetch")] == []
    finally:
        assert gateway.stop() == []


@needs_semantic
def test_doit_after_the_gateway_finds_everything_up_to_date(project: Path) -> None:
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    (project / "dodo.py").write_text("from toolscript.pipeline.dodo import *  # noqa: F403\n")
    gateway = GatewayProcess(
        json.loads((project / ".toolscript.json").read_text()),
        project,
        env={"TOOLSCRIPT_HOME": str(project / "home")},
    )
    try:
        gateway.wait_for_health(lambda health: health["search"]["mode"] == "hybrid", 120)
        doit = subprocess.run(
            [python_bin("doit")],
            cwd=project,
            env=clean_env(TOOLSCRIPT_HOME=str(project / "home")),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert doit.returncode == 0, doit.stdout + doit.stderr
        ran = [line for line in doit.stdout.splitlines() if line.startswith(".  ")]
        assert ran == [], doit.stdout  # every task "-- " (up to date), index included
        assert "-- index" in doit.stdout
    finally:
        assert gateway.stop() == []


# -- the README's quick start, exactly as written ----------------------------------------


def _quick_start() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    return section.split("```bash\n", 1)[1].split("```", 1)[0]


def test_the_readmes_quick_start_runs_as_written(tmp_path: Path) -> None:
    script = _quick_start()
    assert script.startswith("cd my-project")
    (tmp_path / "my-project").mkdir()
    bin_directory = str(Path(sys.executable).parent)
    env = clean_env(
        TOOLSCRIPT_HOME=str(tmp_path / "home"),
        PATH=bin_directory + os.pathsep + os.environ["PATH"],
        TOOLSCRIPT_TRUSTED_PATHS="",  # a new user: nothing is trusted until `toolscript trust`
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    # As pasted into a shell; the backgrounded gateway is stopped at the end.
    ran = subprocess.run(
        ["bash", "-c", "set -e\n" + script + "\nkill %1\nwait\n"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    lines = ran.stdout.splitlines()
    assert any(line.startswith("time\tstdio") for line in lines)  # list-servers
    hits = [
        line for line in lines if (line.startswith("time\t") and "\t0." in line) or "\t1.0" in line
    ]
    assert hits and "get_current_time" in hits[0], ran.stdout  # search: the right tool first
    assert "export type TimeGetCurrentTimeParams" in ran.stdout  # get-types
    assert '"timezone":"Asia/Tokyo"' in ran.stdout  # exec
    assert toolscript_processes_under(tmp_path) == []
