"""A tool's policy decision is kept until the config or the server's tools change. Decided
in a worker thread (a server's tools and get-types are rendered off the loop) while a reload
replaced the config, the old config's decision was kept past the reload: the tool stayed
`allow` after the policy said `ask` for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolscript.config import Config, SearchConfig, parse_config
from toolscript.gateway.core import Gateway


def _text(ask: str) -> str:
    return json.dumps({"mcpServers": {"s": {"command": "unused"}}, "policy": {"ask": ask}})


def test_a_decision_made_while_the_config_is_replaced_is_not_kept_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ".toolscript.json"
    path.write_text(_text("destructive"))
    config = parse_config(_text("destructive"), path, {})
    gateway = Gateway(
        config, cache=tmp_path / "cache", search=SearchConfig(semantic=False, cache=False)
    )
    gateway.upstreams["s"].tools = {"t": {"name": "t", "inputSchema": {"type": "object"}}}
    real = Config.decision
    reloaded: list[bool] = []

    def decided_as_the_config_changes(self: Config, *args: Any) -> Any:
        found = real(self, *args)
        if not reloaded:  # the reload lands while this (worker) thread decides
            reloaded.append(True)
            path.write_text(_text("writes"))
            anyio.run(gateway.reload_config)
        return found

    monkeypatch.setattr(Config, "decision", decided_as_the_config_changes)
    assert gateway.decision("s", "t") == "allow"  # the old config's, decided before
    assert gateway.config.asking == "writes"
    assert gateway.decision("s", "t") == "ask"
