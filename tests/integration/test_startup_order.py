"""A real gateway's start (issue 45): the URL is out before the warm checker's `deno lsp`
starts, and a gateway for one exec builds no search index."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from tests.helpers import GatewayProcess, argv, clean_env, fixture_server
from toolscript.execution.locate import private_gateway_args
from toolscript.gateway.launch import start_gateway

CONFIG = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}


def language_servers(pid: int) -> list[int]:
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if "lsp" in argv(child):
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def test_the_url_comes_before_the_warm_checker(tmp_path: Path) -> None:
    gateway = GatewayProcess(CONFIG, tmp_path, env={"TOOLSCRIPT_HOME": str(tmp_path / "home")})
    try:
        assert language_servers(gateway.process.pid) == []
        deadline = time.monotonic() + 120
        while get(gateway.url + "/health")["checker"]["state"] != "ready":
            assert time.monotonic() < deadline, "the checker never got ready"
            time.sleep(0.2)
        assert language_servers(gateway.process.pid)  # it does start, after the URL
    finally:
        gateway.stop()


def test_an_exec_gateway_builds_no_search_index(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps(CONFIG))
    env = clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home"))
    for search, expected in ((False, 0), (True, 1)):
        args = private_gateway_args("--ephemeral", None, None, search=search)
        launched = start_gateway(*args, cwd=tmp_path, env=env)
        try:
            assert launched.url
            health = get(launched.url + "/health")
            assert health["tools"] > 0 and health["checker"]["state"] == "off"
            hits = get(launched.url + "/search?q=plain+text")
            assert (len(hits["hits"]) > 0) == expected
            time.sleep(1.5)  # past the idle wait: still nothing else started
            assert language_servers(launched.process.pid) == []
        finally:
            launched.stop(20)
