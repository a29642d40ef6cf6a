"""A tool that asks the user something (MCP elicitation), with the real `server-everything`'s
`trigger-elicitation-request`: answered on exec's terminal, through the MCP face by the
client's own elicitation, and refused with a clear error where nobody can answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    answer_on_a_terminal,
    clean_env,
    face_parameters,
    node_server,
    toolscript_cli,
)

ASKS = """import { tools } from "toolscript";
const answer = await tools.everything.triggerElicitationRequest();
console.log(JSON.stringify(answer));
"""


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("elicitation")
    config = {
        "mcpServers": {"everything": {"command": node_server("mcp-server-everything")}},
        "search": {"semantic": False},
    }
    started = GatewayProcess(config, directory)
    try:
        started.wait_for_health(lambda h: h["servers"]["everything"]["state"] == "connected")
        (directory / "asks.ts").write_text(ASKS)
        yield started
    finally:
        started.stop()


def test_a_question_is_answered_on_exec_s_terminal(gateway: GatewayProcess) -> None:
    fields = 13  # the server's form: name first, then twelve fields with defaults or none
    code, seen, out = answer_on_a_terminal(
        "exec",
        "asks.ts",
        cwd=gateway.directory,
        env=clean_env(),
        asked=b"answer it?",
        answer=b"y\nAda Lovelace\n" + b"\n" * (fields - 1),
    )
    assert code == 0, seen
    # (the terminal is read until the question shows: the fields follow it)
    assert b"Please provide inputs for the following fields" in seen
    answer = out.decode()
    assert "Name: Ada Lovelace" in answer and "Favorite Integer: 42" in answer, answer


def test_a_declined_question_reaches_the_server_as_declined(gateway: GatewayProcess) -> None:
    code, seen, out = answer_on_a_terminal(
        "exec",
        "asks.ts",
        cwd=gateway.directory,
        env=clean_env(),
        asked=b"answer it?",
        answer=b"n\n",
    )
    assert code == 0, seen
    assert "User declined" in out.decode()


def test_a_question_nobody_can_answer_is_refused_with_a_clear_error(
    gateway: GatewayProcess,
) -> None:
    done = toolscript_cli("exec", "asks.ts", cwd=gateway.directory)
    assert done.returncode != 0
    assert "nobody can answer" in done.stderr, done.stderr
    assert "without a terminal" in done.stderr


def test_the_mcp_face_asks_through_the_client_s_own_elicitation(gateway: GatewayProcess) -> None:
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    asked: list[Any] = []

    async def answer(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params)
        return mcp_types.ElicitResult(action="accept", content={"name": "Grace Hopper"})

    async def work() -> Any:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write, elicitation_callback=answer) as session,
        ):
            await session.initialize()
            return await session.call_tool("execute", {"code": ASKS})

    result = anyio.run(work)
    assert not result.is_error, result.content
    assert "Name: Grace Hopper" in json.dumps(result.model_dump(mode="json"))
    assert "Please provide inputs" in asked[0].message
    assert asked[0].requested_schema["required"] == ["name"]
