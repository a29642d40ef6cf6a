"""A server entry with a key only another kind of server reads is refused at that key: the
value never reached the server, and nothing said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.config import parse_config
from toolscript.errors import ConfigError

PATH = Path("/p/.toolscript.json")


def refusal(entry: dict[str, object]) -> ConfigError:
    text = json.dumps({"mcpServers": {"api": entry}}, indent=2)
    with pytest.raises(ConfigError) as raised:
        parse_config(text, PATH, {"TOKEN": "t"})
    return raised.value


@pytest.mark.parametrize(
    "entry",
    [
        {"url": "https://x.example/mcp", "env": {"API_KEY": "${TOKEN}"}},
        {"type": "sse", "url": "https://x.example/sse", "env": {"API_KEY": "k"}},
    ],
)
def test_env_of_a_url_server_is_refused_naming_headers(entry: dict[str, object]) -> None:
    error = refusal(entry)
    assert "mcpServers.api.env: 'env' is for stdio servers" in error.message
    assert error.message.startswith(f"{PATH}:")
    assert error.hint is not None and '"headers"' in error.hint
    assert error.exit_code == 2


def test_args_of_a_url_server_are_refused() -> None:
    assert (
        "mcpServers.api.args:" in refusal({"url": "https://x.example/mcp", "args": ["-v"]}).message
    )


def test_headers_of_a_stdio_server_are_refused_naming_env() -> None:
    error = refusal({"command": "server", "headers": {"Authorization": "Bearer ${TOKEN}"}})
    assert "mcpServers.api.headers: 'headers' is for http and sse servers" in error.message
    assert error.hint is not None and '"env"' in error.hint


def test_an_empty_key_of_another_transport_passes() -> None:
    text = json.dumps({"mcpServers": {"api": {"url": "https://x.example/mcp", "env": {}}}})
    (server,) = parse_config(text, PATH, {}).servers
    assert server.transport == "http"
