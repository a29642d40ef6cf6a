"""A new user's findings (issue 44): config lookup from a subfolder, fixed columns and
headers in piped output, JSON that scripts can read, ambiguous run ids, plain messages."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.errors import ConfigError, GatewayUnreachableError, UsageError

runner = CliRunner()
TIME = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}


pytestmark = pytest.mark.usefixtures("project")  # (tests/unit/conftest.py)


def _tool_a_b(project: Path) -> None:
    """A project whose server ``a`` has a tool ``b`` (fetched): ``approve --tool a.b`` works."""
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"a": {"command": "a"}}}))
    fetched = project / ".toolscript" / "servers" / "a.json"
    fetched.parent.mkdir(parents=True, exist_ok=True)
    fetched.write_text(json.dumps([{"name": "b"}]))


def _subfolder(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project / ".toolscript.json").write_text(json.dumps(TIME))
    inside = project / "scripts" / "deeper"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    return inside


# -- 12: the config of a parent folder ------------------------------------------


def test_commands_in_a_subfolder_use_the_nearest_parents_config(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _subfolder(project, monkeypatch)
    listed = runner.invoke(app, ["list-servers", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [server["name"] for server in json.loads(listed.output)] == ["time"]
    checked = runner.invoke(app, ["config", "check", "--json"])
    assert json.loads(checked.output)["path"] == str(project / ".toolscript.json")


def test_the_search_for_a_config_stops_at_the_home_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.plumbing.paths import find_config_path

    (project / ".toolscript.json").write_text("{}")
    home = project / "user"
    (home / "work").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    assert find_config_path(None, home / "work") == home / "work" / ".toolscript.json"


def test_a_gateway_started_in_a_subfolder_records_the_projects_cache(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.gateway.state import start_cache_dir

    inside = _subfolder(project, monkeypatch)
    assert start_cache_dir({}, inside, {}) == project / ".toolscript"


def test_a_command_says_which_parents_config_it_uses(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolscript.cli.entry import main

    _subfolder(project, monkeypatch)
    monkeypatch.setattr(sys, "argv", ["toolscript", "config", "check"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 0
    shown = capsys.readouterr()
    assert f"toolscript: using {project / '.toolscript.json'}\n" in shown.err
    assert str(project / ".toolscript.json") in shown.out


def test_no_note_when_the_config_is_in_the_current_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolscript.cli.entry import main

    (project / ".toolscript.json").write_text(json.dumps(TIME))
    monkeypatch.setattr(sys, "argv", ["toolscript", "config", "check"])
    with pytest.raises(SystemExit):
        main()
    assert "using" not in capsys.readouterr().err


# -- 21: the cache folder ignores itself ----------------------------------------


def test_the_cache_folder_is_made_with_a_gitignore(project: Path) -> None:
    from toolscript.config import load_config
    from toolscript.pipeline.artifacts import CacheLayout
    from toolscript.pipeline.tasks import build_tasks

    (project / ".toolscript.json").write_text("{}")
    loaded = load_config()
    build_tasks(loaded, CacheLayout(loaded.cache_dir()), source=None)  # type: ignore[arg-type]
    ignore = project / ".toolscript" / ".gitignore"
    assert ignore.read_text().splitlines()[-1] == "*"


# -- 15: Deno's advice to skip type checks -------------------------------------


def test_denos_advice_to_skip_type_checks_is_not_shown() -> None:
    from toolscript.execution.sandbox import _rewriter
    from toolscript.execution.source import prepare

    script = Path("/cache/scripts/0123abcd/inline.ts")
    rewrite = _rewriter(script, "<inline>.ts", "http://127.0.0.1:4000/t", None, prepare("1").map)
    stderr = (
        "TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.\n"
        "error: Type checking failed.\n"
        "\n"
        "  info: The program failed type-checking, but it still might work correctly.\n"
        "  hint: Re-run with --no-check to skip type-checking.\n"
    )
    shown = "".join(rewrite(line.encode()).decode() for line in stderr.splitlines(True))
    assert "TS2322" in shown and "Type checking failed" in shown
    assert "--no-check" not in shown and "might work" not in shown


# -- 17: list-servers -------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_list_servers_prints_the_same_columns_whatever_the_state(project: Path) -> None:
    config = {
        "mcpServers": {
            "time": {"command": "uvx", "description": "clock"},
            "off": {"command": "x", "disabled": True},
        }
    }
    (project / ".toolscript.json").write_text(json.dumps(config))
    plain = runner.invoke(app, ["list-servers"])
    assert plain.exit_code == 0
    rows = [line.split("\t") for line in plain.stdout.splitlines()]
    assert [len(row) for row in rows] == [7, 7]
    assert rows[0] == ["time", "stdio", "", "", "", "clock", ".toolscript.json"]
    headed = runner.invoke(app, ["list-servers", "--header"])
    assert headed.stdout.splitlines()[0].split("\t") == [
        "server",
        "transport",
        "state",
        "tools",
        "reason",
        "description",
        "source",
    ]
    assert headed.stdout.splitlines()[1:] == plain.stdout.splitlines()


def test_list_servers_with_a_dead_gateway_url_is_an_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".toolscript.json").write_text(json.dumps(TIME))
    monkeypatch.setenv("TOOLSCRIPT_GATEWAY_URL", f"http://127.0.0.1:{_closed_port()}/token")
    result = runner.invoke(app, ["list-servers"])
    assert isinstance(result.exception, GatewayUnreachableError)
    assert result.exception.exit_code != 0
    assert "TOOLSCRIPT_GATEWAY_URL" in result.exception.message
    assert result.stdout == ""


# -- 18: config check --json ------------------------------------------------------


def test_config_check_json_describes_an_invalid_file(project: Path) -> None:
    (project / ".toolscript.json").write_text(
        '{\n  "mcpServers": {\n    "x": {"command": "a", "typo": 1}\n  }\n}\n'
    )
    result = runner.invoke(app, ["config", "check", "--json"])
    assert result.exit_code == 2
    answer = json.loads(result.stdout)
    assert answer["valid"] is False
    error = answer["error"]
    assert error["file"] == str(project / ".toolscript.json")
    assert error["line"] == 3
    assert error["field"] == "mcpServers.x.typo"
    assert "unknown key 'typo'" in error["message"]
    assert error["hint"]


def test_config_check_json_describes_broken_json(project: Path) -> None:
    (project / ".toolscript.json").write_text('{"mcpServers": }')
    result = runner.invoke(app, ["config", "check", "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["line"] == 1 and error["field"] is None
    assert error["message"].startswith("invalid JSON")


def test_config_check_json_says_valid(project: Path) -> None:
    (project / ".toolscript.json").write_text(json.dumps(TIME))
    answer = json.loads(runner.invoke(app, ["config", "check", "--json"]).stdout)
    assert answer["valid"] is True and answer["servers"] == ["time"]


# -- 19, 20: the run log --------------------------------------------------------

RUN_IDS = ["20261124-101500-3f9a1c", "20261124-101501-77aa02", "20261124-111111-000000"]


def _log_runs(project: Path) -> None:
    from toolscript.plumbing.paths import project_state_dir
    from toolscript.store.runlog import RunLog, runlog_path

    (project / ".toolscript.json").write_text("{}")
    runlog = RunLog(runlog_path(project_state_dir(project)))
    for number, run_id in enumerate(RUN_IDS):
        runlog.write(
            runs=[
                {
                    "id": run_id,
                    "script_hash": "h",
                    "origin": "cli",
                    "started": 1_800_000_000.0 + number,
                    "ended": 1_800_000_001.5 + number,
                    "exit": 0,
                    "status": "ok",
                    "calls": 1,
                    "resumed_from": "",
                    "stopped": "",
                    "script": "",
                    "script_name": json.dumps(["report.ts", "report.ts"]),
                }
            ],
            calls=[
                {
                    "run_id": run_id,
                    "seq": 1,
                    "tool": "a__b",
                    "arguments": "{}",
                    "arguments_bytes": 2,
                    "result_bytes": 3,
                    "started": 1_800_000_000.5 + number,
                    "ms": 1.0,
                    "outcome": "ok",
                    "error": "",
                }
            ],
        )


def test_an_ambiguous_run_prefix_names_the_runs_it_matches(project: Path) -> None:
    _log_runs(project)
    result = runner.invoke(app, ["runs", "show", "20261124-1015"])
    assert isinstance(result.exception, UsageError)
    assert "ambiguous" in result.exception.message
    assert RUN_IDS[0] in result.exception.message and RUN_IDS[1] in result.exception.message
    unique = runner.invoke(app, ["runs", "show", "20261124-1111", "--json"])
    assert json.loads(unique.stdout)["id"] == RUN_IDS[2]
    missing = runner.invoke(app, ["runs", "show", "2027"])
    assert "no run" in missing.exception.message  # type: ignore[union-attr]


def test_runs_json_has_iso_times_and_the_scripts_name(project: Path) -> None:
    from datetime import datetime

    _log_runs(project)
    runs = json.loads(runner.invoke(app, ["runs", "--json"]).stdout)
    assert runs[0]["script_name"] == "report.ts"
    assert datetime.fromisoformat(runs[0]["started"]).timestamp() == 1_800_000_002.0
    assert datetime.fromisoformat(runs[0]["ended"]).timestamp() == 1_800_000_003.5
    shown = json.loads(runner.invoke(app, ["runs", "show", RUN_IDS[0], "--json"]).stdout)
    assert shown["script_name"] == "report.ts"
    assert datetime.fromisoformat(shown["calls_made"][0]["started"]).tzinfo is not None
    _tool_a_b(project)
    runner.invoke(app, ["approve", "--tool", "a.b"])
    approvals = json.loads(runner.invoke(app, ["approve", "--list", "--json"]).stdout)
    assert datetime.fromisoformat(approvals[0]["created"]).tzinfo is not None


def test_piped_runs_take_a_header_and_keep_whole_ids(project: Path) -> None:
    _log_runs(project)
    headed = runner.invoke(app, ["runs", "--header"]).stdout.splitlines()
    assert headed[0].split("\t") == ["run", "started", "took", "origin", "calls", "status", "exit"]
    assert [line.split("\t")[0] for line in headed[1:]] == RUN_IDS[::-1]
    _tool_a_b(project)
    runner.invoke(app, ["approve", "--tool", "a.b"])
    listed = runner.invoke(app, ["approve", "--list", "--header"]).stdout.splitlines()
    assert listed[0].split("\t")[:3] == ["scope", "tool", "run"]


def test_run_ids_are_whole_on_an_80_column_terminal(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.cli import output

    _log_runs(project)
    monkeypatch.setattr(output, "stdout_is_terminal", lambda: True)
    monkeypatch.setenv("COLUMNS", "80")
    table = runner.invoke(app, ["runs"]).stdout
    assert max(len(line) for line in table.splitlines()) <= 80
    assert all(run_id in table for run_id in RUN_IDS)


# -- 23: argument validation in plain English ----------------------------------


def _messages(schema: dict[str, Any], value: Any) -> list[str]:
    from toolscript.gateway.core import plain_message

    validator = jsonschema.Draft202012Validator(schema)
    return [plain_message(error) for error in validator.iter_errors(value)]


def test_argument_errors_read_as_plain_english() -> None:
    def only(schema: dict[str, Any], value: Any) -> str:
        (message,) = _messages(schema, value)
        return message

    assert only({"minimum": 0}, -3) == "must be at least 0, got -3"
    assert only({"maximum": 10}, 11) == "must be at most 10, got 11"
    assert only({"exclusiveMinimum": 0}, 0) == "must be greater than 0, got 0"
    assert only({"exclusiveMaximum": 5}, 5) == "must be less than 5, got 5"
    assert only({"minLength": 3}, "ab") == "must be at least 3 characters long, got 2"
    assert only({"maxLength": 1}, "ab") == "must be at most 1 character long, got 2"
    assert only({"required": ["code"]}, {}) == 'missing required property "code"'
    assert only({"type": "string"}, 3) == "must be a string, got an integer"
    assert only({"type": ["string", "null"]}, True) == "must be a string or null, got true or false"
    assert only({"enum": ["a", "b"]}, "c") == 'must be one of "a", "b", got "c"'
    assert only({"pattern": "^x"}, "y") == 'must match the pattern ^x, got "y"'
    assert (
        only({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "z": 2})
        == 'unknown property "z" (allowed: a)'
    )


def test_the_gateway_keeps_the_path_of_each_error() -> None:
    from toolscript.errors import ArgumentValidationError
    from toolscript.gateway.core import Gateway

    tool = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
    }
    gateway = Gateway.__new__(Gateway)
    gateway._validators = {}
    with pytest.raises(ArgumentValidationError) as raised:
        gateway.validate("s", tool, {"n": -3})
    assert raised.value.errors == [{"path": "/n", "message": "must be at least 0, got -3"}]
    assert "/n: must be at least 0, got -3" in raised.value.message


# -- 25: saved scripts and local tool files -----------------------------------


def test_list_scripts_verbose_shows_signature_and_description(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolscript.cli import scripts

    listing = {
        "directory": "toolscripts",
        "warnings": [],
        "scripts": [
            {
                "name": "weekly",
                "status": "ok",
                "description": "The week's report",
                "signature": "weekly(input: { team: string }): Promise<string>",
                "errors": [],
            }
        ],
    }

    class Client:
        def get_json(self, path: str, exact: bool = False) -> Any:
            return listing

    @contextlib.contextmanager
    def client(*args: Any, **kwargs: Any) -> Iterator[Client]:
        yield Client()

    monkeypatch.setattr(scripts, "gateway_client", client)
    (row,) = runner.invoke(app, ["list-scripts", "-v"]).stdout.splitlines()
    assert row.split("\t") == [
        "weekly",
        "ok",
        "weekly(input: { team: string }): Promise<string>",
        "The week's report",
    ]


def test_a_tool_files_docstring_describes_its_server(project: Path) -> None:
    from toolscript.config import load_config
    from toolscript.upstream.local import LocalToolServer

    (project / "tools").mkdir()
    source = '"""Notes kept for the team."""\n\ndef note(text: str) -> str:\n    return text\n'
    (project / "tools" / "notes.py").write_text(source)
    (project / ".toolscript.json").write_text(json.dumps({"localTools": {"dir": "tools"}}))
    (config,) = load_config().servers
    server = LocalToolServer(config, None)
    anyio.run(server._load, source)
    assert server.status()["description"] == "Notes kept for the team."


def test_list_tools_verbose_takes_the_same_header_option(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.cli import tools

    class Client:
        def get_json(self, path: str, exact: bool = False) -> Any:
            if path == "/health":  # asked whether the server is connected
                return {"servers": {"time": {"state": "connected"}}}
            return [{"name": "now", "policy": "allow", "description": "The time"}]

    @contextlib.contextmanager
    def client(*args: Any, **kwargs: Any) -> Iterator[Client]:
        yield Client()

    (project / ".toolscript.json").write_text(json.dumps(TIME))
    monkeypatch.setattr(tools, "gateway_client", client)
    lines = runner.invoke(app, ["list-tools", "time", "-v", "--header"]).stdout.splitlines()
    assert lines == ["tool\tpolicy\tdescription", "now\tallow\tThe time"]


def test_auth_logout_without_a_server_asks_for_the_server_to_sign_out_of() -> None:
    # It said "name a server to sign in to" to a user signing out.
    shown = runner.invoke(app, ["auth", "--logout"])
    assert isinstance(shown.exception, UsageError)  # exit 2 once the entry point shows it
    assert shown.exception.message == "name the server to sign out of"
    assert "toolscript auth --logout SERVER" in (shown.exception.hint or "")


def test_auth_of_a_server_naming_an_unset_variable_is_refused_naming_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An unset ${VAR} no longer fails the config: its server is not started. `auth` went on
    # to sign in to the URL with the variable expanded as "" (another URL, or an empty secret).
    import toolscript.upstream.oauth as oauth

    tried: list[object] = []

    async def sign_in(*args: Any, **kwargs: Any) -> None:
        tried.append(args)
        raise RuntimeError("not reached")

    monkeypatch.setattr(oauth, "sign_in", sign_in)
    entry = {"url": "https://example.invalid/${TENANT_NOT_SET}/mcp"}
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {"web": entry}}))
    assert runner.invoke(app, ["trust"]).exit_code == 0
    shown = runner.invoke(app, ["auth", "web", "--no-browser"])
    assert tried == []
    assert isinstance(shown.exception, ConfigError)
    assert "TENANT_NOT_SET" in shown.exception.message and "url" in shown.exception.message
    assert "export TENANT_NOT_SET" in (shown.exception.hint or "")


@pytest.mark.parametrize(
    ("argv", "message", "command"),
    [
        (["list-tools", "--json"], "Missing argument 'server'", "toolscript list-tools"),
        (
            ["list-tools", "a", "--json", "--bogus"],
            "No such option: --bogus",
            "toolscript list-tools",
        ),
        (
            ["search", "q", "--output", "nope", "--json"],
            "'nope' is not one of",
            "toolscript search",
        ),
        (["runs", "show", "--json"], "Missing argument 'run_id'", "toolscript runs show"),
    ],
)
def test_a_usage_error_given_json_is_one_json_object_too(
    argv: list[str],
    message: str,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # click's own errors (a missing argument, an unknown option, a bad choice) were its text
    # alone, where every other error of a command given --json is one object on stdout
    from toolscript.cli import output
    from toolscript.cli.entry import main

    monkeypatch.setattr(output, "json_printed", False)
    monkeypatch.setattr(sys, "argv", ["toolscript", *argv])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    said = capsys.readouterr()
    body = json.loads(said.out)
    assert body["error"] == "usage_error"
    assert message in body["message"]
    assert f"`{command} --help`" in body["hint"]
    assert f"Try '{command} --help' for help." in said.err  # click's lines, as without --json


def test_a_usage_error_without_json_is_click_s_text_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolscript.cli.entry import main

    monkeypatch.setattr(sys, "argv", ["toolscript", "list-tools"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert "Error: Missing argument 'server'." in said.err


def test_save_of_a_missing_file_says_what_to_do(project: Path) -> None:
    (project / ".toolscript.json").write_text(json.dumps(TIME))
    shown = runner.invoke(app, ["save", "report", "missing.ts"])
    assert isinstance(shown.exception, UsageError)
    assert shown.exception.message == "file not found: missing.ts"
    assert "check the path" in (shown.exception.hint or "")


def test_auth_of_a_stdio_server_says_where_its_credentials_go(project: Path) -> None:
    (project / ".toolscript.json").write_text(json.dumps(TIME))
    assert runner.invoke(app, ["trust"]).exit_code == 0
    shown = runner.invoke(app, ["auth", "time"])
    assert isinstance(shown.exception, UsageError)
    assert "is a stdio server" in shown.exception.message
    assert '"env"' in (shown.exception.hint or "")


@pytest.mark.parametrize(
    ("args", "stdin", "where"),
    [
        (["exec", "-"], "", "standard input was empty"),
        (["exec", "-"], " \n\t\n", "standard input was empty"),
        (["exec", ""], None, "CODE is empty"),
    ],
)
def test_exec_of_no_script_says_so_before_anything_runs(
    args: list[str], stdin: str | None, where: str
) -> None:
    shown = runner.invoke(app, args, input=stdin)
    assert isinstance(shown.exception, UsageError), shown.output
    assert shown.exception.message == f"no script given: {where}"
    assert "toolscript exec -" in (shown.exception.hint or "")
