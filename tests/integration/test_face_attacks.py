"""The HTTP face's clients against each other: a script one client started and the face
yielded (answered with its run id) is that client's to wait on."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import clean_env, fixture_server, running_gateway
from toolscript.plumbing.processes import stop_process

SLOW = """import { tools } from "toolscript";
console.log("the first client's output");
await tools.fx.sleep({ seconds: 3 });
return 42;
"""


@contextmanager
def http_face(directory: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "mcp", "--http", "--yield-after", "1"],
        cwd=directory,
        env=clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        stop_process(process, 30)


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_one_http_client_cannot_wait_on_a_run_another_started(tmp_path: Path) -> None:
    config = {"mcpServers": {"fx": fixture_server()}}
    with running_gateway(config, tmp_path) as gateway, http_face(gateway.directory) as url:
        answers: dict[str, Any] = {}

        async def clients() -> None:
            async with (
                streamable_http_client(url) as (read_a, write_a, *_),
                ClientSession(read_a, write_a) as first,
                streamable_http_client(url) as (read_b, write_b, *_),
                ClientSession(read_b, write_b) as second,
            ):
                await first.initialize()
                await second.initialize()
                started = await first.call_tool("execute", {"code": SLOW})
                answers["started"] = started
                run_id = (started.structured_content or {}).get("run")
                answers["other"] = await second.call_tool("wait_run", {"run": run_id})
                while True:
                    waited = await first.call_tool("wait_run", {"run": run_id})
                    if not (waited.structured_content or {}).get("running"):
                        answers["own"] = waited
                        return

        anyio.run(clients)
    started, other, own = answers["started"], answers["other"], answers["own"]
    assert started.structured_content["running"] is True, text(started)
    assert other.is_error
    assert "no running script with run id" in text(other)
    assert "the first client's output" not in text(other)
    assert not own.is_error, text(own)
    assert own.structured_content == {"result": 42}
