"""The variables a stdio server that exited while connecting names and is not given."""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.config import ServerConfig, parse_config
from toolscript.upstream.server import _variables_not_passed


def _entry(env: dict[str, str], tmp_path: Path) -> ServerConfig:
    text = json.dumps({"mcpServers": {"weather": {"command": "weather-mcp", "env": env}}})
    (server,) = parse_config(text, tmp_path / ".toolscript.json", {}).servers
    return server


def test_a_key_the_server_asks_for_and_is_not_passed_is_named(tmp_path: Path) -> None:
    said = ["Traceback ...", "RuntimeError: WEATHER_API_KEY is required (see HOME_DIR docs)"]
    assert _variables_not_passed(said, _entry({}, tmp_path)) == ["WEATHER_API_KEY", "HOME_DIR"]


def test_one_passed_inherited_or_no_variable_is_not(tmp_path: Path) -> None:
    server = _entry({"WEATHER_API_KEY": "x"}, tmp_path)
    said = ["error: WEATHER_API_KEY rejected; ERROR in PATH lookup; $MY_VAR", "No such file"]
    assert _variables_not_passed(said, server) == []
