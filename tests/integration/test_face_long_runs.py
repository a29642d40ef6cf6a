"""The MCP face with scripts that take long: progress (a script's `progress()`, a server's
notifications/progress) as MCP progress, and `execute` answering with a run id that
`wait_run` continues; driven by the `mcp` SDK's own client over stdio."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers import (
    GatewayProcess,
    clean_env,
    fixture_server,
    node_server,
    running_gateway,
)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {
        "mcpServers": {
            "everything": {"command": node_server("mcp-server-everything")},
            "fx": fixture_server(),
        }
    }
    with running_gateway(config, tmp_path_factory.mktemp("face-long")) as started:
        yield started


@asynccontextmanager
async def face(directory: Path, *args: str) -> AsyncIterator[ClientSession]:
    """The face in the gateway's project (it uses that gateway, found in the user's state)."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", *args],
        cwd=str(directory),
        env=clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING"),
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_progress_of_a_script_and_of_its_server_reaches_the_mcp_client(
    gateway: GatewayProcess,
) -> None:
    code = """import { tools, progress } from "toolscript";
await progress("fetched 40 of 120 issues", 0.33);
await tools.everything.triggerLongRunningOperation({ duration: 0.4, steps: 2 });
return "done";
"""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def work() -> Any:
        async with face(gateway.directory) as session:
            return await session.call_tool("execute", {"code": code}, progress_callback=on_progress)

    result = anyio.run(work)
    assert not result.is_error, text(result)
    assert result.structured_content == {"result": "done"}
    messages = [message for _, _, message in seen]
    assert "fetched 40 of 120 issues (33%)" in messages
    assert "everything.trigger-long-running-operation: 50%" in messages
    assert "everything.trigger-long-running-operation: 100%" in messages
    assert seen[0][:2] == (0.33, 1.0)
    assert [progress for progress, _, _ in seen] == sorted(progress for progress, _, _ in seen)


def test_execute_yields_a_long_run_and_wait_run_brings_its_result(
    gateway: GatewayProcess,
) -> None:
    code = """import { tools } from "toolscript";
console.log("started");
await tools.fx.sleep({ seconds: 3 });
console.log("slept");
return 42;
"""

    async def work() -> tuple[Any, list[Any]]:
        async with face(gateway.directory, "--yield-after", "1") as session:
            first = await session.call_tool("execute", {"code": code})
            waits = []
            while True:
                waited = await session.call_tool(
                    "wait_run", {"run": first.structured_content["run"]}
                )
                waits.append(waited)
                if not (waited.structured_content or {}).get("running"):
                    return first, waits
            raise AssertionError("unreachable")

    first, waits = anyio.run(work)
    assert not first.is_error, text(first)
    assert first.structured_content["running"] is True
    assert "Call wait_run" in text(first)
    final = waits[-1]
    assert not final.is_error, text(final)
    assert final.structured_content == {"result": 42}
    assert "slept" in text(final)
    # the run is answered once: a wait after its result finds nothing to wait for

    async def again() -> Any:
        async with face(gateway.directory) as session:
            return await session.call_tool("wait_run", {"run": first.structured_content["run"]})

    assert anyio.run(again).is_error
