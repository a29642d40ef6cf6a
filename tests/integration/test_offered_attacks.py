"""Template reads attacked from a script, with a real server whose templates keep reserved
characters (``{+path}``): the policy's ``resource:URI`` rules hold for the expanded URI
whatever the parameters hold (``/``, ``..``, ``%2F``), the run log and an approval name the
expanded URI, a parameter (or a prompt's argument) of the wrong type is a ToolError naming
the template (prompt) and the parameter; and a server that hangs on ``prompts/list`` is
connected, its tools called and search answered without waiting for it."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, toolscript_cli

SERVER = """
import os
import anyio
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.types import ResourceTemplate

server = MCPServer("notes")


@server.tool(structured_output=False)
def ping() -> str:
    return "pong"


@server.prompt(description="A prompt")
def hello(topic: str) -> str:
    return f"hello {topic}"


async def templates() -> list[ResourceTemplate]:
    return [
        ResourceTemplate(uriTemplate="notes://{folder}/{name}", name="note"),
        ResourceTemplate(uriTemplate="files://{+path}{#part}", name="file"),
    ]


async def read(uri, context=None):
    return [ReadResourceContents(content=str(uri), mime_type="text/plain")]


server.list_resource_templates = templates  # type: ignore[method-assign]
server.read_resource = read  # type: ignore[method-assign]

if os.environ.get("HANG_PROMPTS"):

    async def hang() -> list[object]:
        await anyio.sleep(3600)
        return []

    server.list_prompts = hang  # type: ignore[method-assign]

server.run()
"""

POLICY = {
    "resource:notes://private/*": "deny",
    "resource:files://etc/*": "deny",
    "resource:notes://asked/*": "ask",
}


def _config(tmp: Path, **env: str) -> dict[str, object]:
    script = tmp / "notes_server.py"
    script.write_text(SERVER)
    entry = {"command": sys.executable, "args": [str(script)], "policy": POLICY, "env": env}
    return {"mcpServers": {"notes": entry}, "search": {"semantic": False}}


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks")
    started = GatewayProcess(_config(directory), directory)
    try:
        started.wait_for_health(lambda h: h["servers"]["notes"]["state"] == "connected")
        yield started
    finally:
        started.stop()


def _read(gateway: GatewayProcess, template: str, params: dict[str, object]) -> dict[str, object]:
    code = f"""import {{ resources }} from "toolscript";
try {{
  const [read] = await resources.notes.template({json.dumps(template)}, {json.dumps(params)} as any);
  return {{ uri: read.uri }};
}} catch (error) {{
  const e = error as {{ name: string; status: number; kind: string; message: string }};
  return {{ error: e.name, status: e.status, kind: e.kind, message: e.message }};
}}
"""
    done = toolscript_cli("exec", code, cwd=gateway.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


@pytest.mark.parametrize(
    ("template", "params"),
    [
        ("note", {"folder": "private", "name": "key"}),
        ("note", {"folder": "public", "name": "../private/key"}),  # encoded: ..%2Fprivate%2Fkey
        ("note", {"folder": "private%2Fx", "name": "key"}),
        ("file", {"path": "etc/passwd"}),
        ("file", {"path": "etc%2Fpasswd"}),  # {+path} keeps the triplet: files://etc%2Fpasswd
        ("file", {"path": "pub/../etc/passwd"}),
        ("file", {"path": "./etc/./passwd"}),
        ("file", {"path": "%65tc/passwd"}),  # an encoded unreserved character
        ("file", {"path": "pub/%2E%2E/etc/passwd"}),
        ("file", {"path": "etc/passwd", "part": "x"}),
    ],
)
def test_a_denied_uri_is_denied_whatever_the_parameters_hold(
    notes: GatewayProcess, template: str, params: dict[str, object]
) -> None:
    answer = _read(notes, template, params)
    assert answer.get("kind") == "tool_denied", answer
    assert answer["error"] == "ToolError" and answer["status"] == 403, answer


def test_allowed_reads_go_through_with_the_expanded_uri_in_the_run_log(
    notes: GatewayProcess,
) -> None:
    assert _read(notes, "note", {"folder": "public", "name": "a b?c#d"}) == {
        "uri": "notes://public/a%20b%3Fc%23d"
    }
    assert _read(notes, "file", {"path": "pub/x y", "part": "p"}) == {"uri": "files://pub/x%20y#p"}
    runs = json.loads(toolscript_cli("runs", "--json", cwd=notes.directory).stdout)
    shown = toolscript_cli("runs", "show", runs[0]["id"], "--json", cwd=notes.directory)
    calls = json.loads(shown.stdout)["calls_made"]
    assert [(call["tool"], call["outcome"]) for call in calls] == [
        ("notes__resource:files://pub/x%20y#p", "ok")
    ]


def test_an_asked_template_read_needs_the_approval_of_its_expanded_uri(
    notes: GatewayProcess,
) -> None:
    code = (
        'import { resources } from "toolscript";\n'
        'await resources.notes.template("note", { folder: "asked", name: "n 1" });\n'
    )
    done = toolscript_cli("exec", code, cwd=notes.directory)
    assert done.returncode == 120, done.stdout + done.stderr
    assert "notes.resource:notes://asked/n%201" in done.stderr, done.stderr


def test_an_asked_read_of_a_long_uri_names_it_cut_in_its_stop(notes: GatewayProcess) -> None:
    """The stop of an asked resource's read named its URI whole, twice (the message and the
    approve command): a script's URI as long as a request. It is cut as a server's names
    are; the run is approved by its id."""
    code = (
        'import { resources } from "toolscript";\n'
        'await resources.notes.template("note", { folder: "asked", name: "n".repeat(20000) });\n'
    )
    done = toolscript_cli("exec", code, cwd=notes.directory)
    assert done.returncode == 120, done.stdout + done.stderr
    assert "notes.resource:notes://asked/nnn" in done.stderr, done.stderr[:2000]
    assert "more characters]" in done.stderr and len(done.stderr) < 4000, done.stderr[:2000]
    assert "toolscript approve --tool" not in done.stderr
    assert re.search(r"toolscript approve [\w-]+` \(this call\)", done.stderr), done.stderr


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"folder": 1, "name": "x"}, "folder"),
        ({"folder": "a", "name": {"x": 1}}, "name"),
        ({"folder": "a", "name": None}, "name"),
        ({"folder": "a"}, "name"),
        ({"folder": "a", "name": "b", "other": "c"}, "other"),
    ],
)
def test_wrong_parameters_at_run_time_are_a_tool_error_naming_the_template_and_parameter(
    notes: GatewayProcess, params: dict[str, object], named: str
) -> None:
    answer = _read(notes, "note", params)
    assert answer["error"] == "ToolError", answer
    status = answer["status"]
    assert isinstance(status, int) and 400 <= status < 500, answer
    message = str(answer["message"])
    assert "notes://{folder}/{name}" in message and named in message, answer


@pytest.fixture
def hanging(tmp_path: Path) -> Iterator[GatewayProcess]:
    started = GatewayProcess(_config(tmp_path, HANG_PROMPTS="1"), tmp_path)
    try:
        yield started
    finally:
        started.stop()


def test_a_server_hanging_on_prompts_list_is_connected_and_called_without_waiting(
    hanging: GatewayProcess,
) -> None:
    # Its listing gives up only after its timeout, with a warning: until then the server is
    # connected, its tools called and its templates read.
    hanging.wait_for_health(lambda h: h["servers"]["notes"]["state"] == "connected")
    called = toolscript_cli(
        "exec",
        'import { tools, resources } from "toolscript";\n'
        "const pong = await tools.notes.ping();\n"
        'const [read] = await resources.notes.template("note", { folder: "a", name: "b" });\n'
        "return [pong, read.uri];",
        cwd=hanging.directory,
    )
    assert called.returncode == 0, called.stdout + called.stderr
    assert json.loads(called.stdout) == ["pong", "notes://a/b"]
    servers = {s["name"]: s for s in hanging.client.get("servers").json()}
    assert not any("prompts/list" in w for w in servers["notes"]["warnings"]), servers


@pytest.mark.parametrize("args", [{"topic": 1}, {"topic": None}, {"topic": ["a"]}])
def test_a_prompt_argument_of_the_wrong_type_is_named(
    notes: GatewayProcess, args: dict[str, object]
) -> None:
    code = f"""import {{ prompts }} from "toolscript";
try {{
  await prompts.notes.get("hello", {json.dumps(args)} as any);
}} catch (error) {{
  const e = error as {{ name: string; status: number; message: string }};
  return {{ error: e.name, status: e.status, message: e.message }};
}}
"""
    done = toolscript_cli("exec", code, cwd=notes.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["error"] == "ToolError" and answer["status"] == 400, answer
    assert "hello" in answer["message"] and "topic" in answer["message"], answer


def test_a_build_without_a_gateway_still_waits_for_the_prompts(tmp_path: Path) -> None:
    # Prompts are listed after a server is connected: a one-off fetch waits for them.
    import anyio

    from toolscript.config import load_config
    from toolscript.upstream.connect import fetch_lists_once

    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps(_config(tmp_path)))
    config = load_config(path)
    found = anyio.run(lambda: fetch_lists_once(list(config.enabled_servers)))
    tools, offered = found["notes"]
    assert tools is not None and offered is not None
    assert [prompt["name"] for prompt in offered["prompts"]] == ["hello"]
    assert len(offered["resourceTemplates"]) == 2


def test_search_over_prompts_is_not_held_by_a_server_hanging_on_them(
    hanging: GatewayProcess,
) -> None:
    # Its prompts/list never answers (the server's own timeout is a minute, longer than this
    # client waits): search answers with what it could list, the templates here.
    hanging.wait_for_health(lambda h: h["servers"]["notes"]["state"] == "connected")
    found = hanging.client.get("runtime/search", params={"q": "note", "kind": "all"})
    assert found.status_code == 200, found.text
    hits = found.json()["hits"]
    assert any(hit["kind"] == "resource" and hit["name"] == "note" for hit in hits), hits
