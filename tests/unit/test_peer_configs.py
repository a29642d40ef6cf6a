"""A config written for a peer tool (mcporter, pctx, FastMCP, Gemini CLI, Windsurf, Codex,
VS Code) given to toolscript as it is: each key it names differently is an error at that key
naming toolscript's key, and `${env:VAR}` (VS Code's, Cursor's and pctx's spelling) is read
as `${VAR}`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.config import load_config, named_variables
from toolscript.errors import ConfigError


def error_of(tmp_path: Path, config: object) -> str:
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps(config, indent=1))
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert info.value.exit_code == 2
    return info.value.message


@pytest.mark.parametrize(
    ("entry", "key", "said"),
    [
        ({"baseUrl": "https://x.example/mcp"}, "baseUrl", "toolscript's is 'url'"),
        ({"serverUrl": "https://x.example/mcp"}, "serverUrl", "toolscript's is 'url'"),
        ({"httpUrl": "https://x.example/mcp"}, "httpUrl", "toolscript's is 'url'"),
        ({"url": "https://x.example/mcp", "transport": "http"}, "transport", "is 'type'"),
        ({"command": "x", "allowedTools": ["a"]}, "allowedTools", "is 'includeTools'"),
        ({"command": "x", "blocked_tools": ["a"]}, "blocked_tools", "is 'excludeTools'"),
        ({"command": "x", "enabled": False}, "enabled", "is 'disabled'"),
        ({"command": "x", "envFile": ".env"}, "envFile", "reads no env file"),
        ({"url": "https://x.example/mcp", "auth": "oauth"}, "auth", "`toolscript auth s`"),
        (
            {"url": "https://x.example/mcp", "auth": {"type": "bearer", "token": "t"}},
            "auth",
            '"Authorization": "Bearer ${TOKEN}"',
        ),
    ],
)
def test_a_peer_tools_server_key_names_toolscripts(
    tmp_path: Path, entry: dict[str, object], key: str, said: str
) -> None:
    message = error_of(tmp_path, {"mcpServers": {"s": entry}})
    line = next(line for line in message.splitlines() if f"mcpServers.s.{key}:" in line)
    assert f"unknown key {key!r}" in line
    assert said in line


def test_a_pctx_file_names_each_key_and_the_shape_of_mcpservers(tmp_path: Path) -> None:
    message = error_of(
        tmp_path,
        {
            "name": "mine",
            "version": "0.1.0",
            "servers": [
                {"name": "memory", "command": "npx -y @modelcontextprotocol/server-memory"}
            ],
        },
    )
    lines = message.splitlines()
    assert len(lines) == 3  # every key, not the first one alone
    assert "name: unknown key 'name'" in lines[0] and "pctx" in lines[0]
    assert "version: unknown key 'version'" in lines[1]
    assert '{"mcpServers": {"NAME": ' in lines[2]


def test_a_streamable_http_type_is_told_its_name_here(tmp_path: Path) -> None:
    message = error_of(
        tmp_path, {"mcpServers": {"s": {"type": "streamable-http", "url": "https://x.example"}}}
    )
    assert 'streamable HTTP is "http" here' in message


def test_a_close_misspelling_is_still_suggested(tmp_path: Path) -> None:
    message = error_of(tmp_path, {"mcpServers": {"s": {"comand": "x", "command": "x"}}})
    assert "did you mean 'command'?" in message


def test_env_colon_variables_are_expanded_and_named(tmp_path: Path) -> None:
    path = tmp_path / ".toolscript.json"
    entry = {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${env:TOK}"}}
    path.write_text(json.dumps({"mcpServers": {"s": entry}}))
    (server,) = load_config(path, environ={"TOK": "t0k"}).servers
    assert dict(server.headers) == {"Authorization": "Bearer t0k"}
    # what `toolscript trust` shows the server is sent
    assert named_variables(entry) == (("TOK", "headers.Authorization"),)
    (unset,) = load_config(path, environ={}).servers
    assert "TOK" in (unset.unset_error() or "")


@pytest.mark.parametrize(
    ("folder", "name", "text", "client"),
    [
        (".vscode", "mcp.json", '{"inputs": [], "servers": {}}', "vscode"),
        (".gemini", "settings.json", '{"theme": "x", "mcpServers": {}}', "gemini"),
        ("Claude", "claude_desktop_config.json", '{"globalShortcut": ""}', "claude-desktop"),
        (".codex", "config.toml", '[mcp_servers.time]\ncommand = "t"\n', "codex"),
    ],
)
def test_another_clients_own_file_given_as_the_config_is_told_to_be_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, name: str, text: str, client: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    path = tmp_path / folder / name
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert info.value.exit_code == 2
    assert f'{{"import": ["{client}"]}}' in (info.value.hint or "")


def test_a_file_of_no_client_keeps_the_schema_hint(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"  # mcp.json of no known client's folder
    path.write_text('{"theme": 1}')
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert "config schema" in (info.value.hint or "")


def test_a_variable_a_dotenv_file_beside_the_config_sets_is_said_not_to_be_read(
    tmp_path: Path,
) -> None:
    # other tools load .env by themselves: "not set" alone left the user looking at a file
    # that sets it
    path = tmp_path / ".toolscript.json"
    entry = {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}}
    path.write_text(json.dumps({"mcpServers": {"s": entry}}))
    (server,) = load_config(path, environ={}).servers
    assert ".env" not in (server.unset_error() or "")  # no file: nothing said of one
    (tmp_path / ".env").write_text("# keys\nexport API_KEY=abc\nOTHER=1\n")
    (server,) = load_config(path, environ={}).servers
    said = server.unset_error() or ""
    assert "the .env beside it sets API_KEY, but toolscript reads no env file" in said
    assert "abc" not in said


def test_an_opencode_file_is_told_toolscripts_names(tmp_path: Path) -> None:
    entry = {"type": "local", "command": ["npx", "-y", "srv"], "environment": {"A": "b"}}
    message = error_of(tmp_path, {"mcp": {"s": entry}})
    assert "mcp: unknown key 'mcp' (opencode's key: toolscript's is 'mcpServers')" in message
    message = error_of(tmp_path, {"mcpServers": {"s": entry}})
    assert """(opencode's "local" is "stdio" here)""" in message
    assert "(opencode's name: toolscript's is 'env')" in message
    assert '"command": "npx", "args": ["-y", "srv"]' in message
