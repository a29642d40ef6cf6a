"""Where features meet: each test makes two or more features work on the same call, with a
real gateway, real MCP servers (the records server's journal counts what reached it) and
the real Deno: an approval through the MCP face (and the Inspector's CLI) of a call holding
a masked secret, a saved script run in the background that stops for approval and is
resumed, a run the face yielded that asks for approval and prints past the cap, a local
tool file edited under the face's spare sandbox, `doit` after a server's list_changed, and a
config saved by an editor while a run waits for approval (and the search and types after
it)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    NODE_BIN,
    GatewayProcess,
    clean_env,
    face_parameters,
    fixture_server,
    gateway_cli,
    journal_of,
    records_server,
    run_doit,
    run_id_of,
    save_config,
    wait_until,
)

SECRET = "sk-live-crossfeature-9876543210"


def config_of(journal: Path, **records: Any) -> dict[str, Any]:
    entry = records_server(
        env={"RECORDS_JOURNAL": str(journal), "RECORDS_TOKEN": SECRET}, **records
    )
    return {
        "mcpServers": {"records": entry, "fx": fixture_server()},
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }


NOTES_V1 = '''def version() -> str:
    """Which version of the file answers."""
    return "v1"
'''

NOTES_V2 = '''def version() -> str:
    """Which version of the file answers."""
    return "v2"


def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    directory = tmp_path_factory.mktemp("features-meet")
    journal = directory / "journal.jsonl"
    (directory / "tools").mkdir()
    (directory / "tools" / "notes.py").write_text(NOTES_V1)
    gateway = GatewayProcess(config_of(journal), directory)
    try:
        yield gateway, journal
    finally:
        gateway.stop()


def test_the_face_asks_with_the_secret_masked_and_the_server_gets_it(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Approval through the MCP face (elicitation) x masking: the person reads `***`, the
    server receives the value the script gave."""
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    gateway, journal = project
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"always": False})

    code = f"""import {{ tools }} from "toolscript";
return await tools.records.dropTable({{ name: "t-{SECRET}", password: "face-password-1" }});
"""

    async def session_work() -> Any:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            return await session.call_tool("execute", {"code": code})

    answer = anyio.run(session_work)
    assert not answer.is_error, answer.content
    assert len(asked) == 1, asked
    assert "records.drop_table" in asked[0]
    assert SECRET not in asked[0] and SECRET[-12:] not in asked[0]
    assert "face-password-1" not in asked[0]
    assert "***" in asked[0]
    calls = [entry for entry in journal_of(journal) if entry["tool"] == "drop_table"]
    assert calls == [
        {"tool": "drop_table", "arguments": {"name": f"t-{SECRET}", "password": "face-password-1"}}
    ]

    # The official Inspector's CLI, a client with no elicitation: the run stops, and what the
    # agent reads of the stopped call (text and structuredContent) holds the masks too.
    inspected = subprocess.run(
        [
            str(NODE_BIN / "mcp-inspector"),
            "--cli",
            sys.executable,
            "-m",
            "toolscript",
            "mcp",
            "--method",
            "tools/call",
            "--tool-name",
            "execute",
            "--tool-arg",
            f"code={code}",
        ],
        cwd=gateway.directory,
        # --config would be the Inspector's own option: the face reads the variable instead.
        env=clean_env(TOOLSCRIPT_CONFIG=str(gateway.config_path), TOOLSCRIPT_LOG_LEVEL="WARNING"),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert inspected.returncode == 0, inspected.stderr
    stopped = json.loads(inspected.stdout)
    assert stopped["isError"] is True
    assert stopped["structuredContent"]["stopped"]["error"] == "approval_required"
    assert "***" in inspected.stdout
    for secret in (SECRET, SECRET[-12:], "face-password-1"):
        assert secret not in inspected.stdout and secret not in inspected.stderr
    assert len([e for e in journal_of(journal) if e["tool"] == "drop_table"]) == 1


ERASE = """import { tools } from "toolscript";

/** Erase a record, then say so. */
export default async function erase(input: { key: string }) {
  await tools.records.writeRecord({ key: input.key, text: "to go" });
  const gone = await tools.records.deleteRecord({ key: input.key });
  return { erased: input.key, gone };
}
"""


def test_a_saved_script_run_in_the_background_stops_for_approval_and_resumes(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Saved scripts x background runs x approvals x resume: the stop reaches `runs wait`,
    `approve RUN_ID` lets that call run once, the resumed run replays the write from its log
    and makes the delete once."""
    gateway, journal = project
    source = gateway.directory / "erase.ts"
    source.write_text(ERASE)
    saved = gateway_cli(gateway, "save", "eraseRecord", str(source))
    assert saved.returncode == 0, saved.stderr
    before = len(journal_of(journal))
    started = gateway_cli(
        gateway,
        "exec",
        "--background",
        "--json",
        'import { scripts } from "toolscript"; return await scripts.eraseRecord({ key: "bg" });',
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    waited = gateway_cli(gateway, "runs", "wait", run_id, "--timeout", "60")
    assert waited.returncode == 120, (waited.stdout, waited.stderr)
    assert "records.delete_record needs approval" in waited.stderr
    assert run_id in waited.stderr
    assert [e["tool"] for e in journal_of(journal)[before:]] == ["write_record"]
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    resumed = gateway_cli(gateway, "exec", "--resume", run_id)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert json.loads(resumed.stdout)["erased"] == "bg"
    assert [e["tool"] for e in journal_of(journal)[before:]] == ["write_record", "delete_record"]


def test_a_run_the_face_yielded_asks_approval_and_keeps_its_whole_output(
    project: tuple[GatewayProcess, Path],
) -> None:
    """The face's yield (`wait_run`) x approval by elicitation x output past the answer's cap
    x the output resource: a run that goes on after `execute` answered asks the person
    during `wait_run`, the call is made once, and what it printed on both sides of the
    yield is whole in `toolscript://runs/ID/output`, with what it returned in the answer; a
    yielded run that passes its timeout is told as stopped at a limit by `wait_run`."""
    import anyio
    import mcp_types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    gateway, journal = project
    parameters = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "toolscript",
            "mcp",
            "--config",
            str(gateway.config_path),
            "--yield-after",
            "1",
        ],
        cwd=str(gateway.directory),
        env=clean_env(),
    )
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"always": False})

    code = """import { tools } from "toolscript";
for (let i = 0; i < 400; i++) console.log(`before ${i} ` + "a".repeat(100));
await tools.fx.sleep({ seconds: 2 });
await tools.records.writeRecord({ key: "yielded", text: "x" });
const gone = await tools.records.deleteRecord({ key: "yielded" });
for (let i = 0; i < 400; i++) console.log(`after ${i} ` + "b".repeat(100));
return gone;
"""

    async def session_work() -> tuple[Any, list[Any], str]:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            first = await session.call_tool("execute", {"code": code})
            waits = []
            while (first.structured_content or {}).get("running"):
                waited = await session.call_tool(
                    "wait_run", {"run": first.structured_content["run"]}
                )
                waits.append(waited)
                if not (waited.structured_content or {}).get("running"):
                    break
            final = waits[-1] if waits else first
            uris = [
                link.uri
                for link in final.content
                if link.type == "resource_link" and str(link.uri).endswith("/output")
            ]
            whole = ""
            if uris:
                read_back = await session.read_resource(uris[0])
                whole = read_back.contents[0].text
            # and one that passes its timeout after it yielded: wait_run says it was stopped
            endless = await session.call_tool(
                "execute",
                {
                    "code": 'console.log("going");\nawait new Promise((r) => setTimeout(r, 600_000));',
                    "timeout": 3,
                },
            )
            assert endless.structured_content["running"] is True, endless.content
            timed_out = endless
            while (timed_out.structured_content or {}).get("running"):
                timed_out = await session.call_tool(
                    "wait_run", {"run": endless.structured_content["run"]}
                )
            stopped.append(timed_out)
            return first, waits, whole

    stopped: list[Any] = []
    first, waits, whole = anyio.run(session_work)
    assert stopped[0].is_error, stopped[0].content
    assert "stopped at a limit" in stopped[0].content[0].text, stopped[0].content
    assert first.structured_content.get("running") is True, first.content
    assert waits, "the run ended before it yielded"
    final = waits[-1]
    assert not final.is_error, final.content
    # what it returned is given though its output passed the cap
    assert final.structured_content == {"result": {"key": "yielded", "deleted": True}}
    assert '{"key": "yielded", "deleted": true}' in final.content[0].text
    assert len(asked) == 1 and "records.delete_record" in asked[0], asked
    tools_called = [
        e["tool"] for e in journal_of(journal) if e["arguments"].get("key") == "yielded"
    ]
    assert tools_called == ["write_record", "delete_record"]
    assert "before 0 " in whole and "before 399 " in whole, whole[:300]
    assert "after 0 " in whole and "after 399 " in whole, whole[-300:]


def test_a_tool_file_edited_between_two_executes_of_the_face_answers_as_edited(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Local Python tools x live edits x the face's spare sandbox (spawned after the first
    execute, before the edit): the next execute sees the new function in its types and
    calls, and the changed body answers."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    gateway, _journal = project
    tools_file = gateway.directory / "tools" / "notes.py"

    async def session_work() -> tuple[Any, Any]:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            first = await session.call_tool(
                "execute",
                {"code": 'import { tools } from "toolscript"; return await tools.notes.version();'},
            )
            tools_file.write_text(NOTES_V2)
            await anyio.to_thread.run_sync(
                lambda: wait_until(
                    lambda: gateway.client.get("runtime/tools.ts").text,
                    lambda module: "shout(" in module,
                    what="the edited tool file in the module",
                )
            )
            second = await session.call_tool(
                "execute",
                {
                    "code": 'import { tools } from "toolscript";\n'
                    'return [await tools.notes.version(), await tools.notes.shout({ text: "hi" })];'
                },
            )
            return first, second

    try:
        first, second = anyio.run(session_work)
    finally:
        tools_file.write_text(NOTES_V1)
    assert not first.is_error, first.content
    assert first.structured_content == {"result": "v1"}
    assert not second.is_error, second.content
    assert second.structured_content == {"result": ["v2", "HI"]}


def test_doit_after_the_gateway_learned_a_new_tool_keeps_it_and_exec_calls_it(
    project: tuple[GatewayProcess, Path],
) -> None:
    """A server's tools/list_changed x the user's standalone `doit` x exec: the tool the
    gateway learned stays in the artifacts `doit` leaves (it shares the gateway's notion of
    up to date), and the next exec type-checks and calls it."""
    gateway, _journal = project
    added = gateway.call("fx__add_tool", {"name": "fresh_extra"})
    assert added.status_code == 200, added.text
    artifact = gateway.directory / ".toolscript" / "tools.ts"
    wait_until(
        lambda: (gateway.client.get("runtime/tools.ts").text, artifact.read_text()),
        lambda modules: all("freshExtra(" in module for module in modules),
        what="the new tool in the served module and its artifact",
    )
    built = run_doit(gateway.directory)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "freshExtra(" in gateway.client.get("runtime/tools.ts").text
    assert "freshExtra(" in artifact.read_text()
    called = gateway_cli(
        gateway, "exec", 'import { tools } from "toolscript"; return await tools.fx.freshExtra({});'
    )
    assert called.returncode == 0, called.stderr
    assert '"extra"' in called.stdout, called.stdout


def servers_found(gateway: GatewayProcess, query: str) -> set[str]:
    found = gateway_cli(gateway, "search", query, "--json")
    assert found.returncode == 0, found.stderr
    return {hit["server"] for hit in json.loads(found.stdout)["hits"]}


def test_a_config_saved_while_a_run_waits_for_approval_decides_its_resume(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Config reload x approvals x resume x search x get-types (last in the module: it edits
    the shared config). An editor's save (write and rename) that denies the approved tool
    and removes a server lands between `approve RUN_ID` and `exec --resume`: the resumed call
    follows the new policy (not made), search has no hit of the removed server, and
    get-types of its tool says it is gone."""
    gateway, journal = project
    # With the tool gone from the module (denied), the call is still asked of the gateway.
    code = """import { tools, ToolError } from "toolscript";
await tools.records.writeRecord({ key: "held", text: "x" });
try {
  return await (tools.records as any).deleteRecord({ key: "held" });
} catch (error) {
  if (!(error instanceof ToolError)) throw error;
  return { status: error.status, body: error.details };
}
"""
    assert "fx" in servers_found(gateway, "sleep for some seconds")
    before = len(journal_of(journal))
    stopped = gateway_cli(gateway, "exec", code)
    assert stopped.returncode == 120, stopped.stderr
    run_id = run_id_of(stopped.stderr)
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr

    denying = config_of(journal, policy={"delete_record": "deny"})
    del denying["mcpServers"]["fx"]
    save_config(gateway, denying, in_place=False)
    gateway.wait_for_log("config: removed fx; restarted records")
    gateway.wait_for_health(
        lambda h: "fx" not in h["servers"] and h["servers"]["records"]["state"] == "connected",
        what="records back, fx gone",
    )
    wait_until(
        lambda: gateway.client.get("runtime/tools.ts").text,
        lambda module: "writeRecord(" in module and "deleteRecord(" not in module,
        what="the module rebuilt with the deny rule",
    )

    resumed = gateway_cli(gateway, "exec", "--resume", run_id)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    answer = json.loads(resumed.stdout)
    assert answer["status"] == 403 and answer["body"]["error"] == "tool_denied", answer
    assert [e["tool"] for e in journal_of(journal)[before:]] == ["write_record"]

    assert "fx" not in servers_found(gateway, "sleep for some seconds")
    types = gateway_cli(gateway, "get-types", "fx", "sleep")
    assert types.returncode != 0
    assert "server not found: 'fx' (configured: records, notes)" in types.stderr, types.stderr
