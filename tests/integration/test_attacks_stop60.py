"""Attacks of stop 60 with a real gateway, real Deno and real servers.

- What a script learns of the machine without any permission: ``Deno.cwd()`` (and Node's
  ``process.cwd()``) named the folder toolscript was run from, the project's: its path names
  the user and the project, and a script may send it to any tool. Deno runs from the file
  system's root now, in a fresh Deno, a spare, a background run and the MCP face alike.
- A server listing more tools than any real one, each small enough for every size bound:
  all were typed into the module every script loads (20,000: a 4 MB module, a 0.95 GB type
  checker, each exec 1.1-1.5 s); past ``ENTRY_LIMIT`` the rest are skipped, said once."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.helpers import (
    ROOT,
    GatewayProcess,
    clean_env,
    face_parameters,
    fixture_server,
    running_gateway,
    toolscript_cli,
)
from toolscript.upstream.limits import ENTRY_LIMIT

HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks60") / "alice-secret-project"
    directory.mkdir()
    started = GatewayProcess({"mcpServers": {"fx": fixture_server()}}, directory)
    try:
        yield started
    finally:
        started.stop()


def where_am_i() -> str:
    """A script new each time (a spare runs a script the warm checker passed)."""
    return (
        f'// {secrets.token_hex(8)}\nimport process from "node:process";\n'
        "console.log(JSON.stringify({ deno: Deno.cwd(), node: process.cwd() }));\n"
    )


def _seen(printed: str, project: Path) -> dict[str, str]:
    assert str(project) not in printed and project.name not in printed, printed
    seen: dict[str, str] = json.loads(printed.strip().splitlines()[-1])
    return seen


@pytest.mark.parametrize("spare", [True, False], ids=["spare", "fresh-deno"])
def test_a_script_learns_no_folder_of_the_project_from_exec(
    gateway: GatewayProcess, toolscript_home: Path, spare: bool
) -> None:
    """Before: ``{"deno": ".../alice-secret-project", "node": ".../alice-secret-project"}``."""
    env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    if not spare:
        env["TOOLSCRIPT_NO_SPARE"] = "1"
    done = toolscript_cli("exec", where_am_i(), cwd=gateway.directory, env=env)
    assert done.returncode == 0, done.stderr
    assert _seen(done.stdout, gateway.directory) == {"deno": "/", "node": "/"}


def test_a_background_script_learns_no_folder_of_the_project(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    started = toolscript_cli("exec", "--background", where_am_i(), cwd=gateway.directory, env=env)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    done = toolscript_cli(
        "runs", "wait", run_id, "--timeout", "100", cwd=gateway.directory, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert _seen(printed[0], gateway.directory) == {"deno": "/", "node": "/"}


def test_a_script_the_mcp_face_runs_learns_no_folder_of_the_project(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    parameters = face_parameters(gateway)
    parameters.env = clean_env(TOOLSCRIPT_HOME=str(toolscript_home))

    async def execute() -> str:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("execute", {"code": where_am_i()})
            return "\n".join(block.text for block in result.content if block.type == "text")

    text = anyio.run(execute)
    assert str(gateway.directory) not in text and gateway.directory.name not in text, text
    assert _seen(text, gateway.directory) == {"deno": "/", "node": "/"}


def test_a_server_listing_too_many_tools_is_cut_and_the_others_serve(tmp_path: Path) -> None:
    listed = ENTRY_LIMIT + 1_000
    tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(listed)]
    (tmp_path / "many.json").write_text(json.dumps({"tools": tools}))
    many = {"command": sys.executable, "args": [str(HOSTILE), str(tmp_path / "many.json")]}
    config = {"mcpServers": {"many": many, "fx": fixture_server()}}
    with running_gateway(config, tmp_path) as gateway:
        servers = gateway.health()["servers"]
        assert servers["many"]["tools"] == ENTRY_LIMIT
        assert f"tools past the first {ENTRY_LIMIT:,}: 1000 skipped" in servers["many"]["warnings"]
        assert servers["fx"]["state"] == "connected"
        assert gateway.call(f"many__t{ENTRY_LIMIT - 1}").status_code == 200
        assert gateway.call(f"many__t{ENTRY_LIMIT}").status_code == 404
