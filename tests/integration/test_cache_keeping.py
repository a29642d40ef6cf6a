"""A real gateway keeps the user's cache bounded in its background (store/cacheprune.py):
a light model folder of a model directory that is gone goes, its own module stays however
old its file is, and an unused module of other tools goes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.helpers import GatewayProcess, fixture_server, wait_until
from toolscript.store.cacheprune import STAMP

CONFIG = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
LONG_AGO = time.time() - 90 * 86400


def test_a_gateway_prunes_a_stale_model_folder_and_keeps_its_own_module(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"TOOLSCRIPT_HOME": str(home)}
    # A first gateway: the module of these tools, as exec keeps it in the cache.
    first = GatewayProcess(CONFIG, tmp_path, env=env)
    try:
        digest = first.client.get("runtime/hash").json()["hash"]
        text = first.client.get("runtime/tools.ts").text
    finally:
        first.stop()
    own = home / "modules" / f"{digest}.ts"
    own.parent.mkdir(parents=True, exist_ok=True)
    own.write_text(text)
    other = home / "modules" / "0123456789abcdef.ts"  # other tools', unused for 90 days
    other.write_text("export {}\n")
    stale = home / "models" / "all-MiniLM-L6-v2-00000000deadbeef"
    stale.mkdir(parents=True)
    (stale / "light.json").write_text(
        json.dumps({"format": 1, "directory": str(tmp_path / "deleted-venv"), "files": []})
    )
    graph = stale.with_name(f"{stale.name}.queries-1.onnx")
    graph.write_bytes(b"graph")
    for path in (own, other, stale / "light.json", stale, graph):
        os.utime(path, (LONG_AGO, LONG_AGO))
    (home / STAMP).unlink(missing_ok=True)  # (the first gateway may have pruned already)

    gateway = GatewayProcess(CONFIG, tmp_path, env=env)
    try:
        wait_until(
            lambda: stale.exists() or graph.exists(),
            lambda there: not there,
            90,
            "the stale model folder's removal",
            log=lambda: gateway.log,
        )
        assert own.read_text() == text
        assert not other.exists()
        assert (home / STAMP).exists()
        assert gateway.health()["tools"] > 0  # still serving
    finally:
        gateway.stop()
