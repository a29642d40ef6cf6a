"""Local Python tools: internal (in the gateway) and external (persistent `uv run` workers)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    argv,
    clean_env,
    python_bin,
    running_gateway,
    toolscript_cli,
    wait_for_exit,
)

INTERNAL = '''"""Tools that run inside the gateway."""
import os


def count_servers(context) -> dict:
    """How many servers and tools the gateway has."""
    return {"servers": len(context.gateway.servers()), "tools": len(context.gateway.tools())}


def shout(text: str, times: int = 1) -> str:
    """Upper-case the text."""
    print("shouting from an internal tool")
    return " ".join([text.upper()] * times)


def explode(message: str) -> str:
    """Always raises."""
    raise RuntimeError(message)


def gateway_pid() -> int:
    """The process the tool runs in."""
    return os.getpid()


def _private() -> int:
    return 1
'''

EXTERNAL = '''# /// script
# requires-python = ">=3.10"
# dependencies = ["humanize"]
# ///
"""Tools in a worker, with a dependency from PyPI."""
import logging
import os
import time

import humanize


def big_number(n: int) -> str:
    """Format a number with commas."""
    print("a print must not corrupt the protocol")
    logging.getLogger("pretty").info("formatting %s", n)
    return humanize.intcomma(n)


def worker_pid() -> int:
    """The worker's process id."""
    return os.getpid()


def slow_echo(value: int, delay: float = 0.2) -> int:
    """Answer with the value after a delay."""
    time.sleep(delay)
    return value


def my_secrets(context) -> dict:
    """Which secrets and config this file's tools receive, and the worker's environment."""
    return {"secrets": dict(context.secrets), "config": dict(context.config), "env": sorted(os.environ)}


def fail() -> str:
    """Raises with a secret in the message."""
    raise ValueError("bad key " + os.environ.get("NOPE", "") + "s3cr3t-api-key-42")
'''

OTHER_EXTERNAL = '''# /// script
# dependencies = []
# ///
def other_secrets(context) -> dict:
    """This file's secrets."""
    return dict(context.secrets)
'''

MALFORMED = '''# /// script
# dependencies = ["unterminated
# ///
def still_works() -> str:
    """A tool in a file whose header is broken."""
    return "internal after all"
'''

FUTURE_PYTHON = '''# /// script
# requires-python = ">=3.99"
# dependencies = []
# ///
def from_the_future() -> str:
    """Needs a Python no one has."""
    return "ran anyway"
'''

BROKEN_DEPENDENCY = '''# /// script
# dependencies = ["this-package-does-not-exist-toolscript-test"]
# ///
def never() -> str:
    """Never loads."""
    return "no"
'''


def project(tmp_path: Path, idle: float = 600) -> dict:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "notes.py").write_text(INTERNAL)
    (tools / "pretty.py").write_text(EXTERNAL)
    (tools / "other.py").write_text(OTHER_EXTERNAL)
    (tools / "broken_header.py").write_text(MALFORMED)
    (tools / "future.py").write_text(FUTURE_PYTHON)
    (tools / "_helpers.py").write_text("def hidden() -> int:\n    return 1\n")
    return {
        "mcpServers": {"time": {"command": python_bin("mcp-server-time")}},
        "localTools": {
            "dir": "tools",
            "idleTimeout": idle,
            "timeout": 30,
            "files": {
                "pretty": {
                    "config": {"unit": "chars"},
                    "secrets": {"API_KEY": "s3cr3t-api-key-42"},
                },
            },
        },
    }


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("local")
    with running_gateway(project(directory), directory) as started:
        yield started


def value(gateway: GatewayProcess, tool: str, arguments: dict | None = None) -> object:
    response = gateway.call(tool, arguments)
    assert response.status_code == 200, response.text
    return response.json()


def test_local_files_are_servers(gateway: GatewayProcess) -> None:
    servers = {s["name"]: s for s in gateway.client.get("servers").json()}
    assert servers["notes"]["kind"] == "internal"
    assert servers["pretty"]["kind"] == "external"
    assert servers["broken_header"]["kind"] == "internal"
    assert "_helpers" not in servers
    names = [t["name"] for t in gateway.client.get("servers/notes/tools").json()]
    assert sorted(names) == ["count_servers", "explode", "gateway_pid", "shout"]
    shout = next(
        t for t in gateway.client.get("servers/notes/tools").json() if t["name"] == "shout"
    )
    assert shout["description"] == "Upper-case the text."
    assert shout["inputSchema"]["required"] == ["text"]
    assert shout["outputSchema"] == {"type": "string"}


def test_internal_tool_runs_in_the_gateway_with_access(gateway: GatewayProcess) -> None:
    assert value(gateway, "notes__gateway_pid") == gateway.process.pid
    counts = value(gateway, "notes__count_servers")
    assert counts["servers"] == 6
    assert counts["tools"] >= 10
    assert value(gateway, "notes__shout", {"text": "hi", "times": 2}) == "HI HI"
    gateway.wait_for_log("shouting from an internal tool", timeout=5)  # its print() is logged


def test_external_tool_with_a_pypi_dependency(gateway: GatewayProcess) -> None:
    assert value(gateway, "pretty__big_number", {"n": 1234567}) == "1,234,567"
    # the worker's print and its log record reach the gateway's log on their own schedules
    gateway.wait_for_log(
        "a print must not corrupt the protocol", "pretty [pretty]: formatting 1234567", timeout=10
    )


def test_worker_is_reused(gateway: GatewayProcess) -> None:
    first = value(gateway, "pretty__worker_pid")
    second = value(gateway, "pretty__worker_pid")
    assert first == second != gateway.process.pid
    assert psutil.Process(first).is_running()


def test_twenty_concurrent_calls_to_one_worker(gateway: GatewayProcess) -> None:
    with ThreadPoolExecutor(20) as pool:
        results = list(
            pool.map(lambda i: value(gateway, "pretty__slow_echo", {"value": i}), range(20))
        )
    assert results == list(range(20))


def test_tool_errors(gateway: GatewayProcess) -> None:
    internal = gateway.call("notes__explode", {"message": "kaboom"})
    assert internal.status_code == 422
    assert "RuntimeError: kaboom" in internal.json()["message"]
    external = gateway.call("pretty__fail")
    assert external.status_code == 422
    assert "ValueError: bad key ***" in external.json()["message"]
    assert "s3cr3t-api-key-42" not in external.text + gateway.log
    invalid = gateway.call("notes__shout", {"times": 2})
    assert invalid.status_code == 400


def test_secrets_reach_only_their_file(gateway: GatewayProcess) -> None:
    mine = value(gateway, "pretty__my_secrets")
    assert mine["secrets"] == {"API_KEY": "s3cr3t-api-key-42"}
    assert mine["config"] == {"unit": "chars"}
    assert "API_KEY" not in mine["env"]
    assert "TOOLSCRIPT_GATEWAY_URL" not in mine["env"]
    assert value(gateway, "other__other_secrets") == {}


def test_malformed_header_is_internal_with_a_warning(gateway: GatewayProcess) -> None:
    assert value(gateway, "broken_header__still_works") == "internal after all"
    assert "broken_header.py:1: malformed PEP 723 header" in gateway.log


def test_a_file_whose_requires_python_is_not_met_fails_alone(gateway: GatewayProcess) -> None:
    # The worker runs on the gateway's Python, named to uv by path: uv never checks the
    # file's requires-python, so the gateway does, and fails this file only.
    found = ".".join(str(part) for part in sys.version_info[:3])
    status = gateway.client.get("health").json()["servers"]["future"]
    assert status["state"] == "failed"
    for words in ("future.py", ">=3.99", found, "requires-python"):
        assert words in status["error"]
    call = gateway.call("future__from_the_future")
    assert call.status_code == 503
    assert ">=3.99" in call.text and found in call.text
    shown = toolscript_cli("gateway", "status", cwd=gateway.directory)
    assert ">=3.99" in shown.stdout
    assert value(gateway, "pretty__big_number", {"n": 1000}) == "1,000"


def test_crashed_worker_is_replaced(gateway: GatewayProcess) -> None:
    pid = value(gateway, "pretty__worker_pid")
    psutil.Process(pid).kill()
    wait_for_exit(pid)
    replaced = value(gateway, "pretty__worker_pid")
    assert replaced != pid


def test_a_worker_whose_python_died_is_replaced_before_uv_exits(gateway: GatewayProcess) -> None:
    # The worker's Python is `uv run`'s child: killed, it is dead before uv exits and the
    # gateway hears of it. A call in that moment (here held open: uv is stopped) is served
    # by a new worker, not written to the dead one (503).
    pid = value(gateway, "pretty__worker_pid")
    assert isinstance(pid, int)
    wrapper = psutil.Process(pid).parent()
    assert wrapper is not None and wrapper.pid != gateway.process.pid
    wrapper.suspend()
    try:
        psutil.Process(pid).kill()
        wait_for_exit(pid)  # a zombie its stopped parent does not reap
        replaced = value(gateway, "pretty__worker_pid")
        assert replaced != pid
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            wrapper.resume()


def test_exec_calls_local_tools(gateway: GatewayProcess, tmp_path: Path) -> None:
    code = (
        'import { tools } from "toolscript";\n'
        "const big: string = await tools.pretty.bigNumber({ n: 1000 });\n"
        'return [big, await tools.notes.shout({ text: "ok" })];'
    )
    result = subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", code],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url, TOOLSCRIPT_HOME=str(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["1,000", "OK"]


def test_idle_timeout_and_shutdown(tmp_path: Path) -> None:
    gateway = GatewayProcess(project(tmp_path, idle=1.5), tmp_path)
    try:
        pid = value(gateway, "pretty__worker_pid")
        assert value(gateway, "pretty__worker_pid") == pid
        wait_for_exit(pid, 15)  # the idle worker is stopped
        fresh = value(gateway, "pretty__worker_pid")
        assert fresh != pid
        assert any(p.pid == fresh for p in gateway.descendants())
    finally:
        survivors = gateway.stop()
    assert survivors == []


def test_dependency_that_cannot_install(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "broken.py").write_text(BROKEN_DEPENDENCY)
    config = {"localTools": {"dir": "tools"}}
    with running_gateway(config, tmp_path) as gateway:
        status = gateway.client.get("health").json()["servers"]["broken"]
        assert status["state"] == "failed"
        assert "this-package-does-not-exist-toolscript-test" in status["error"]
        call = gateway.call("broken__never")
        assert call.status_code == 503


HUGE_AND_SLOW = '''# /// script
# dependencies = []
# ///
import os
import time


def huge(megabytes: int) -> str:
    """A reply of this many megabytes."""
    return "x" * (megabytes * 1024 * 1024)


def small() -> str:
    """A small reply."""
    return "small"


def write_later(path: str, delay: float) -> str:
    """Wait, then write a file."""
    time.sleep(delay)
    with open(path, "w") as handle:
        handle.write("written")
    return "done"
'''


def test_a_reply_over_64_mb_does_not_jam_the_worker(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "heavy.py").write_text(HUGE_AND_SLOW)
    config = {"localTools": {"dir": "tools", "timeout": 60}}
    with running_gateway(config, tmp_path) as gateway:
        assert value(gateway, "heavy__small") == "small"
        too_big = gateway.call("heavy__huge", {"megabytes": 70})
        assert too_big.status_code == 503, too_big.text[:300]
        assert "larger than 64 MB" in too_big.json()["message"]
        started = time.monotonic()
        assert value(gateway, "heavy__small") == "small", "the next call gets a fresh worker"
        assert time.monotonic() - started < 30


def test_a_call_whose_caller_went_away_is_stopped(tmp_path: Path) -> None:
    """The script is gone (here: the HTTP client gives up): the tool must not go on to act."""
    import httpx

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "heavy.py").write_text(HUGE_AND_SLOW)
    marker = tmp_path / "written.txt"
    with running_gateway({"localTools": {"dir": "tools", "timeout": 60}}, tmp_path) as gateway:
        assert value(gateway, "heavy__small") == "small"
        workers = [p for p in gateway.descendants() if "heavy.py" in " ".join(argv(p))]
        assert workers, [argv(p) for p in gateway.descendants()]
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(
                gateway.url + "/tools/heavy__write_later",
                json={"path": str(marker), "delay": 4},
                timeout=1,
            )
        # The worker is stopped with the call (past the 4 s the tool waits, had it been left).
        for worker in workers:
            wait_for_exit(worker.pid, 20)
        assert not marker.exists(), "the tool ran on after its caller left"
        assert value(gateway, "heavy__small") == "small"


def test_a_tool_file_named_like_a_server_leaves_out_only_itself(tmp_path: Path) -> None:
    """``fx.py`` beside an MCP server ``fx`` was a config error that stopped every command:
    now the server serves, the file is out, and ``gateway status`` and ``config check`` say
    why and what to do."""
    from tests.helpers import fixture_server

    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "fx.py").write_text(INTERNAL)
    (tmp_path / "tools" / "notes.py").write_text(INTERNAL)
    config = {"mcpServers": {"fx": fixture_server()}, "localTools": {"dir": "tools"}}
    with running_gateway(config, tmp_path) as gateway:
        health = gateway.wait_for_health(
            lambda h: h["servers"]["fx"]["state"] == "connected", 30, "fx connected"
        )
        assert health["servers"]["notes"]["state"] == "connected"
        assert gateway.call("fx__plain_text", {"text": "hi"}).status_code == 200
        status = toolscript_cli("gateway", "status", cwd=tmp_path)
        assert "fx.py has the name of the MCP server 'fx'" in status.stdout
        assert "rename the file" in status.stdout
    checked = toolscript_cli("config", "check", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "fx.py has the name of the MCP server 'fx'" in checked.stderr
    assert "valid, 2 servers" in checked.stdout
