"""A server entry with a key only another kind of server reads: the value never reached the
server, and nothing said so. It is warned at that key (other clients ignore such a key, so a
config copied from one keeps its servers), with where such a value goes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.config import parse_config

PATH = Path("/p/.toolscript.json")


def warnings(entry: dict[str, object]) -> tuple[str, ...]:
    text = json.dumps({"mcpServers": {"api": entry}}, indent=2)
    loaded = parse_config(text, PATH, {"TOKEN": "t"})
    assert [server.name for server in loaded.servers] == ["api"]  # the server is kept
    return loaded.warnings


@pytest.mark.parametrize(
    "entry",
    [
        {"url": "https://x.example/mcp", "env": {"API_KEY": "${TOKEN}"}},
        {"type": "sse", "url": "https://x.example/sse", "env": {"API_KEY": "k"}},
    ],
)
def test_env_of_a_url_server_is_warned_naming_headers(entry: dict[str, object]) -> None:
    (warning,) = warnings(entry)
    assert warning.startswith(f"{PATH}:") and ":7: mcpServers.api.env" in warning
    assert "mcpServers.api.env: 'env' is for stdio servers" in warning
    assert '"headers"' in warning and "ignored" in warning


def test_args_of_a_url_server_are_warned() -> None:
    (warning,) = warnings({"url": "https://x.example/mcp", "args": ["-v"]})
    assert "mcpServers.api.args:" in warning


def test_headers_of_a_stdio_server_are_warned_naming_env() -> None:
    (warning,) = warnings({"command": "server", "headers": {"Authorization": "Bearer ${TOKEN}"}})
    assert "mcpServers.api.headers: 'headers' is for http and sse servers" in warning
    assert '"env"' in warning


def test_an_empty_key_of_another_transport_says_nothing() -> None:
    assert warnings({"url": "https://x.example/mcp", "env": {}}) == ()
    assert warnings({"command": "server", "env": {"A": "b"}}) == ()


def test_config_check_shows_the_warning_and_stays_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLSCRIPT_CONFIG", raising=False)
    config = {"mcpServers": {"api": {"url": "https://x.example/mcp", "env": {"K": "v"}}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    shown = CliRunner().invoke(app, ["config", "check"])
    assert shown.exit_code == 0, shown.output
    assert "valid, 1 server" in shown.stdout
    assert "warning: " in shown.stderr and "'env' is for stdio servers" in shown.stderr
    as_json = CliRunner().invoke(app, ["config", "check", "--json"])
    answer = json.loads(as_json.stdout)
    assert answer["valid"] is True
    assert any("mcpServers.api.env" in warning for warning in answer["warnings"])
