"""What MCP servers offer besides tools, with the real `server-everything`: resources,
resource templates and prompts from a script (the generated module's `resources`,
`prompts`, `search` and `describe`), from the CLI and from the MCP face; reads and gets
follow the tool policy and land in the run log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.helpers import (
    GatewayProcess,
    face_parameters,
    needs_semantic,
    node_server,
    toolscript_cli,
)

ARCHITECTURE = "demo://resource/static/document/architecture.md"


def everything_config(**server: Any) -> dict[str, Any]:
    entry = {"command": node_server("mcp-server-everything"), **server}
    return {"mcpServers": {"everything": entry}, "search": {"semantic": False}}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("offerings")
    started = GatewayProcess(
        everything_config(
            policy={"prompt:resource-prompt": "deny", "prompt:completable-prompt": "ask"}
        ),
        directory,
    )
    try:
        started.wait_for_health(lambda h: h["servers"]["everything"]["state"] == "connected")
        yield started
    finally:
        started.stop()


SCRIPT = """import { resources, prompts, search, describe } from "toolscript";
const listed = await resources.everything.list();
const text = await resources.everything.read(%(uri)s);
const template = listed.templates.find((t) => t.uriTemplate.includes("blob"))!;
const blobUri = template.uriTemplate.replace(`{${template.parameters[0]}}`, "1");
const blob = await resources.everything.read(blobUri);
const got = await prompts.everything.get("args-prompt", { city: "Paris" });
const hits = await search("echo back a message", { limit: 3 });
const described = await describe("everything", "echo");
return {
  resources: listed.resources.length,
  parameters: template.parameters,
  text: "text" in text[0] ? text[0].text.slice(0, 20) : null,
  bytes: "bytes" in blob[0] ? blob[0].bytes.length : null,
  blobType: blob[0].mimeType ?? null,
  prompts: (await prompts.everything.list()).map((p) => p.name),
  message: got.messages[0].content,
  hit: hits[0],
  described: { call: described.call, schema: described.inputSchema, ts: described.typescript },
};
"""


def run_script(gateway: GatewayProcess, code: str) -> Any:
    done = toolscript_cli("exec", code, cwd=gateway.directory)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_script_reads_resources_gets_prompts_and_looks_tools_up(
    gateway: GatewayProcess,
) -> None:
    answer = run_script(gateway, SCRIPT % {"uri": json.dumps(ARCHITECTURE)})
    assert answer["resources"] >= 1
    assert answer["parameters"] == ["resourceId"]
    assert answer["text"].startswith("# Everything Server")
    assert answer["bytes"] and answer["bytes"] > 0 and answer["blobType"]
    assert "args-prompt" in answer["prompts"]
    assert answer["message"] == {"type": "text", "text": "What's weather in Paris?"}
    assert answer["hit"]["call"] == "tools.everything.echo" and answer["hit"]["kind"] == "tool"
    assert answer["described"]["call"] == "tools.everything.echo"
    assert answer["described"]["schema"]["required"] == ["message"]
    assert "message: string" in answer["described"]["ts"]


def test_reads_and_gets_land_in_the_run_log_and_follow_the_policy(
    gateway: GatewayProcess,
) -> None:
    code = f"""import {{ resources, prompts }} from "toolscript";
await resources.everything.read({json.dumps(ARCHITECTURE)});
await prompts.everything.get("simple-prompt");
try {{
  await prompts.everything.get("resource-prompt", {{ resourceType: "Text", resourceId: "1" }});
}} catch (error) {{
  console.log(JSON.stringify({{ kind: (error as {{ kind: string }}).kind }}));
}}
"""
    done = toolscript_cli("exec", code, cwd=gateway.directory)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"kind": "tool_denied"}
    runs = json.loads(toolscript_cli("runs", "--json", cwd=gateway.directory).stdout)
    shown = toolscript_cli("runs", "show", runs[0]["id"], "--json", cwd=gateway.directory)
    calls = json.loads(shown.stdout)["calls_made"]
    assert [(call["tool"], call["outcome"]) for call in calls] == [
        (f"everything__resource:{ARCHITECTURE}", "ok"),
        ("everything__prompt:simple-prompt", "ok"),
        ("everything__prompt:resource-prompt", "tool_denied"),
    ]


def test_the_cli_lists_reads_and_gets(gateway: GatewayProcess) -> None:
    where = gateway.directory
    listed = toolscript_cli("list-resources", "everything", cwd=where)
    assert listed.returncode == 0 and ARCHITECTURE in listed.stdout, listed.stderr
    read = toolscript_cli("read-resource", "everything", ARCHITECTURE, cwd=where)
    assert read.stdout.startswith("# Everything Server"), read.stderr
    prompts = toolscript_cli("list-prompts", "everything", cwd=where)
    assert "args-prompt" in prompts.stdout and "city*" in prompts.stdout, prompts.stderr
    got = toolscript_cli(
        "get-prompt", "everything", "args-prompt", "--arg", "city=Paris", cwd=where
    )
    assert "[user]\nWhat's weather in Paris?" in got.stdout, got.stderr
    denied = toolscript_cli("get-prompt", "everything", "resource-prompt", cwd=where)
    assert denied.returncode != 0 and "denied by the policy" in denied.stderr
    found = toolscript_cli("search", "architecture", "--kind", "resource", "--json", cwd=where)
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["tool"] == ARCHITECTURE and hits[0]["kind"] == "resource"
    assert hits[0]["call"] == f"resources.everything.read({json.dumps(ARCHITECTURE)})"


def test_the_cli_reads_through_a_resource_template(gateway: GatewayProcess) -> None:
    where = gateway.directory
    by_name = toolscript_cli(
        "read-resource", "everything", "--template", "Dynamic Text Resource",
        "--arg", "resourceId=3", cwd=where,
    )  # fmt: skip
    assert by_name.returncode == 0 and by_name.stdout.startswith("Resource 3:"), by_name.stderr
    by_uri_template = toolscript_cli(
        "read-resource", "everything", "--json",
        "--template", "demo://resource/dynamic/text/{resourceId}", "-a", "resourceId=4",
        cwd=where,
    )  # fmt: skip
    assert by_uri_template.returncode == 0, by_uri_template.stderr
    read = json.loads(by_uri_template.stdout)["contents"][0]
    assert read["uri"] == "demo://resource/dynamic/text/4"
    missing = toolscript_cli(
        "read-resource", "everything", "--template", "Dynamic Text Resource", cwd=where
    )
    assert missing.returncode != 0 and "it needs resourceId" in missing.stderr
    neither = toolscript_cli("read-resource", "everything", cwd=where)
    assert neither.returncode == 2 and "URI or --template" in neither.stderr


def test_the_mcp_face_lists_reads_and_gets(gateway: GatewayProcess) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def main() -> dict[str, Any]:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            answers = {}
            for name, arguments in {
                "offered": {"server": "everything"},
                "read": {"server": "everything", "uri": ARCHITECTURE},
                "prompt": {
                    "server": "everything",
                    "prompt": "args-prompt",
                    "arguments": {"city": "Paris"},
                },
                "search": {"query": "architecture", "kind": "resource"},
            }.items():
                tool = "search_tools" if name == "search" else "read_resource"
                result = await session.call_tool(tool, arguments)
                assert not result.is_error, result.content
                answers[name] = result.content[0].text  # type: ignore[union-attr]
            return answers

    answers = anyio.run(main)
    assert f"resource {ARCHITECTURE}" in answers["offered"]
    assert "prompt args-prompt(city, state)" in answers["offered"]
    assert answers["read"].startswith("# Everything Server")
    assert answers["prompt"] == "[user] What's weather in Paris?"
    assert ARCHITECTURE in answers["search"]


def test_a_prompt_the_policy_asks_about_stops_the_run_until_approved(
    gateway: GatewayProcess,
) -> None:
    code = """import { prompts } from "toolscript";
const got = await prompts.everything.get("completable-prompt", { department: "Engineering", name: "Alice" });
console.log(got.messages.length > 0 ? "got it" : "empty");
"""
    stopped = toolscript_cli("exec", code, cwd=gateway.directory)
    assert stopped.returncode == 120, stopped.stderr
    assert "everything.prompt:completable-prompt needs approval" in stopped.stderr
    assert "toolscript approve --tool everything.prompt:completable-prompt" in stopped.stderr
    approved = toolscript_cli(
        "approve", "--tool", "everything.prompt:completable-prompt", cwd=gateway.directory
    )
    assert approved.returncode == 0, approved.stderr
    again = toolscript_cli("exec", code, cwd=gateway.directory)
    assert again.returncode == 0 and again.stdout.strip() == "got it", again.stderr


def test_a_search_of_prompts_that_finds_none_names_list_prompts(gateway: GatewayProcess) -> None:
    found = toolscript_cli(
        "search", "zzqx nothing like it", "--kind", "prompt", cwd=gateway.directory
    )
    assert found.returncode == 1
    assert "no prompt matches" in found.stderr and "list-prompts" in found.stderr
    assert "no tool matches" not in found.stderr


@needs_semantic
def test_a_resource_search_with_semantic_search_ready_has_no_keyword_only_note(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Resources and prompts are searched by keywords alone, by design: that is not the
    gateway's semantic search being down, which the note says."""
    config = everything_config() | {"search": {}}
    started = GatewayProcess(config, tmp_path_factory.mktemp("hybrid"))
    try:
        started.wait_for_health(lambda h: h["search"]["ready"], 120, "search ready")
        found = toolscript_cli(
            "search", "architecture", "--kind", "resource", cwd=started.directory
        )
        assert found.returncode == 0, found.stderr
        assert ARCHITECTURE in found.stdout
        assert "keyword search only" not in found.stderr, found.stderr
    finally:
        started.stop()


def test_a_threshold_drops_resources_and_prompts_below_it(gateway: GatewayProcess) -> None:
    def scores(*extra: str) -> list[float]:
        found = toolscript_cli(
            "search", "architecture notes", "--kind", "all", "--json", *extra,
            cwd=gateway.directory,
        )  # fmt: skip
        return [hit["score"] for hit in json.loads(found.stdout)["hits"]]

    assert any(score < 0.99 for score in scores())  # else the threshold below drops nothing
    assert all(score >= 0.99 for score in scores("--threshold", "0.99"))
