"""Stop 76's attacks on a real gateway (a red-team pass from the outside).

What got through, now closed (each test performs the attack):

- An HTTP server's answer was bounded (128 MB, 4,000,000 JSON values) as it came off the
  wire: compressed. A server answering with ``Content-Encoding: gzip`` (httpx2 asks for it,
  and undid it after the count) sent 12 KB that the SDK decoded as 12.6 MB of
  ``[{},{},...]``, 4.2 million values; a 128 KB one would be 128 MB. It is undone before it
  is counted now, and fails as a broken connection does (unit: test_attacks_stop76_values,
  with the stray quote of an event's comment line and an event whole in one chunk).
- A FIFO named ``fifo.py`` put in ``localTools.dir`` (served within a second since stop 75's
  folder watch) was read in the gateway's event loop, which waited on it for ever: every
  call and command after it got 'did not answer within 30 s'. A link to /dev/zero was read
  without end. The build's digest of the file read it too, so every build after it
  stalled: a tool a server added later was never served (the last test shows it). A tool
  file is read as a regular file only now, each such one its error.
- Two runs' slow tool calls of 1,000,000 JSON values each filled the 4,000,000 that every
  caller's calls under way may hold: any other session's call, ``{}`` too, was refused
  (413, told its own run held too much) while they ran. A call of at most 10,000 values is
  bounded by its run's share alone now (unit: test_attacks_stop76_budget).

The other attacks of this pass held; the report lists them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import psutil
import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    fixture_server,
    last_run,
    port_file_server,
    project_gateway,
    toolscript_cli,
    wait_until,
)
from toolscript.gateway.guard import agent_url

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
IMPORT = 'import { tools } from "toolscript";\n'
GREET = """from toolscript import tool


@tool(read_only=True)
def hello(name: str) -> str:
    \"\"\"Greet someone.\"\"\"
    return "hi " + name
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module: a hostile HTTP server whose answers come gzip-compressed
    (compressed_http_server.py), the fixture server (holding a token) and a tool file."""
    directory = tmp_path_factory.mktemp("stop76")
    compressed = [
        sys.executable,
        str(SERVERS / "compressed_http_server.py"),
        str(directory / "port"),
    ]
    with port_file_server(compressed, directory / "port") as port:
        servers = {
            "z": {"url": f"http://127.0.0.1:{port}/mcp"},
            "fx": fixture_server(env={"FX_TOKEN": SECRET}),
        }
        tools = {"greet.py": GREET}
        with project_gateway(directory, servers, tools=tools, connected=servers) as gateway:
            yield gateway


def _rss(gateway: GatewayProcess) -> int:
    process = psutil.Process(gateway.process.pid)
    return sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])


def test_a_compressed_answer_of_millions_of_values_drops_the_connection(
    gateway: GatewayProcess,
) -> None:
    """Before: 12 KB of gzip reached the SDK as 4.2 million values, decoded whole: the
    script got them back and the gateway grew by 0.45 GB, kept after (0.16 to 0.61 GB).
    Now its connection drops (the gateway grew by under 1 MB)."""
    before = _rss(gateway)
    script = 'import { tools } from "toolscript";\nreturn await tools.z.many({});'
    done = toolscript_cli("exec", "--no-check", script, cwd=gateway.directory)
    grown = _rss(gateway) - before
    assert done.returncode != 0, done.stdout[:300]
    assert "went away" in done.stderr, done.stderr
    assert "[{},{}" not in done.stdout
    assert grown < 200 * 1024 * 1024, grown  # decoded and kept before: 0.45 GB
    plain = 'import { tools } from "toolscript";\nreturn await tools.z.plain({});'
    again = toolscript_cli("exec", "--no-check", plain, cwd=gateway.directory)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "a,b,c" in again.stdout  # its compressed small answers still read


def test_a_token_in_a_server_s_error_never_reaches_the_script(gateway: GatewayProcess) -> None:
    """Held: a server's error quoting its token (not a result, so the run is not marked as
    handed it) reaches the script masked; its halves, sent on, hold nothing of it."""
    agent = {"TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url)}
    (gateway.directory / "error_halves.ts").write_text(
        f"{IMPORT}const failing = tools.fx.failWhenReleased({{ message: 'm', env: 'FX_TOKEN' }})"
        ".then(() => '', (e) => String(e.message));\n"
        "await tools.fx.waitFor({ held: 'm', within: 10 });\n"
        "await tools.fx.release({});\n"
        "const text = await failing;\n"
        "const token = text.slice(text.indexOf('ghp_')).split(/\\s/)[0];\n"
        "const half = token.length >> 1;\n"
        "await tools.fx.plainText({ text: `a ${token.slice(0, half)} b` });\n"
        "await tools.fx.plainText({ text: `c ${token.slice(half)} d` });\n"
        "return text;\n"
    )
    done = toolscript_cli("exec", "error_halves.ts", cwd=gateway.directory, env=agent)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen.endswith(": m ***") and "ghp_" not in seen, seen
    run = last_run(gateway)
    half = len(SECRET) // 2
    shown = json.dumps(run)
    assert SECRET[:half] not in shown and SECRET[half:] not in shown


def test_a_fifo_or_a_device_added_as_a_tool_file_stalls_nothing(gateway: GatewayProcess) -> None:
    """Before: a FIFO named fifo.py put in localTools.dir (served within a second since stop
    75) was read in the gateway's loop, which waited on it for ever: every call and command
    after it got 'the gateway did not answer within 30 s'. A link to /dev/zero was read
    without end. Each is that file's error now; the other tools serve."""
    tools_dir = gateway.directory / "tools"
    os.mkfifo(tools_dir / "fifo.py")
    (tools_dir / "zero.py").symlink_to("/dev/zero")
    try:
        before = _rss(gateway)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = toolscript_cli("gateway", "status", "--json", cwd=gateway.directory)
            assert status.returncode in (0, 1, 3), status.stderr
            servers = json.loads(status.stdout)["servers"]
            if all(servers.get(n, {}).get("state") == "failed" for n in ("fifo", "zero")):
                break
            time.sleep(0.5)
        for name in ("fifo", "zero"):
            assert "not a regular file" in servers[name]["error"], servers[name]
        script = f'{IMPORT}return await tools.greet.hello({{ name: "a" }});'
        done = toolscript_cli("exec", "--no-check", script, cwd=gateway.directory)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout) == "hi a"
        assert _rss(gateway) - before < 200 * 1024 * 1024
    finally:
        (tools_dir / "fifo.py").unlink()
        (tools_dir / "zero.py").unlink()


HOLD = """import { tools } from "toolscript";
// 2 * 499,999 + 2 = 1,000,000 JSON values a call: the most one call may hold
const pad = new Array(499_999).fill({});
await Promise.all([0, 1].map(() => tools.fx.sleep({ seconds: 25, pad } as any)));
"""


def test_two_runs_of_slow_large_calls_do_not_refuse_every_other_call(
    gateway: GatewayProcess,
) -> None:
    """Two scripts, each making two calls of 1,000,000 JSON values to a tool that sleeps 25 s
    (the per-run bound is 2,000,000, the total 4,000,000): while they sleep, another
    session's call of ``{"text": "x"}`` (one value) was refused with 413, saying its own run
    held too much. A call of at most SMALL_CALL_VALUES is bounded by its run's share alone."""
    (gateway.directory / "hold.ts").write_text(HOLD)
    holders: list[subprocess.Popen[bytes]] = []
    probe = f"{IMPORT}return await tools.fx.waitFor({{ sleeping: 25, within: 30 }});"
    try:
        for _ in range(2):
            holders.append(
                subprocess.Popen(
                    [sys.executable, "-m", "toolscript", "exec", "--no-check", "hold.ts"],
                    cwd=gateway.directory,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
            )
            if len(holders) == 1:  # its calls under way before the next starts
                seen = toolscript_cli("exec", "--no-check", probe, cwd=gateway.directory)
                assert json.loads(seen.stdout) == "yes", seen.stderr
        # The second's two calls under way too: a call of 10,001 values (past
        # SMALL_CALL_VALUES, so bounded by every run's together) is refused from then on.
        large = f"{IMPORT}return await tools.fx.plainText({{ text: 'x', pad: new Array(9_999)"
        large += ".fill({}) } as any);"
        refused = wait_until(
            lambda: toolscript_cli("exec", "--no-check", large, cwd=gateway.directory),
            lambda done: done.returncode != 0,
            60,
            "the four calls under way",
        )
        assert "more than 4,000,000 JSON values at once; try again later" in refused.stderr
        assert all(holder.poll() is None for holder in holders)
        other = f"{IMPORT}return await tools.fx.plainText({{ text: 'x' }});"
        done = toolscript_cli("exec", "--no-check", other, cwd=gateway.directory)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout) == "x"
    finally:
        for holder in holders:
            holder.kill()
            holder.communicate()


def test_a_tool_named_then_added_after_start_is_renamed(gateway: GatewayProcess) -> None:
    """A tool named ``then`` that a server adds while the gateway runs (tools/list changed)
    is ``then2`` in the rebuilt module; awaiting the namespace calls nothing (held). Run
    after the FIFO test, it was never served before: every build stalled on the FIFO."""
    added = f"{IMPORT}return await tools.fx.addTool({{ name: 'then' }});"
    done = toolscript_cli("exec", "--no-check", added, cwd=gateway.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    touch = (
        f"{IMPORT}const fx = tools.fx as any;\nawait fx;\n"
        'return [typeof fx.then, Object.keys(fx).includes("then2")];'
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = toolscript_cli("exec", "--no-check", touch, cwd=gateway.directory)
        assert done.returncode == 0, done.stdout + done.stderr
        if json.loads(done.stdout) == ["undefined", True]:
            break
        time.sleep(1)
    assert json.loads(done.stdout) == ["undefined", True]
    call = f"{IMPORT}return await (tools.fx as any).then2({{}});"
    called = toolscript_cli("exec", "--no-check", call, cwd=gateway.directory)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == {"result": "extra"}, called.stderr
