"""Attacks of stop 63 with a real gateway, real Deno and real servers.

- A script may open sockets to the gateway (its runtime does, one per call): 300 of them,
  each kept alive with a cheap call every two seconds, or each waiting on a slow tool, took
  every one of the gateway's 256 places, and every other call, a person's too, was refused
  for as long as the script ran (a connection between requests was no "silent" one, nor one
  whose request was arriving, so no new one took its place). Now a new connection takes the
  place of the oldest kept open between requests, else of the oldest request of the caller
  holding the most past 3 (so six scripts of 50 sockets each do not fill every place either),
  read from the decoded path as the guard reads the token (spelled with its letters
  percent-encoded in ever new ways, one run's slow reads were each a caller of their own). A
  connection that has sent nothing is the first to give its place up only after a second:
  before, a script's burst of new connections closed an exec's own before it could send.
- A server's stderr went to a temporary file that held every byte it wrote, for as long as
  it ran (a server logging on and on filled the disk), and the gateway read all of it into
  memory for the last lines of an error. The file is cut back to its last 64 KB once past
  1 MB, and only its end is read."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import GatewayProcess, clean_env, fixture_server, wait_until
from toolscript.gateway.connections import MAX_CONNECTIONS


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks63")
    servers = {"fx": fixture_server(), "noisy": _noisy(directory)}
    started = GatewayProcess({"mcpServers": servers}, directory)
    try:
        yield started
    finally:
        started.stop()


HOSTILE = Path(__file__).parent.parent / "servers" / "hostile_server.py"
FLOOD_MB = 64


def _noisy(directory: Path) -> dict[str, Any]:
    """A server whose ``log`` writes ``FLOOD_MB`` MB to its stderr, and whose
    ``stderr_size`` says how many bytes the file its stderr goes to holds."""
    tool = {"inputSchema": {"type": "object"}}
    spec = {
        "tools": [{"name": "log", **tool}, {"name": "stderr_size", **tool}],
        "stderr_flood": {"log": FLOOD_MB},
    }
    path = directory / "noisy.json"
    path.write_text(json.dumps(spec))
    return {"command": sys.executable, "args": [str(HOSTILE), str(path)]}


def _holding_places(route: str, arguments: dict[str, Any], sockets: int) -> str:
    """A script opening ``sockets`` sockets to the gateway, each a request of its run's own
    URL to ``route``, sent again on each every two seconds (kept alive). But for a tool call
    (whose path is read as sent), its token is spelled another way on each."""
    spelled = "false" if route.startswith("tools/") else "true"
    return f"""
const url = new URL(Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!);
const body = JSON.stringify({json.dumps(arguments)});
// Its token spelled another way on each (a letter percent-encoded or not): the same run.
const spelled = (i: number) =>
  [...url.pathname].map((c, at) => ({spelled} && at > 0 && i & (1 << at % 10) ? `%${{c.charCodeAt(0).toString(16)}}` : c))
    .join("");
const request = (i: number) =>
  new TextEncoder().encode(
    `POST ${{spelled(i)}}/{route} HTTP/1.1\\r\\nhost: ${{url.host}}\\r\\n` +
      `content-type: application/json\\r\\ncontent-length: ${{body.length}}\\r\\n\\r\\n${{body}}`,
  );
const held: Deno.TcpConn[] = [];
for (let i = 0; i < {sockets}; i++) {{
  const connection = await Deno.connect({{ hostname: url.hostname, port: Number(url.port) }});
  await connection.write(request(i)).catch(() => 0); // (closed already to make room)
  held.push(connection);
}}
console.log("holding");
for (;;) {{
  await new Promise((resolve) => setTimeout(resolve, 2000));
  for (const [i, connection] of held.entries()) await connection.write(request(i)).catch(() => 0);
}}
"""


def _persons_call(url: str) -> bool:
    """Whether a call of the person's own URL was answered."""
    try:
        return httpx.post(f"{url}/tools/fx__plain_text", json={}, timeout=30).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.parametrize(
    ("route", "arguments", "scripts"),
    [
        ("tools/fx__plain_text", {}, 1),
        ("tools/fx__sleep", {"seconds": 60}, 1),
        ("servers/fx/resources/read", {"uri": "fx://sleep/60"}, 1),
        ("servers/fx/resources/read", {"uri": "fx://sleep/60"}, 6),
    ],
    ids=[
        "kept-alive",
        "waiting-on-a-slow-tool",
        "waiting-on-a-slow-read",
        "six-scripts",
    ],
)
def test_scripts_holding_every_connection_refuse_no_other_call(
    gateway: GatewayProcess, route: str, arguments: dict[str, Any], scripts: int
) -> None:
    """Before: each of the person's calls failed (the server disconnected)."""
    sockets = -(-(MAX_CONNECTIONS + 44) // scripts)
    started = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolscript",
                "exec",
                _holding_places(route, arguments, sockets),
            ],
            cwd=gateway.directory,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(scripts)
    ]
    try:
        for script in started:
            assert script.stdout is not None
            said = script.stdout.readline().strip()
            assert said == "holding", script.communicate(timeout=60)[1]
        # Once the gateway took in the sockets the scripts opened (a connection of ours opened
        # among them is one that sent nothing yet, the first to give its place up)...
        wait_until(
            lambda: _persons_call(gateway.url),
            lambda answered: answered,
            30,
            "a person's call answered",
        )
        for _ in range(10):  # ...every call is answered, past the scripts' resends too
            assert _persons_call(gateway.url)
            assert httpx.get(f"{gateway.url}/health", timeout=30).status_code == 200
            time.sleep(0.3)
    finally:
        for script in started:
            script.terminate()
        for script in started:
            script.communicate(timeout=60)


def test_a_server_logging_on_and_on_keeps_only_its_last_lines(gateway: GatewayProcess) -> None:
    """Before: its stderr file held all 64 MB it wrote, as long as it ran."""
    logged = gateway.call("noisy__log")
    assert logged.status_code == 200, logged.text

    def held() -> int:
        answer = gateway.call("noisy__stderr_size")
        assert answer.status_code == 200, answer.text
        return int(str(answer.json()))

    wait_until(held, lambda size: size <= 1024 * 1024, 30, "the server's stderr file cut back")
