"""Scenarios of the specification (the shared spec's 000, 002 and 004) that no other test
asserted; each test's docstring names its spec file and scenario. tests/SPEC_COVERAGE.md maps
every scenario to the tests that assert it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.helpers import (
    GatewayProcess,
    clean_env,
    deno_bin,
    deno_env,
    fixture_server,
    free_port,
    running_gateway,
    toolscript_cli,
    wait_for_exit,
)
from toolscript.gateway.guard import agent_url
from toolscript.upstream.local import WORKER


def exec_script(
    code: str, *, cwd: Path, home: Path, url: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"TOOLSCRIPT_HOME": str(home)}
    if url is not None:
        env["TOOLSCRIPT_GATEWAY_URL"] = url
    return toolscript_cli("exec", code, cwd=cwd, env=env)


SEEN = "return { globals: Object.getOwnPropertyNames(globalThis).sort(), args: Deno.args };"


def test_no_metadata_is_injected_into_the_script(toolscript_home: Path, tmp_path: Path) -> None:
    """000 "No metadata injection": a script sees the globals a plain ``deno run`` gives and
    no argument (of the environment, only the gateway URL: test_exec.py)."""
    plain_script = tmp_path / "plain.ts"
    plain_script.write_text(f"console.log(JSON.stringify((() => {{ {SEEN} }})()));")
    plain = subprocess.run(
        [deno_bin(), "run", "--quiet", str(plain_script)],
        env=deno_env(tmp_path / "deno"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plain.returncode == 0, plain.stderr
    ours = exec_script(SEEN, cwd=tmp_path, home=toolscript_home)
    assert ours.returncode == 0, ours.stderr
    assert json.loads(ours.stdout) == json.loads(plain.stdout)
    assert json.loads(ours.stdout)["args"] == []


LIST_AND_CALL = (
    'import { tools } from "toolscript";\n'
    "const servers = Object.keys(tools);\n"
    "const t = tools as unknown as Record<string, Record<string, (p: object) => Promise<unknown>>>;\n"
    'return { servers, fx: servers.includes("fx") ? await t.fx.plainText({ text: "fresh" }) : null };'
)


def test_a_restarted_gateway_with_other_tools_gives_scripts_its_fresh_module(
    toolscript_home: Path, tmp_path: Path
) -> None:
    """000 "Ensure fresh types on gateway restart" (and "Cache busting timestamp"): exec keeps
    the module it was served, yet after a restart whose tools differ the next script gets
    the new module, not the kept one."""
    with running_gateway({}, tmp_path) as before:
        first = exec_script(LIST_AND_CALL, cwd=tmp_path, home=toolscript_home, url=before.url)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"servers": [], "fx": None}
    with running_gateway({"mcpServers": {"fx": fixture_server()}}, tmp_path) as after:
        second = exec_script(LIST_AND_CALL, cwd=tmp_path, home=toolscript_home, url=after.url)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == {"servers": ["fx"], "fx": "fresh"}


def test_gateway_start_binds_the_port_it_is_given(tmp_path: Path) -> None:
    """002 "Port parameter" and "Start gateway manually": ``--port N`` binds N and the URL it
    prints names it; ``gateway status`` then says it runs at that URL."""
    port = free_port()
    with running_gateway({}, tmp_path, "--port", str(port)) as gateway:
        assert gateway.url.startswith(f"http://127.0.0.1:{port}/")
        assert gateway.client.get("health").json()["status"] == "ok"
        status = toolscript_cli("gateway", "status", "--json", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["url"] == agent_url(gateway.url)  # (its address)


def test_get_types_without_a_config_says_no_server_is_configured(
    toolscript_home: Path, tmp_path: Path
) -> None:
    """002 "No config file for types": ``get-types github`` with no config is a server not
    found among zero configured servers, in words and in ``--json``."""
    env = {"TOOLSCRIPT_HOME": str(toolscript_home)}
    text = toolscript_cli("get-types", "github", cwd=tmp_path, env=env)
    assert text.returncode == 1
    assert "server not found: 'github' (zero servers configured)" in text.stderr
    as_json = toolscript_cli("get-types", "github", "--json", cwd=tmp_path, env=env)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["error"] == "server_not_found"


TOOL_FILE = '''import logging


def add(a: int, b: int, context=None) -> dict:
    """Add two numbers; say what config and secrets the call brought."""
    context.log.info("adding %s and %s", a, b)
    return {"sum": a + b, "config": dict(context.config), "secrets": sorted(context.secrets)}


def fail(message: str) -> str:
    """Always raises."""
    raise ValueError(message)
'''


def test_the_worker_speaks_the_specs_json_protocol(tmp_path: Path) -> None:
    """004 "Function call request", "Successful response", "Error response" and "Structured
    logging": the worker program answers one JSON line per request with ``result`` and
    ``error``, takes config and secrets with each request, and logs JSON lines on stderr."""
    tool_file = tmp_path / "adder.py"
    tool_file.write_text(TOOL_FILE)
    requests = [
        {
            "id": 1,
            "function": "add",
            "kwargs": {"a": 2, "b": 3},
            "config": {"unit": "m"},
            "secrets": {"KEY": "k"},
        },
        {"id": 2, "function": "add", "kwargs": {"a": 1, "b": 1}, "config": {}, "secrets": {}},
        {"id": 3, "function": "fail", "kwargs": {"message": "no"}, "config": {}, "secrets": {}},
    ]
    done = subprocess.run(
        [sys.executable, str(WORKER), str(tool_file)],
        input="".join(json.dumps(request) + "\n" for request in requests),
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    ready, *replies = (json.loads(line) for line in done.stdout.splitlines())
    assert ready["ready"] is True
    by_id = {reply.pop("id"): reply for reply in replies}
    assert by_id == {
        1: {"result": {"sum": 5, "config": {"unit": "m"}, "secrets": ["KEY"]}, "error": None},
        2: {"result": {"sum": 2, "config": {}, "secrets": []}, "error": None},
        3: {"result": None, "error": "ValueError: no"},
    }
    logs = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert {"level": "INFO", "message": "adding 2 and 3", "logger": "tool.add"} in [
        {key: record.get(key) for key in ("level", "message", "logger")} for record in logs
    ]


EXTERNAL_TOOL = '''# /// script
# dependencies = []
# ///
import os


def worker_pid() -> int:
    """The worker's process id."""
    return os.getpid()
'''
IDLE_TIMEOUT = 4.0


def _is_worker(process: psutil.Process) -> bool:
    """A worker (or the ``uv run`` that starts it), not the short-lived describing process."""
    try:
        command = process.cmdline()
    except psutil.Error:
        return False
    return str(WORKER) in command and "--describe" not in command


def test_calls_keep_a_worker_alive_past_its_idle_timeout(tmp_path: Path) -> None:
    """004 "Worker startup on first call", "Session refresh on call" and "Worker idle
    timeout": no worker runs before the first call, which starts one under ``uv run``; each
    call resets its idle timer, so calls closer together than ``idleTimeout`` keep that one
    worker for longer than it; left idle, it stops."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "clock.py").write_text(EXTERNAL_TOOL)
    config = {"localTools": {"dir": "tools", "idleTimeout": IDLE_TIMEOUT}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        assert not [p for p in gateway.descendants() if _is_worker(p)]
        first = gateway.call("clock__worker_pid").json()
        starter = psutil.Process(first).parent()
        assert starter is not None and starter.cmdline()[1:2] == ["run"]  # `uv run`
        assert Path(starter.cmdline()[0]).name.startswith("uv")
        started = time.monotonic()
        while time.monotonic() - started < 1.5 * IDLE_TIMEOUT:
            time.sleep(IDLE_TIMEOUT / 4)
            assert gateway.call("clock__worker_pid").json() == first
        assert psutil.Process(first).is_running()
        wait_for_exit(first, 4 * IDLE_TIMEOUT)
    finally:
        assert gateway.stop() == []
