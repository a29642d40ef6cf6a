"""`toolscript mcp` driven by a client nobody here wrote: the official MCP Inspector's CLI
mode (TypeScript SDK), over stdio, in a project with real servers behind a real gateway.

The Inspector lists the tools before each call and its SDK checks every result against the
tool's ``outputSchema``: a result that does not validate is an error on its side (exit 1,
"Structured content does not match the tool's output schema"), and the agent behind it
never sees the result.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import NODE_BIN, GatewayProcess, clean_env, python_bin, records_server

DELETE = (
    'import { tools } from "toolscript";\n'
    'await tools.records.writeRecord({ key: "a", text: "hello" });\n'
    'console.log("wrote a");\n'
    'return await tools.records.deleteRecord({ key: "a" });\n'
)
CLOCK = (
    'import { tools } from "toolscript";\n'
    'const now = await tools.time.getCurrentTime({ timezone: "Asia/Tokyo" });\n'
    "return { zone: now.timezone };\n"
)


def inspector_bin() -> str:
    path = NODE_BIN / "mcp-inspector"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run npm ci --prefix tests/servers")
    return str(path)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("inspected")
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time"), "description": "Clock"},
            "records": records_server(env={"RECORDS_JOURNAL": str(directory / "journal.jsonl")}),
        },
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(config, directory)  # the faces the Inspector starts share it
    try:
        yield gateway
    finally:
        gateway.stop()


def inspect(project: GatewayProcess, method: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One Inspector CLI run: it starts `toolscript mcp` over stdio, calls, prints JSON."""
    return subprocess.run(
        [
            inspector_bin(),
            "--cli",
            sys.executable,
            "-m",
            "toolscript",
            "mcp",
            "--method",
            method,
            *args,
        ],
        cwd=project.directory,
        # --config would be the Inspector's own option: the face reads the variable instead.
        env=clean_env(TOOLSCRIPT_CONFIG=str(project.config_path), TOOLSCRIPT_LOG_LEVEL="WARNING"),
        capture_output=True,
        text=True,
        timeout=180,
    )


def call(project: GatewayProcess, tool: str, *arguments: str) -> dict[str, Any]:
    """tools/call through the Inspector; its SDK accepted the result (else it exits 1)."""
    args = ["--tool-name", tool]
    if arguments:
        args += ["--tool-arg", *arguments]
    ran = inspect(project, "tools/call", *args)
    assert ran.returncode == 0, ran.stderr
    result: dict[str, Any] = json.loads(ran.stdout)
    return result


def text(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def test_the_inspector_lists_the_face_tools(project: GatewayProcess) -> None:
    listed = inspect(project, "tools/list")
    assert listed.returncode == 0, listed.stderr
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["tools"]}
    assert set(tools) == {
        "search_tools",
        "get_types",
        "execute",
        "wait_run",
        "run_script",
        "save_script",
        "read_resource",
        "list_servers",
    }
    assert "outputSchema" in tools["execute"]


def test_search_types_and_servers_through_the_inspector(project: GatewayProcess) -> None:
    found = call(project, "search_tools", "query=current time in a timezone")
    assert not found.get("isError")
    assert "get_current_time" in [hit["tool"] for hit in found["structuredContent"]["hits"]]
    types = call(project, "get_types", 'tools=["time.get_current_time"]')
    assert not types.get("isError") and "getCurrentTime" in text(types)
    servers = call(project, "list_servers")
    states = {row["name"]: row["state"] for row in servers["structuredContent"]["servers"]}
    assert states == {"time": "connected", "records": "connected"}


def test_execute_through_the_inspector(project: GatewayProcess) -> None:
    ran = call(project, "execute", f"code={CLOCK}")
    assert not ran.get("isError"), text(ran)
    assert ran["structuredContent"] == {"result": {"zone": "Asia/Tokyo"}}


def test_a_call_that_needs_approval_reaches_the_agent_through_the_inspector(
    project: GatewayProcess,
) -> None:
    """The Inspector has no elicitation: the run stops, and the agent reads what to approve."""
    stopped = call(project, "execute", f"code={DELETE}")
    assert stopped["isError"] is True
    assert stopped["structuredContent"]["stopped"]["error"] == "approval_required"
    assert "records.delete_record needs approval" in text(stopped)
    assert "toolscript approve" in text(stopped)
    assert "wrote a" in text(stopped)


def test_a_type_error_and_a_timeout_through_the_inspector(project: GatewayProcess) -> None:
    wrong = call(project, "execute", 'code=const n: number = "a";\nreturn n;')
    assert wrong["isError"] is True
    assert "does not type-check" in text(wrong) and "script.ts:1:7" in text(wrong)
    slow = call(project, "execute", "code=while (true) {}", "timeout=1")
    assert slow["isError"] is True
    assert "stopped at a limit" in text(slow)
