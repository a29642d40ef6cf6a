"""Attacks of stop 63 with a real gateway, real Deno and real servers.

- A script may open sockets to the gateway (its runtime does, one per call): 300 of them,
  each kept alive with a cheap call every two seconds, or each waiting on a slow tool, took
  every one of the gateway's 256 places, and every other call, a person's too, was refused
  for as long as the script ran (a connection between requests was no "silent" one, nor one
  whose request was arriving, so no new one took its place). Now a new connection takes the
  place of the oldest kept open between requests, else of the oldest request of a caller
  holding more than a quarter of the places."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.helpers import GatewayProcess, clean_env, fixture_server
from toolscript.gateway.connections import MAX_CONNECTIONS


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks63")
    started = GatewayProcess({"mcpServers": {"fx": fixture_server()}}, directory)
    try:
        yield started
    finally:
        started.stop()


def _holding_every_place(tool: str, arguments: dict[str, Any]) -> str:
    """A script opening more sockets than the gateway has places, each a call of ``tool``
    through its run's own URL, sent again on each every two seconds (kept alive)."""
    return f"""
const url = new URL(Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!);
const body = JSON.stringify({json.dumps(arguments)});
const request = new TextEncoder().encode(
  `POST ${{url.pathname}}/tools/{tool} HTTP/1.1\\r\\nhost: ${{url.host}}\\r\\n` +
    `content-type: application/json\\r\\ncontent-length: ${{body.length}}\\r\\n\\r\\n${{body}}`,
);
const held: Deno.TcpConn[] = [];
for (let i = 0; i < {MAX_CONNECTIONS + 44}; i++) {{
  const connection = await Deno.connect({{ hostname: url.hostname, port: Number(url.port) }});
  await connection.write(request);
  held.push(connection);
}}
console.log("holding");
for (;;) {{
  await new Promise((resolve) => setTimeout(resolve, 2000));
  for (const connection of held) await connection.write(request).catch(() => 0);
}}
"""


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [("fx__plain_text", {}), ("fx__sleep", {"seconds": 60})],
    ids=["kept-alive", "waiting-on-a-slow-tool"],
)
def test_a_script_holding_every_connection_refuses_no_other_call(
    gateway: GatewayProcess, tool: str, arguments: dict[str, Any]
) -> None:
    """Before: each of the person's calls failed (the server disconnected)."""
    script = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", _holding_every_place(tool, arguments)],
        cwd=gateway.directory,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert script.stdout is not None
        assert script.stdout.readline().strip() == "holding", script.stderr
        persons = httpx.post(f"{gateway.url}/tools/fx__plain_text", json={}, timeout=30)
        assert persons.status_code == 200, persons.text
        assert httpx.get(f"{gateway.url}/health", timeout=30).status_code == 200
    finally:
        script.terminate()
        script.communicate(timeout=60)
