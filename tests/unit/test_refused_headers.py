"""What a server that answers 401 to the headers of its entry is said to need."""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.config import ServerConfig, parse_config
from toolscript.upstream.server import headers_refused_message


def _server(headers: dict[str, str], tmp_path: Path) -> ServerConfig:
    entry = {"url": "https://api.example.com/mcp", "headers": headers}
    text = json.dumps({"mcpServers": {"api": entry}})
    (server,) = parse_config(text, tmp_path / ".toolscript.json", {"API_TOKEN": "wrong"}).servers
    return server


def test_a_header_from_a_variable_says_the_gateway_keeps_the_value_it_started_with(
    tmp_path: Path,
) -> None:
    # A user who exported the right token after `gateway start` was told to "check the
    # value" and found it right: the gateway still sent the one it started with.
    said = headers_refused_message(_server({"Authorization": "Bearer ${API_TOKEN}"}, tmp_path))
    assert "check the value of headers.Authorization in the config (and the value of" in said
    assert (
        "${API_TOKEN} the gateway was started with: a new value reaches it when it starts" in said
    )
    assert "wrong" not in said  # the value itself is never said


def test_a_written_header_names_only_itself(tmp_path: Path) -> None:
    said = headers_refused_message(_server({"X-Api-Key": "abc"}, tmp_path))
    assert "check the value of headers.X-Api-Key in the config; if it uses OAuth" in said
    assert "started with" not in said and "abc" not in said
