"""Volume and exhaustion from a hostile MCP server or a hostile script, against one real
gateway (tests/servers/hostile_server.py, the fixture server, real Deno).

What got through, now closed (each test performs the attack):

- A tool listing with one input schema nested 10,000 levels deep failed its whole server
  (``RecursionError ... while deserializing``: the stdio reader's decoder stops near 1,000
  levels, and the connection was dropped at each try), every other tool of it lost. A
  message that deep is read with what is past 256 levels empty: the listing is served, that
  schema open with a note; any other answer that deep is its own request's error, the
  connection kept.
- A script mapping 100,000 items through ``Promise.all`` of tool calls opened a socket per
  call at once: Deno panicked (``Too many open files``) and another agent's exec meanwhile
  was told no gateway answers. The module keeps 32 of a run's calls under way at once, the
  rest waiting their turn in the script: the run stops at its ``--max-calls``, the other
  exec is answered.

Held (measured by hand with this file's servers, load 10-17 on 2 cores): a server listing
50,000 tools (2,000 kept, one warning naming it; the gateway 117 MB), ``$ref`` cycles typed
as recursive types and their calls checked, an enum of 10,000 values widened with a
warning, a tool name of 1 MB skipped with a warning, the other tools served.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    agent_exec,
    background_server,
    fixture_server,
    free_port,
)

IMPORT = 'import { tools } from "toolscript";\n'
DEPTH = 10_000


def _hostile(directory: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    path = directory / f"{name}.json"
    path.write_text(json.dumps(spec))
    return {"command": sys.executable, "args": [str(SERVERS / "hostile_server.py"), str(path)]}


def _deep_listing() -> list[str]:
    """A tools/list answer's list, as text: a schema nested DEPTH levels (no encoder writes
    it), schemas of $ref cycles, an enum of 10,000 values, a name of 1 MB, and ``ok``."""
    obj = {"type": "object"}
    others = [
        {
            "name": "cycle",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"$ref": "#"}, "b": {"$ref": "#/definitions/x"}},
                "definitions": {
                    "x": {"type": "object", "properties": {"y": {"$ref": "#/definitions/x"}}}
                },
            },
        },
        {
            "name": "choose",
            "inputSchema": {
                "type": "object",
                "properties": {"e": {"enum": [f"v{i}" for i in range(10_000)]}},
            },
        },
        {"name": "n" * 1_000_000, "inputSchema": obj},
        {"name": "ok", "description": "Answers ok.", "inputSchema": obj},
    ]
    deep = '{"type": "object", "properties": {"a": ' * DEPTH + "{}" + "}}" * DEPTH
    return ['[{"name": "deep", "inputSchema": ', deep, "}, ", json.dumps(others)[1:]]


@pytest.fixture(scope="module")
def deep_http() -> Iterator[dict[str, Any]]:
    """tests/servers/deep_http_server.py twice: answering with JSON bodies, and with events."""
    ports = {"deepjson": free_port(), "deepsse": free_port()}
    script = str(SERVERS / "deep_http_server.py")
    with contextlib.ExitStack() as stack:
        for port, mode in zip(ports.values(), ("json", "sse"), strict=True):
            stack.enter_context(background_server([sys.executable, script, str(port), mode], port))
        yield {name: {"url": f"http://127.0.0.1:{port}/mcp"} for name, port in ports.items()}


@pytest.fixture(scope="module")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, deep_http: dict[str, Any]
) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("volume")
    servers = {
        "fx": fixture_server(),
        "vast": _hostile(directory, "vast", {"raw_tools": _deep_listing()}),
        **deep_http,
    }
    config = {"mcpServers": servers, "search": {"semantic": False}}
    started = GatewayProcess(config, directory)
    try:
        started.wait_for_health(
            lambda h: all(h["servers"][n]["state"] != "connecting" for n in servers), 120
        )
        yield started
    finally:
        started.stop()


def test_a_schema_nested_10_000_deep_keeps_its_server_and_its_other_tools(
    gateway: GatewayProcess,
) -> None:
    """Before: the server failed (RecursionError), none of its tools served."""
    vast = gateway.health()["servers"]["vast"]
    assert vast["state"] == "connected", vast
    listed = gateway.client.get("servers/vast/tools").json()
    names = sorted(tool["name"] for tool in listed)
    assert names == ["choose", "cycle", "deep", "ok"], names
    gateway.wait_for_log("vast: tool input schemas: 1 too large to type", "vast: enums: 1")
    gateway.wait_for_log("vast: tool names: 1 over 256 characters skipped")
    code, stdout, stderr = agent_exec(
        gateway,
        IMPORT + "let a: Record<string, unknown> = {};\n"
        "for (let i = 0; i < 40; i++) a = { a, b: { y: { y: {} } } };\n"
        "return [await tools.vast.ok(), await tools.vast.cycle(a),\n"
        '  await tools.vast.deep({ a: { a: {} } }), await tools.vast.choose({ e: "v9999" })];',
    )
    assert code == 0, stderr
    assert json.loads(stdout) == ["ok", "cycle", "deep", "choose"]


def test_an_http_servers_listing_nested_10_000_deep_keeps_the_server(
    gateway: GatewayProcess,
) -> None:
    """The same schema from a streamable HTTP server, in a JSON answer and in an event.
    Before: the SDK's parser refused the answer past 201 levels (``recursion limit
    exceeded``) and the server failed, its other tool lost with it."""
    for name in ("deepjson", "deepsse"):
        state = gateway.health()["servers"][name]
        assert state["state"] == "connected", state
        listed = gateway.client.get(f"servers/{name}/tools").json()
        assert sorted(tool["name"] for tool in listed) == ["deep", "ok"], listed
        gateway.wait_for_log(f"{name}: tool input schemas: 1 too large to type")
    code, stdout, stderr = agent_exec(
        gateway,
        IMPORT + "return [await tools.deepjson.ok(), await tools.deepsse.ok(),\n"
        "  await tools.deepjson.deep({ a: { a: {} } }), await tools.deepsse.deep({})];",
    )
    assert code == 0, stderr
    assert json.loads(stdout) == ["ok", "ok", "deep", "deep"]
    assert gateway.health()["servers"]["fx"]["state"] == "connected"


def test_100_000_promised_calls_stop_at_the_run_s_limit_and_others_are_answered(
    gateway: GatewayProcess,
) -> None:
    """Before: Deno opened a socket per call at once and panicked (too many open files),
    and another agent's exec meanwhile was told no gateway answers."""
    flood = (
        IMPORT + "const calls = [];\n"
        "for (let i = 0; i < 100_000; i++)\n"
        "  calls.push(tools.fx.plainText({ text: String(i) }));\n"
        "return (await Promise.all(calls)).length;"
    )
    outcome: dict[str, tuple[int, str, str]] = {}

    def run_flood() -> None:
        outcome["flood"] = agent_exec(gateway, flood)

    thread = threading.Thread(target=run_flood)
    thread.start()
    try:
        other = agent_exec(gateway, IMPORT + 'return await tools.fx.plainText({ text: "alive" });')
    finally:
        thread.join()
    assert other[0] == 0 and other[1].strip() == '"alive"', other[2]
    code, _, stderr = outcome["flood"]
    assert code == 122 and "tool calls and was stopped" in stderr, stderr
    assert "panicked" not in stderr and "Too many open files" not in stderr
    assert gateway.health()["servers"]["fx"]["state"] == "connected"
