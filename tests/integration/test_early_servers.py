"""Issue 45: `gateway start` spawns its stdio servers before its own imports, so the two
overlap; the first build runs after the URL, and the routes wait for it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import psutil

from tests.helpers import FIXTURE_SERVER, GatewayProcess, clean_env, fixture_server, wait_for_exit
from toolscript.config import ServerConfig
from toolscript.upstream.base import ServerState
from toolscript.upstream.early import discard, spawn_early
from toolscript.upstream.server import UpstreamServer

# `gateway start` in a process whose spawn_early records what was imported when it was
# called (and the processes it spawned), then lets the start go on.
PROBE = """
import json, sys
import toolscript.upstream.early as early
from toolscript.cli.entry import main

real = early.spawn_early

def probe(servers):
    spawned = real(servers)
    heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("mcp", "litestar", "pydantic"))
    pids = [server.process.pid for server in spawned.values()]
    sys.stderr.write("PROBE " + json.dumps({"heavy": heavy, "pids": pids}) + "\\n")
    sys.stderr.flush()
    return spawned

early.spawn_early = probe
sys.argv = ["toolscript", "gateway", "start", "--port", "0"]
main()
"""


def test_gateway_start_spawns_its_servers_before_its_imports(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}})
    )
    env = clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home"), TOOLSCRIPT_LOG_LEVEL="INFO")
    process = subprocess.Popen(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http"), process.stderr.read()
        probe = next(line for line in process.stderr if line.startswith("PROBE "))
        found = json.loads(probe.removeprefix("PROBE "))
        assert found["heavy"] == []  # neither the MCP SDK nor Litestar was imported yet
        assert len(found["pids"]) == 1
        with httpx.Client(base_url=url + "/", timeout=30) as client:
            health = client.get("health").json()
            assert health["servers"]["fx"]["state"] == "connected"
            assert client.post("tools/fx__plain_text", json={}).status_code == 200
        # the process spawned early is the one serving: no second spawn (the warm checker,
        # started once the gateway was idle a second, is no server)
        children = [
            c.pid
            for c in psutil.Process(process.pid).children()
            if c.is_running() and "lsp" not in c.cmdline()
        ]
        assert children == found["pids"]
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_the_url_comes_before_the_first_build_and_routes_wait_for_it(tmp_path: Path) -> None:
    config = {"mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE_SERVER)]}}}
    config["search"] = {"semantic": False}
    gateway = GatewayProcess(config, tmp_path, env={"TOOLSCRIPT_HOME": str(tmp_path / "home")})
    try:
        module = gateway.client.get("runtime/tools.ts")  # sent at once: waits for the build
        assert module.status_code == 200 and "fx" in module.text
        gateway.wait_for_log("artifacts:")
        log = gateway.log
        assert log.index("listening on") < log.index("artifacts:")
    finally:
        gateway.stop()


def fx_entry(**extra: object) -> ServerConfig:
    return ServerConfig(
        name="fx", transport="stdio", command=sys.executable, args=(str(FIXTURE_SERVER),), **extra
    )  # type: ignore[arg-type]


def test_a_server_takes_its_early_process_and_stops_it() -> None:
    entry = fx_entry()
    early = spawn_early([entry])
    pid = early["fx"].process.pid
    server = UpstreamServer(entry, early=early.pop("fx"))

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run)
            await server.first_attempt_done.wait()
            assert server.state == ServerState.CONNECTED
            assert server.server_pid == pid
            result = await server.call_tool("plain_text", {})
            assert result["isError"] is False
            await server.stop()

    anyio.run(main)
    wait_for_exit(pid)


def test_an_early_process_of_another_entry_is_stopped_not_used(tmp_path: Path) -> None:
    early = spawn_early([fx_entry()])
    stale = early.pop("fx")
    changed = fx_entry(cwd=tmp_path)  # the entry changed after the spawn
    server = UpstreamServer(changed, early=stale)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run)
            await server.first_attempt_done.wait()
            assert server.state == ServerState.CONNECTED
            assert server.server_pid != stale.process.pid
            await server.stop()

    anyio.run(main)
    wait_for_exit(stale.process.pid)


def test_early_processes_nobody_took_are_stopped() -> None:
    early = spawn_early([fx_entry(), fx_entry(disabled=True)])
    assert list(early) == ["fx"]  # a disabled server is not spawned
    pid = early["fx"].process.pid
    discard(early)
    assert early == {}
    wait_for_exit(pid)


def test_a_server_stopped_before_it_connected_stops_its_early_process() -> None:
    early = spawn_early([fx_entry()])
    taken = early.pop("fx")
    server = UpstreamServer(fx_entry(), early=taken)
    anyio.run(server.stop)
    wait_for_exit(taken.process.pid)


def test_a_gateway_for_one_script_starts_only_the_servers_it_names(tmp_path: Path) -> None:
    from toolscript.execution.locate import private_gateway_args, script_namespaces
    from toolscript.gateway.launch import start_gateway

    config = {"mcpServers": {"fx": fixture_server(), "other": fixture_server()}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    code = 'import { tools } from "toolscript";\nreturn await tools.fx.plainText({});\n'
    needs = script_namespaces(code)
    args = private_gateway_args("--ephemeral", None, None, search=False, needs=needs)
    launched = start_gateway(*args, cwd=tmp_path, env=clean_env(TOOLSCRIPT_HOME=str(tmp_path)))
    try:
        assert launched.url
        with httpx.Client(base_url=launched.url + "/", timeout=60) as client:
            servers = client.get("health").json()["servers"]
            assert servers["fx"]["state"] == "connected"
            assert servers["other"]["attempts"] == 0  # not started with the script's
            assert len(psutil.Process(launched.process.pid).children()) == 1
            answer = client.post("tools/other__plain_text", json={})  # its first call
            assert answer.status_code == 200, answer.text
            assert client.get("health").json()["servers"]["other"]["state"] == "connected"
    finally:
        launched.stop(20)
