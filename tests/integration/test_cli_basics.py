"""The CLI skeleton run as a user runs it: a real process, real exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import toolscript_cli
from toolscript import __version__


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return toolscript_cli(*args, cwd=cwd, env=env, timeout=60)


def test_help_lists_commands_with_examples(tmp_path: Path) -> None:
    result = run("--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "list-servers" in result.stdout
    assert "Examples" in result.stdout
    # the quick start's order: nothing of a project's config starts before `trust`
    assert result.stdout.index("toolscript trust") < result.stdout.index("gateway start &")


def test_version(tmp_path: Path) -> None:
    result = run("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"toolscript {__version__}"


def test_unknown_command_suggests_help(tmp_path: Path) -> None:
    result = run("frobnicate", cwd=tmp_path)
    assert result.returncode == 2
    assert "--help" in result.stderr
    assert "frobnicate" in result.stderr


def test_list_servers_without_config(tmp_path: Path) -> None:
    result = run("list-servers", "--json", cwd=tmp_path)
    assert result.returncode == 0
    assert json.loads(result.stdout) == []
    text = run("list-servers", cwd=tmp_path)
    assert text.returncode == 0
    assert text.stdout == ""


CONFIG = {
    "mcpServers": {
        "github": {"command": "gh-mcp", "description": "GitHub issues", "env": {"T": "secret"}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer s3cr3t"}},
    }
}


def test_list_servers_text_pipes_cleanly(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps(CONFIG))
    result = run("list-servers", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    # seven columns whatever the state (server, transport, state, tools, reason, description,
    # source)
    assert lines == [
        "github\tstdio\t\t\t\tGitHub issues\t.toolscript.json",
        "docs\thttp\t\t\t\t\t.toolscript.json",
    ]
    assert "\x1b[" not in result.stdout


def test_list_servers_json_hides_secrets(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps(CONFIG))
    result = run("list-servers", "--json", cwd=tmp_path)
    servers = json.loads(result.stdout)
    assert [s["name"] for s in servers] == ["github", "docs"]
    assert servers[0]["transport"] == "stdio"
    assert "secret" not in result.stdout
    assert "s3cr3t" not in result.stdout


def test_config_option_and_environment_variable(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.json"
    other.write_text(json.dumps({"mcpServers": {"only": {"command": "x"}}}))
    by_option = run("list-servers", "--json", "--config", str(other), cwd=tmp_path)
    assert [s["name"] for s in json.loads(by_option.stdout)] == ["only"]
    by_env = run("list-servers", "--json", cwd=tmp_path, env={"TOOLSCRIPT_CONFIG": str(other)})
    assert [s["name"] for s in json.loads(by_env.stdout)] == ["only"]


def test_config_error_is_one_message_exit_2(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text('{"mcpServers": {"a": {"type": "ws"}}}')
    result = run("list-servers", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert ".toolscript.json:1:31: mcpServers.a.type" in result.stderr


def test_debug_shows_traceback(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text("{")
    result = run("--debug", "list-servers", cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" in result.stderr
