"""Mend 16's leftovers, on one real gateway (the fixture server, a folder of tool files, the
real Deno and real SQLite): the learned result types a build types the module with are in
their file before the module is served (a standalone doit reads that file); a tool file
calling os._exit is warned of once; and (gateways of their own) `gateway start` over a
stale state file says so in one line and starts."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, fixture_server, gateway_cli, project_gateway, wait_until
from toolscript.codegen.shapes import INFERRED_KEY
from toolscript.gateway.state import gateway_state_file, read_gateway_state, write_gateway_state
from toolscript.pipeline.sources import stored_result_types
from toolscript.plumbing.paths import project_state_dir
from toolscript.plumbing.processes import stop_process

GREET = '''def hello(name: str) -> str:
    """Greet someone by name."""
    return "hello " + name
'''


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("leftovers16")
    servers = {"fx": fixture_server()}
    with project_gateway(
        directory, servers, "--no-warm-checker", tools={"greet.py": GREET}
    ) as running:
        yield running


def test_a_learned_type_served_is_in_the_learned_types_file(gateway: GatewayProcess) -> None:
    """A build right after a call (the server's tool list changed) typed the module with
    what the call taught, while the file standalone doit reads it from was saved up to a
    second later: a doit then fetched the server again and wrote the module without it.
    Each of three calls changes the type's label (1, 2, 3+ results); once the module
    serves it, the file holds it, no wait."""
    for step, label in enumerate(["1", "2", "3+"]):
        script = (
            'import { tools } from "toolscript";'
            " const r = await tools.fx.jsonText({ count: 2 });"
            f' await tools.fx.addTool({{ name: "extra_{step}" }}); return r'
        )
        ran = gateway_cli(gateway, "exec", script)
        assert ran.returncode == 0, ran.stderr
        served = f"inferred from {label} result"
        wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda text, served=served, step=step: served in text and f"extra_{step}" in text,
            60,
            f"the module with jsonText's type from {label} results",
        )
        stored = stored_result_types(project_state_dir(gateway.directory))
        assert stored["fx__json_text"][INFERRED_KEY] == label, stored.get("fx__json_text")


ENDER = '''import os


def stop(code: int) -> str:
    """Stop at once."""
    os._exit(code)
'''


def test_a_tool_file_that_ends_its_process_is_warned_of_once(gateway: GatewayProcess) -> None:
    """`os._exit` in an internal tool file ends the gateway (nothing catches it): the
    gateway says so once in its log, before it imports the file, and `gateway status`
    shows it with the file's tools."""
    added = gateway.directory / "tools" / "ender.py"
    added.write_text(ENDER)
    try:
        health = gateway.wait_for_health(
            lambda h: h["servers"].get("ender", {}).get("state") == "connected", 60, "ender.py"
        )
        warning = "ender.py:6: calls os._exit(), which ends the gateway itself"
        assert any(warning in w for w in health["servers"]["ender"]["warnings"]), health
        assert gateway.log.count(warning) == 1, gateway.log
        status = gateway_cli(gateway, "gateway", "status")
        assert warning in status.stdout + status.stderr
    finally:
        added.unlink()
    gateway.wait_for_health(lambda h: "ender" not in h["servers"], 60, "ender.py gone")


@pytest.mark.parametrize("kind", ["another program's pid", "truncated"])
def test_gateway_start_replaces_a_stale_state_file_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A state file naming a live program that is no gateway (written after it started, so
    its start time passed for the writer's): `gateway start` warned "another gateway (pid
    N) already serves this project ... `kill N`", and put the file back when it stopped.
    The start holds the project's lock, which every gateway holds: the file is stale."""
    home = str(tmp_path / "home")
    monkeypatch.setenv("TOOLSCRIPT_HOME", home)
    cache = tmp_path / ".toolscript"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        if kind == "truncated":
            gateway_state_file(cache).parent.mkdir(parents=True, exist_ok=True)
            gateway_state_file(cache).write_text('{"url": "http://127.0.0.1:9/t", "pid": 4')
            said = "is not JSON"
        else:
            state = {"url": "http://127.0.0.1:9/t", "pid": other.pid, "port": 9}
            write_gateway_state(cache, {**state, "started": time.time()})
            said = f"pid {other.pid}, which it names, is no gateway (it does not"
        env = {"TOOLSCRIPT_HOME": home}
        with project_gateway(tmp_path, {}, "--no-warm-checker", env=env) as started:
            line = "replacing the project's stale gateway state file"
            assert started.log.count(line) == 1 and said in started.log, started.log
            assert "another gateway" not in started.log and "kill" not in started.log
            assert (read_gateway_state(cache) or {}).get("pid") == started.process.pid
        assert not gateway_state_file(cache).exists()  # not put back
        assert other.poll() is None  # and the other program left alone
    finally:
        stop_process(other, 10)
