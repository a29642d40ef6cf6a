"""Stop 57's attacks by an untrusted script (real Deno, a real gateway), each made for real.

Got through, fixed: a body nested past the decoder's recursion (``[[[[...``) sent with a
run's token to a route it reaches besides tool calls (a prompt's get, a resource's read)
was an internal error whose traceback each such request added to the gateway's log; it is
the caller's usage error now, logged as nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, clean_env, fixture_server, running_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    with running_gateway(config, tmp_path_factory.mktemp("stop57")) as started:
        yield started


def exec_script(
    gateway: GatewayProcess, code: str, cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", "--no-check", *args, code],
        cwd=cwd,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_deeply_nested_body_on_any_route_a_run_reaches_is_its_own_error(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    code = """
const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!;
const deep = "[".repeat(200000) + "]".repeat(200000);
const bodies: [string, string][] = [
  ["/servers/fx/prompts/get", `{"name": "x", "arguments": {"a": ${deep}}}`],
  ["/servers/fx/resources/read", `{"template": "x", "params": {"a": ${deep}}}`],
  ["/progress", `{"message": ${deep}}`],
];
const seen = [];
for (let round = 0; round < 5; round++) {
  for (const [path, body] of bodies) {
    const answer = await fetch(url + path, { method: "POST", body });
    seen.push([answer.status, (await answer.json()).error]);
  }
}
console.log(JSON.stringify(seen));
"""
    done = exec_script(gateway, code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[400, "usage_error"]] * 15
    assert "Traceback" not in gateway.log
    assert "RecursionError" not in gateway.log
    assert gateway.health()["status"] == "ok"
