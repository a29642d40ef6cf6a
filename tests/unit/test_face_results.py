"""Every result of every MCP face tool, as a client receives it, against the tool's declared
``outputSchema``: what the official TypeScript SDK's client (the MCP Inspector's) checks.

A tool with an ``outputSchema`` must return ``structuredContent`` unless its result is an
error, and any ``structuredContent`` it returns, error or not, must validate against that
schema: otherwise the client throws and the agent never sees the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client, types

from toolscript.errors import (
    ApprovalRequiredError,
    ExecutionError,
    GatewayResponseError,
    GatewayUnreachableError,
    ServerNotFoundError,
    ToolscriptError,
    TooManyCallsError,
)
from toolscript.execution.sandbox import EXIT_MEMORY, EXIT_OUTPUT, EXIT_TIMEOUT
from toolscript.mcpface.backend import (
    Answer,
    cut_answer,
    execution_answer,
    result_marker,
    search_answer,
    servers_answer,
    stopped_answer,
)
from toolscript.mcpface.server import build_server
from toolscript.mcpface.tools import TOOLS

Outcome = Answer | Exception

TYPE_ERROR = (
    b"TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.\n"
    b"    at script.ts:1:7\n\nerror: Type checking failed.\n"
)
APPROVAL = ApprovalRequiredError(
    "records.delete_record needs approval; the run 0193-abc stopped",
    hint="a person approves it with `toolscript approve 0193-abc`, then run the script again",
    call={"tool": "records__delete_record", "arguments": {"key": "a"}, "seq": 2},
)
TOO_MANY = TooManyCallsError("the run made more than 3 tool calls and was stopped")


def _run_shapes() -> list[Outcome]:
    """What execute (and run_script, which runs code as execute does) can answer."""
    return [
        execution_answer(0, f'step\n{result_marker()}{{"open": 3}}\n'.encode(), b""),
        execution_answer(0, f"{result_marker()}[1, 2]\n".encode(), b"warning\n"),
        execution_answer(0, f"{result_marker()}null\n".encode(), b""),
        execution_answer(0, f'{result_marker()}"text"\n'.encode(), b""),
        execution_answer(0, b"", b""),  # returned nothing
        execution_answer(1, b"", TYPE_ERROR),
        execution_answer(EXIT_TIMEOUT, b"step 1\n", b"toolscript: error: ran longer than 1 s\n"),
        execution_answer(EXIT_OUTPUT, b"lots\n", b"toolscript: error: output cap\n"),
        execution_answer(EXIT_MEMORY, b"", b"toolscript: error: out of memory\n"),
        execution_answer(1, b"", b"error: Uncaught ToolError: boom\n    at script.ts:2:7\n"),
        stopped_answer(APPROVAL.to_dict(), b"wrote a\n"),
        stopped_answer(TOO_MANY.to_dict(), b""),
        cut_answer(
            f'{result_marker()}{{"rows": [1, 2]}}\n'.encode(),
            b"toolscript: output cut: 2000000 bytes\n",
            "toolscript://runs/0193-abc/output",
            2_000_000,
        ),
        ExecutionError("no gateway runs for this project and one could not be started"),
        GatewayUnreachableError("the gateway stopped answering", hint="call the tool again"),
        RuntimeError("something unexpected"),
    ]


# Every outcome of every tool: its answers and the errors it raises.
OUTCOMES: dict[str, list[Outcome]] = {
    "search_tools": [
        search_answer(
            {
                "hits": [
                    {
                        "server": "time",
                        "tool": "get_current_time",
                        "call": "tools.time.getCurrentTime",
                        "description": "Get the time. In a zone.",
                        "score": 0.91,
                    },
                    {"kind": "script", "tool": "weekly", "call": "scripts.weekly", "score": 0.5},
                ],
                "mode": "hybrid",
            }
        ),
        search_answer({"hits": [], "mode": "keyword"}),
        GatewayResponseError.from_response(404, b'{"error": "server_not_found", "message": "x"}'),
        GatewayUnreachableError("the gateway stopped answering"),
    ],
    "get_types": [
        Answer("declare namespace tools {}"),
        ServerNotFoundError("server not found: 'nope'", suggestions=["time"]),
    ],
    "execute": _run_shapes(),
    "run_script": _run_shapes(),
    "save_script": [
        Answer("saved weekly (toolscripts/weekly.ts): weekly(input: {})"),
        GatewayResponseError.from_response(
            422,
            b'{"error": "type_error", "message": "does not type-check", "errors": ["e1"]}',
        ),
    ],
    "list_servers": [
        servers_answer(
            [
                {"name": "time", "state": "connected", "tools": 2, "description": "Clock"},
                {"name": "gh", "state": "failed", "tools": 0, "error": "exited with 1"},
                {"name": "bare", "state": "connecting"},
            ]
        ),
        servers_answer([]),
        GatewayUnreachableError("the gateway stopped answering"),
    ],
}

ARGUMENTS: dict[str, dict[str, Any]] = {
    "search_tools": {"query": "time"},
    "get_types": {"tools": ["time.get_current_time"]},
    "execute": {"code": "return 1", "timeout": 5},
    "run_script": {"name": "weekly", "input": {}},
    "save_script": {"name": "weekly", "code": "export default async function f() {}"},
    "list_servers": {},
}
# Arguments the face itself refuses before any backend runs.
REFUSED: dict[str, dict[str, Any]] = {
    "search_tools": {"query": 3},
    "get_types": {"tools": []},
    "execute": {"code": "return 1", "timeout": -1},
    "run_script": {},
    "save_script": {"name": "x"},
    "list_servers": {"extra": True},
}


class ScriptedBackend:
    """Stands in for the face's Backend: each tool gives its next scripted outcome."""

    def __init__(self, outcomes: dict[str, list[Outcome]]) -> None:
        self.outcomes = {name: list(each) for name, each in outcomes.items()}

    def _next(self, tool: str) -> Callable[..., Any]:
        async def answer(*args: Any, **kwargs: Any) -> Answer:
            outcome = self.outcomes[tool].pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

        return answer

    def __getattr__(self, name: str) -> Callable[..., Any]:
        return self._next(name)


def _check(tool: dict[str, Any], result: types.CallToolResult) -> None:
    """What the TypeScript SDK's Client.callTool checks of a result."""
    schema = tool.get("outputSchema")
    if schema is None:
        return
    structured = result.structured_content
    if structured is None:
        assert result.is_error, f"{tool['name']}: a success without structuredContent"
        return
    jsonschema.validate(structured, schema, cls=jsonschema.Draft202012Validator)


def _call_all() -> list[tuple[str, types.CallToolResult]]:
    backend = ScriptedBackend(OUTCOMES)
    server = build_server(backend)  # type: ignore[arg-type]
    results: list[tuple[str, types.CallToolResult]] = []

    async def main() -> None:
        async with Client(server) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            assert listed == {tool["name"] for tool in TOOLS}
            for name, outcomes in OUTCOMES.items():
                for _ in outcomes:
                    results.append((name, await client.call_tool(name, ARGUMENTS[name])))
                results.append((name, await client.call_tool(name, REFUSED[name])))
            results.append(("nope", await client.call_tool("nope", {})))

    anyio.run(main)
    return results


def test_every_result_of_every_face_tool_matches_its_output_schema() -> None:
    tools = {tool["name"]: tool for tool in TOOLS}
    results = _call_all()
    assert len(results) == sum(len(each) + 1 for each in OUTCOMES.values()) + 1
    for name, result in results:
        assert result.content, name
        if name in tools:
            _check(tools[name], result)


def test_a_run_stopped_for_approval_says_what_to_approve_as_text_and_data() -> None:
    answer = stopped_answer(APPROVAL.to_dict(), b"wrote a\n")
    assert answer.is_error and answer.structured is not None
    assert answer.structured["stopped"]["error"] == "approval_required"
    assert answer.structured["stopped"]["call"]["tool"] == "records__delete_record"
    assert "toolscript approve 0193-abc" in answer.text
    execute = next(tool for tool in TOOLS if tool["name"] == "execute")
    jsonschema.validate(answer.structured, execute["outputSchema"])


@pytest.mark.parametrize("outcome", _run_shapes())
def test_each_run_shape_alone(outcome: Outcome) -> None:
    """Each execute outcome on its own, so a failure names the shape that broke."""
    execute = next(tool for tool in TOOLS if tool["name"] == "execute")
    if isinstance(outcome, ToolscriptError | RuntimeError):
        return  # errors become text results with no data (the whole-face test covers them)
    assert isinstance(outcome, Answer)
    if outcome.structured is None:
        assert outcome.is_error
    else:
        jsonschema.validate(outcome.structured, execute["outputSchema"])


def test_a_deprecated_hit_says_so_past_its_first_sentence() -> None:
    hits = [
        {
            "server": "fs",
            "tool": "read_file",
            "call": "tools.fs.readFile",
            "description": "Read a file as text. DEPRECATED: Use read_text_file instead.",
            "score": 0.8,
            "deprecated": True,
        },
        {
            "server": "fs",
            "tool": "old",
            "call": "tools.fs.old",
            "description": "Deprecated: use new.",
            "score": 0.7,
            "deprecated": True,
        },
    ]
    shown = search_answer({"hits": hits, "mode": "hybrid"}).text.splitlines()
    assert shown == [
        "fs.read_file → tools.fs.readFile: Read a file as text. (deprecated)",
        "fs.old → tools.fs.old: Deprecated: use new.",  # said already
    ]


def test_list_servers_keeps_both_ends_of_a_long_error() -> None:
    # A reason was cut at 200 characters, before its end that says what to write.
    error = (
        "exited while connecting: " + "x" * 300 + " (it names WEATHER_API_KEY: ... so write "
        '"env": {"WEATHER_API_KEY": "${WEATHER_API_KEY}"} in its entry)'
    )
    text = servers_answer([{"name": "w", "state": "failed", "tools": 0, "error": error}]).text
    assert text.startswith("w: failed, 0 tools; error: exited while connecting: xxx")
    assert " … " in text and text.endswith('"${WEATHER_API_KEY}"} in its entry)'), text
    assert len(text) < 450
