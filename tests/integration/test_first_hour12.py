"""A user's first hour, twelfth pass: what tripped new users the earlier passes
(test_first_hour.py to test_first_hour11.py) did not meet. A server whose tool list has one
property that is no schema among good tools, or whose prompts or resources have one bad
entry; an MCP client's user (`toolscript mcp`) whose script names a server still starting
or one that failed; a script file run from a folder outside its project; a project folder
moved while its gateway runs; a server that fails now
found by search from its last listing; a first script
that neither returns nor prints.

Each test asserts what the user is told, with real processes; they share one gateway, but
for the one whose project is moved.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    face_parameters,
    gateway_cli,
    save_config,
    toolscript_cli,
    wait_for_exit,
)

# One tool of three whose parameter "limit" is a number, not a schema: the SDK's model of
# the negotiated protocol version refused the whole listing for it.
LISTING = [
    {
        "name": "find",
        "description": "Find records.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": 5},
            "required": ["query"],
        },
    },
    {
        "name": "count",
        "description": "Count records.",
        "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}}},
    },
    {"name": "ping", "description": "Answer.", "inputSchema": {"type": "object"}},
]
# A server offering prompts and resources, one entry of each list bad: the SDK refused
# each whole list for it. Its serverInfo has no version: the SDK refused the server.
OFFERS = """import json, sys
LISTS = {
    "prompts/list": {"prompts": [{"name": "summary", "arguments": [{"name": "topic"}]},
                                 {"name": "bad", "arguments": "topic"}]},
    "resources/list": {"resources": [{"uri": "file:///notes.md", "name": "notes"},
                                     {"name": "no uri"}]},
    "resources/templates/list": {"resourceTemplates": []},
    "tools/list": {"tools": [{"name": "ping", "inputSchema": {"type": "object"}}]},
}
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method = message["method"]
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "serverInfo":
                  {"name": "offers"},
                  "capabilities": {"tools": {}, "prompts": {}, "resources": {}}}
    else:
        result = LISTS.get(method, {})
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""
FIND = 'import { tools } from "toolscript";\nreturn await tools.records.find({ query: "a", limit: 3 });\n'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A project with the server of that listing, one that never finishes starting, and one
    that exits as it starts; served at once (``--ready-wait 0``), the one starting still
    starting however slow the tests are."""
    directory = tmp_path_factory.mktemp("project")
    listing = directory / "listing.json"
    listing.write_text(json.dumps(LISTING))
    (directory / "offers.py").write_text(OFFERS)
    faulty = [str(SERVERS / "faulty_server.py")]
    exits = "import sys; print('GITHUB_TOKEN is not set', file=sys.stderr); sys.exit(4)"
    config = {
        "mcpServers": {
            "records": {"command": sys.executable, "args": [*faulty, "--tools", str(listing)]},
            "starting": {"command": sys.executable, "args": [*faulty, "--hang-initialize"]},
            "github": {"command": sys.executable, "args": ["-c", exits]},
            "offers": {"command": sys.executable, "args": [str(directory / "offers.py")]},
        },
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(
        config,
        directory,
        *("--ready-wait", "0", "--connect-timeout", "600"),
        env={"TOOLSCRIPT_HOME": str(directory / "home")},
    )
    (directory / "scripts").mkdir()
    (directory / "scripts" / "find.ts").write_text(FIND)
    try:
        gateway.wait_for_health(
            lambda health: (
                {"records": "connected", "github": "failed", "offers": "connected"}.items()
                <= {name: server["state"] for name, server in health["servers"].items()}.items()
            ),
            what="records and offers connected, github failed",
        )
    except BaseException:
        gateway.stop()  # a fixture that fails before its yield is not torn down
        raise
    yield gateway
    assert gateway.stop() == []


def test_one_property_that_is_no_schema_costs_only_that_property(gateway: GatewayProcess) -> None:
    """It cost the server every tool, its reason a pydantic dump of ListToolsResult."""
    listed = json.loads(gateway_cli(gateway, "list-servers", "--json").stdout)
    records = next(server for server in listed if server["name"] == "records")
    assert records["state"] == "connected" and records["tools"] == 3, records
    status = gateway_cli(gateway, "gateway", "status")
    assert "tool 'find': inputSchema: not a schema: property \"limit\" (5); it takes any value" in (
        status.stdout + status.stderr
    )
    assert "ValidationError" not in status.stdout + status.stderr
    # the other parameters keep their types; the bad one takes any value
    types = gateway_cli(gateway, "get-types", "records", "find").stdout
    assert "query: string" in types and "limit?: unknown" in types, types
    ran = gateway_cli(gateway, "exec", str(gateway.directory / "scripts" / "find.ts"))
    assert ran.returncode == 0 and "find" in ran.stdout, ran.stderr


def test_one_bad_prompt_or_resource_costs_only_itself(gateway: GatewayProcess) -> None:
    """`list-prompts` and `list-resources` failed with a pydantic dump for one bad entry."""
    prompts = gateway_cli(gateway, "list-prompts", "offers")
    assert prompts.returncode == 0, prompts.stderr
    assert prompts.stdout.startswith("summary\ttopic"), prompts.stdout
    resources = gateway_cli(gateway, "list-resources", "offers")
    assert resources.returncode == 0, resources.stderr
    assert resources.stdout.startswith("file:///notes.md\t"), resources.stdout
    status = gateway_cli(gateway, "gateway", "status")
    said = status.stdout + status.stderr
    assert "offers: prompt 'bad': arguments is not valid MCP; ignored" in said
    assert "offers: resource #2 has no uri; skipped" in said
    assert "offers: initialize: serverInfo.version missing; served as 'unknown'" in said
    assert "ValidationError" not in said


def test_a_script_that_neither_returns_nor_prints_is_told_how_to_show_its_value(
    gateway: GatewayProcess,
) -> None:
    """A first script ending on `await tools.x.y(...)` showed nothing, exit 0, nothing said."""
    silent = 'import { tools } from "toolscript";\nawait tools.records.ping({});\n'
    ran = gateway_cli(gateway, "exec", silent)
    assert (ran.returncode, ran.stdout) == (0, ""), ran.stderr
    assert "note: the script neither returns nor prints anything" in ran.stderr
    assert "`return VALUE` prints VALUE as JSON (`return await tools.x.y(...)`)" in ran.stderr
    shown = gateway_cli(gateway, "exec", silent.replace("await", "return await", 1))
    assert shown.returncode == 0 and "ping" in shown.stdout and "note:" not in shown.stderr
    (answer,) = face_results(gateway, [silent])
    assert not answer.is_error
    assert answer.content[0].text.startswith("(no output: nothing returned or printed;")


def face_results(gateway: GatewayProcess, codes: list[str]) -> list[Any]:
    """Each code run by `execute` of a `toolscript mcp` started as an MCP client starts it
    (it uses the project's running gateway)."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def work() -> list[Any]:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [await session.call_tool("execute", {"code": code}) for code in codes]

    return anyio.run(work)


def test_the_faces_execute_names_a_server_that_is_not_there(gateway: GatewayProcess) -> None:
    """The face said only that `tools.starting` does not exist on `Tools`: an agent could not
    tell a server still starting (call again) from a name it got wrong, or see why one failed."""
    starting, failed = face_results(
        gateway,
        [
            'import { tools } from "toolscript"; return await tools.starting.ping({})',
            'import { tools } from "toolscript"; return await tools.github.ping({})',
        ],
    )
    for result in (starting, failed):
        assert result.is_error, result
    said = starting.content[0].text
    assert "Property 'starting' does not exist" in said
    assert "not available: starting (still connecting" in said
    assert "call execute again then (list_servers shows its state)" in said
    said = failed.content[0].text
    assert "not available: github (" in said and "GITHUB_TOKEN is not set" in said, said


def test_a_script_run_from_outside_its_project_names_the_config_to_give(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """From a folder with no config, a script file of the project saw no server: a type
    error on `tools.records`, and nothing said of why."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = gateway.directory / "scripts" / "find.ts"
    env = {"TOOLSCRIPT_HOME": str(gateway.directory / "home")}
    ran = toolscript_cli(str(script), cwd=elsewhere, env=env)
    assert ran.returncode == 1, ran.stderr
    assert f"note: no .toolscript.json in {elsewhere} or a folder above it" in ran.stderr
    told = f"`toolscript --config {gateway.config_path} {script}`"
    assert f"the script's project has one: {told}" in ran.stderr, ran.stderr
    # what it says to type works, through the project's running gateway
    again = toolscript_cli(
        "--config", str(gateway.config_path), str(script), cwd=elsewhere, env=env
    )
    assert again.returncode == 0 and "find" in again.stdout, again.stderr


def test_a_project_moved_under_its_gateway_stops_that_gateway(tmp_path: Path) -> None:
    """`mv project elsewhere` with its gateway running: `gateway status` and `gateway stop`
    in the new folder said "not running", the gateway served zero servers on and on, and its
    next build made the old folder again."""
    old = tmp_path / "project"
    old.mkdir()
    echo = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py")]}
    config = {"mcpServers": {"echo": echo}, "search": {"semantic": False}}
    gateway = GatewayProcess(config, old, env={"TOOLSCRIPT_HOME": str(tmp_path / "home")})
    try:
        gateway.wait_for_health(
            lambda health: health["servers"]["echo"]["state"] == "connected", what="echo"
        )
        started = gateway.descendants()
        old.rename(tmp_path / "moved")
        wait_for_exit(gateway.process.pid, timeout=60)
    finally:
        gateway.stop()
    gateway.wait_for_log("the project's folder", "is gone (moved or deleted): this gateway stops")
    assert not old.exists(), "the old folder was made again"
    for process in started:
        wait_for_exit(process.pid)


def test_search_says_a_server_of_its_hits_is_not_connected(tmp_path: Path) -> None:
    """A server that worked last week fails now (its script moved): search still finds its
    tools from its last listing, and said nothing of it; the call then failed."""
    project = tmp_path / "project"
    project.mkdir()
    echo = {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py")]}
    config: dict[str, Any] = {"mcpServers": {"echo": echo}, "search": {"semantic": False}}
    gateway = GatewayProcess(config, project)  # the face finds it (the user's own cache)
    try:
        gateway.wait_for_health(
            lambda health: health["servers"]["echo"]["state"] == "connected", what="echo"
        )
        echo["args"] = [str(project / "moved_away.py")]
        save_config(gateway, config, in_place=False)
        gateway.wait_for_health(
            lambda health: health["servers"]["echo"]["state"] == "failed", what="echo failed"
        )
        found = gateway_cli(gateway, "search", "echo the text back", "-n", "1")
        assert found.returncode == 0 and found.stdout.startswith("echo\techo"), found
        assert "note: echo is failed (exited while connecting: " in found.stderr
        assert "its tools above are from its last listing" in found.stderr, found.stderr
        (answer,) = face_search(gateway, "echo the text back")
        said = answer.content[0].text
        assert said.startswith("echo.echo → tools.echo.echo"), said
        assert "(echo is failed: its tools above are from its last listing" in said
        assert "(keyword search only: semantic search is turned off; " in said
    finally:
        assert gateway.stop() == []


def face_search(gateway: GatewayProcess, *queries: str) -> list[Any]:
    """Each query asked with `search_tools` of a `toolscript mcp` of the project."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def work() -> list[Any]:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [await session.call_tool("search_tools", {"query": q}) for q in queries]

    return anyio.run(work)
