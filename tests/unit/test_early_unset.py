"""A stdio server whose entry names a ${VAR} that is not set is never started: not by the
gateway's connection, nor spawned ahead by `gateway start` (with the token empty)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from toolscript.config import load_config
from toolscript.upstream.early import discard, spawn_early


def test_a_server_naming_an_unset_variable_is_not_spawned_ahead(tmp_path: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    entry = {"command": sleeper[0], "args": sleeper[1:]}
    config = tmp_path / ".toolscript.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "needs_token": entry | {"env": {"API_TOKEN": "${API_TOKEN_NOT_SET}"}},
                    "plain": entry,
                }
            }
        )
    )
    loaded = load_config(config, environ={})
    spawned = spawn_early(loaded.servers)
    try:
        assert sorted(spawned) == ["plain"]
    finally:
        discard(spawned)
