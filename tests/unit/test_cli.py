"""The CLI through typer's runner: help, configuration errors and a missing gateway.

No process is started: commands that need a gateway meet none (or a closed port).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.errors import ConfigError, ExecutionError, GatewayUnreachableError

runner = CliRunner()


@pytest.fixture(autouse=True)
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("TOOLSCRIPT_GATEWAY_URL", "TOOLSCRIPT_CONFIG", "TOOLSCRIPT_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOOLSCRIPT_CONFIG_HOME", str(tmp_path / "config-home"))
    return tmp_path


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_help_lists_every_command_with_examples() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("list-servers", "list-tools", "get-types", "search", "exec", "gateway"):
        assert command in result.output
    assert "Examples:" in result.output


def test_each_command_has_help_with_examples() -> None:
    for command in (["exec"], ["search"], ["list-tools"], ["get-types"], ["gateway", "start"]):
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0, command
        assert "Examples:" in result.output, command


def test_every_command_and_group_has_help_with_examples() -> None:
    # The README says "Every command has --help with examples": groups (gateway, runs,
    # config, cache) too, which a new user's first `--help` reaches.
    import click
    import typer

    def walk(command: click.Command, path: list[str]) -> list[list[str]]:
        found = [path]
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                found += walk(sub, [*path, name])
        return found

    lacking = []
    for path in walk(typer.main.get_command(app), []):
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, path
        if "Examples:" not in result.output:
            lacking.append(" ".join(path))
    assert lacking == []


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("toolscript ")


def test_list_servers_reads_the_config_without_a_gateway(project: Path) -> None:
    config = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}
    (project / ".toolscript.json").write_text(json.dumps(config))
    result = runner.invoke(app, ["list-servers", "--json"])
    assert result.exit_code == 0
    assert [server["name"] for server in json.loads(result.output)] == ["time"]


def test_a_broken_config_names_file_line_and_column(project: Path) -> None:
    (project / "broken.json").write_text('{\n  "mcpServers": {\n    "x": {"command": }\n  }\n}\n')
    result = runner.invoke(app, ["list-servers", "--config", "broken.json"])
    assert isinstance(result.exception, ConfigError)
    assert result.exception.exit_code == 2
    assert "broken.json:3:" in result.exception.message


def test_config_check_refuses_an_empty_file(project: Path) -> None:
    (project / ".toolscript.json").write_text("")
    result = runner.invoke(app, ["config", "check"])
    assert isinstance(result.exception, ConfigError)
    assert result.exception.exit_code == 2
    assert "the config file is empty" in result.exception.message
    assert "{}" in (result.exception.hint or "")


class _ExitedProcess:
    """A gateway process that exited before it printed its URL."""

    pid = 0
    stderr = None

    def poll(self) -> int:
        return 1


def test_commands_that_need_a_gateway_say_how_to_start_one(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no gateway running, each command starts an ephemeral one as exec does; when even
    that fails it says so, and how to see why."""
    from toolscript.gateway import launch

    config = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}
    (project / ".toolscript.json").write_text(json.dumps(config))
    started: list[tuple[str, ...]] = []

    def failed_start(*args: str, **options: object) -> launch.LaunchedGateway:
        started.append(args)
        return launch.LaunchedGateway(_ExitedProcess(), "")  # type: ignore[arg-type]

    monkeypatch.setattr(launch, "start_gateway", failed_start)
    for command in (["list-tools", "time"], ["search", "time"], ["get-types", "time"]):
        result = runner.invoke(app, command)
        assert isinstance(result.exception, ExecutionError), command
        assert "gateway start" in (result.exception.hint or "")
    assert len(started) == 3 and all("--ephemeral" in args for args in started)


def test_a_gateway_url_where_nothing_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/secret-token"
    monkeypatch.setenv("TOOLSCRIPT_GATEWAY_URL", url)
    result = runner.invoke(app, ["search", "time"])
    assert isinstance(result.exception, GatewayUnreachableError)
    assert "does not answer" in result.exception.message
    assert "secret-token" not in result.exception.message  # the token stays out of messages


def test_trust_lists_nothing_on_a_new_machine() -> None:
    result = runner.invoke(app, ["trust", "--list"])
    assert result.exit_code == 0
