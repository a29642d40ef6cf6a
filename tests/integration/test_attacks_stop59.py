"""Attacks of stop 59 with a real gateway, real Deno and real servers: a script reading
resources by URIs of its own making (each new, each as long as a request) grows the gateway
no more than one read does; the agent's URL ends only the agent's own runs, as it stops
only those (it ended a person's run, and read its calls, through ``/end``); a result
nested past every parser's depth fails its call at once, and the gateway goes on."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.helpers import ROOT, GatewayProcess, fixture_server, running_gateway, toolscript_cli
from toolscript.gateway.guard import agent_url

HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"
MALLOC_FIXED = {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks59")
    # A server answering every read with nothing, and its tool "deep" with a result nested
    # past every parser's depth (sent as text: no encoder writes it).
    deep = ['{"content": [], "structuredContent": {"a": ', "[" * 5000, "]" * 5000, "}}"]
    spec = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in ("deep", "ok")]}
    (directory / "quiet.json").write_text(json.dumps(spec | {"raw": {"deep": deep}}))
    quiet = {"command": sys.executable, "args": [str(HOSTILE), str(directory / "quiet.json")]}
    # keyword search alone: no model loaded beside the floods (none of these tests searches)
    config = {"mcpServers": {"fx": fixture_server(), "quiet": quiet}, "search": {"semantic": False}}
    # glibc's malloc keeps freed memory of a size it saw freed before (its mmap threshold
    # rises to it): fixed thresholds give back what is freed, so the gateway's RSS is what
    # it holds, not what it once held (other systems ignore these variables)
    started = GatewayProcess(config, directory, env=MALLOC_FIXED)
    try:
        yield started
    finally:
        started.stop()


def _resident_mb(gateway: GatewayProcess) -> float:
    return psutil.Process(gateway.process.pid).memory_info().rss / (1024 * 1024)


# Each read names a URI of its own, 256 KB long (100 MB in all); the server has none of them.
READS = 400
FLOOD = """import { resources } from "toolscript";
const pad = "x".repeat(256 * 1024);
let empty = 0;
for (let i = 0; i < READS; i++) {
  if ((await resources.quiet.read(`quiet://${i}/${pad}`)).length === 0) empty++;
}
console.log("read", READS, "empty", empty);
"""


def test_resource_uris_a_script_makes_up_grow_the_gateway_no_more_than_one_read(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    """Before: the gateway kept the policy's decision of every ``resource:URI`` a run read,
    keyed by the URI, for as long as it ran, and each call's name (the URI whole) in the
    calls the last runs keep, counted as a name's few bytes: each run of 400 reads of 256 KB
    URIs kept 100 MB more (900 of 200 KB, 180 MB). A run's token (any script) reaches both."""
    env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    code = FLOOD.replace("READS", str(READS))

    def flood() -> float:
        done = toolscript_cli("exec", "--no-check", code, cwd=gateway.directory, env=env)
        assert done.returncode == 0, done.stderr
        assert f"read {READS} empty {READS}" in done.stdout
        return _resident_mb(gateway)

    first = flood()  # what one such run takes at its height (its reads under way)
    flood()
    grown = flood() - first  # kept, each run would add it again
    assert grown < 30, f"two more runs of {READS} reads of 256 KB URIs kept {grown:.0f} MB more"


def test_the_agents_url_ends_only_the_agents_own_runs(gateway: GatewayProcess) -> None:
    """``POST /runs/ID/stop`` through the agent's URL refused a person's run (403); ``POST
    /runs/ID/end`` ended it all the same (its token refused from then on: the person's
    script failed mid-way) and answered with the run's calls. Held now as ``stop`` is."""
    owners = httpx.post(f"{gateway.url}/runs", json={"script": "y", "pid": 1}, timeout=30)
    assert owners.status_code == 200, owners.text
    owner_run, token = owners.json()["id"], owners.json()["token"]
    run_url = gateway.url.rsplit("/", 1)[0] + f"/{token}"
    agent = httpx.Client(base_url=agent_url(gateway.url) + "/", timeout=30)
    try:
        called = httpx.post(f"{run_url}/tools/fx__plain_text", json={"text": "mine"}, timeout=30)
        assert called.status_code == 200, called.text
        ended = agent.post(f"runs/{owner_run}/end", json={"exit": 0})
        assert ended.status_code == 403, ended.text
        assert "mine" not in ended.text  # no call of the person's run in the refusal
        again = httpx.post(f"{run_url}/tools/fx__plain_text", json={"text": "on"}, timeout=30)
        assert again.status_code == 200, again.text  # the person's run goes on

        own = agent.post("runs", json={"script": "z", "pid": 1})
        assert own.status_code == 200, own.text
        mine = agent.post(f"runs/{own.json()['id']}/end", json={"exit": 0})
        assert mine.status_code == 200, mine.text  # its own, as exec ends them
    finally:
        agent.close()
        httpx.post(f"{gateway.url}/runs/{owner_run}/end", json={"exit": 0}, timeout=30)


def test_a_result_nested_past_every_parsers_depth_fails_its_call_and_nothing_else(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    """Held (guarded here, nowhere else): 5,000 nested arrays in a server's result (10 KB,
    no size limit near) make msgspec raise RecursionError, not its DecodeError; the line's
    reader ends, so the server's connection drops and its call fails at once (as for a
    message past 128 MB) rather than waiting for its timeout; the gateway and the server's
    next call go on."""
    env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    code = (
        'import { tools } from "toolscript";\n'
        "try { await tools.quiet.deep(); console.log('deep answered'); }\n"
        "catch (e) { console.log('deep failed', (e as Error).name); }\n"
        "console.log(await tools.quiet.ok());\n"
    )
    done = toolscript_cli("exec", "--no-check", code, cwd=gateway.directory, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["deep failed ToolError", "ok"]
    assert gateway.health()["status"] in ("ok", "degraded")


def test_a_server_named_past_a_file_names_length_leaves_every_server_working(
    tmp_path: Path, toolscript_home: Path
) -> None:
    """Before: a server's name became its artifacts' file names whole; one of 300
    characters (the config allows any length) failed every build (ENAMETOOLONG): no
    module, and every exec of every server failed with "the gateway answered '' as its
    module's hash". Its files now keep 100 characters of it and a hash of the whole."""
    long_name = "B" * 300
    config = {"mcpServers": {"fx": fixture_server(), long_name: fixture_server()}}
    code = (
        'import { tools } from "toolscript";\n'
        'console.log(await tools.fx.plainText({ text: "short" }));\n'
        f'console.log(await tools["{long_name.lower()}"].plainText({{ text: "long" }}));\n'
    )
    with running_gateway(config, tmp_path) as gateway:
        env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
        done = toolscript_cli("exec", code, cwd=gateway.directory, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["short", "long"]
