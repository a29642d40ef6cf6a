"""Tool policy, approvals, resumed runs and the run log, with real processes: a real MCP
server whose tools are annotated destructive, read-only and not at all (its journal file
counts the side effects at the server), a real gateway, exec in Deno."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    ROOT,
    GatewayProcess,
    answer_on_a_terminal,
    clean_env,
    face_parameters,
    records_server,
    toolscript_cli,
)

SECRET = "sk-live-policy-test-0123456789"

WRITE_THEN_DELETE = """import { tools } from "toolscript";
console.log(JSON.stringify(await tools.records.writeRecord({ key: "a", text: "hello" })));
console.log(JSON.stringify(await tools.records.deleteRecord({ key: "a" })));
console.log("finished");
"""


def records_config(journal: Path, **server: Any) -> dict[str, Any]:
    entry = records_server(env={"RECORDS_JOURNAL": str(journal), "RECORDS_TOKEN": SECRET}, **server)
    return {"mcpServers": {"records": entry}, "search": {"semantic": False}}


def journal_tools(journal: Path) -> list[str]:
    if not journal.exists():
        return []
    return [json.loads(line)["tool"] for line in journal.read_text().splitlines()]


@pytest.fixture
def project(tmp_path: Path) -> Any:
    journal = tmp_path / "journal.jsonl"
    gateway = GatewayProcess(records_config(journal), tmp_path)
    try:
        yield gateway, journal
    finally:
        gateway.stop()


def exec_script(directory: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = directory / "job.ts"
    script.write_text(code)
    return toolscript_cli("exec", *args, str(script), cwd=directory)


def run_id_of(stderr: str) -> str:
    marker = "toolscript approve "
    start = stderr.index(marker) + len(marker)
    return stderr[start:].split("`", 1)[0].strip()


def test_a_destructive_call_stops_the_run_with_nothing_done(project: Any) -> None:
    gateway, journal = project
    done = exec_script(gateway.directory, WRITE_THEN_DELETE)
    assert done.returncode == 120, done.stderr
    assert journal_tools(journal) == ["write_record"]  # the delete never reached the server
    assert '{"key":"a","written":true}' in done.stdout
    assert "finished" not in done.stdout
    message = done.stderr
    assert "records.delete_record needs approval" in message
    assert '{"key":"a"}' in message  # its arguments
    run_id = run_id_of(message)
    assert f"toolscript exec --resume {run_id}" in message
    assert "toolscript approve --tool records.delete_record" in message
    assert message.count("toolscript: error:") == 1  # one message, no stack trace
    shown = toolscript_cli("runs", "show", run_id, "--json", cwd=gateway.directory)
    run = json.loads(shown.stdout)
    assert run["status"] == "awaiting_approval"
    assert [call["outcome"] for call in run["calls_made"]] == ["ok", "approval_required"]


def test_approve_then_resume_makes_each_call_once(project: Any) -> None:
    gateway, journal = project
    stopped = exec_script(gateway.directory, WRITE_THEN_DELETE)
    run_id = run_id_of(stopped.stderr)
    # Resuming before approval stops at the same call again, repeating nothing.
    again = toolscript_cli("exec", "--resume", run_id, cwd=gateway.directory)
    assert again.returncode == 120, again.stderr
    assert journal_tools(journal) == ["write_record"]
    second = run_id_of(again.stderr)
    approved = toolscript_cli("approve", second, cwd=gateway.directory)
    assert approved.returncode == 0, approved.stderr
    resumed = toolscript_cli("exec", "--trace", "--resume", second, cwd=gateway.directory)
    assert resumed.returncode == 0, resumed.stderr
    assert "finished" in resumed.stdout
    assert '{"key":"a","written":true}' in resumed.stdout  # answered from the log
    assert journal_tools(journal) == ["write_record", "delete_record"]
    assert "replayed" in resumed.stderr and "records.delete_record" in resumed.stderr
    # The approval was used once: the same call in a new run asks again.
    fresh = exec_script(gateway.directory, WRITE_THEN_DELETE.replace('"a"', '"b"'))
    assert fresh.returncode == 120
    assert journal_tools(journal) == ["write_record", "delete_record", "write_record"]


def test_a_replay_that_diverges_stops_before_calling_anything(project: Any) -> None:
    gateway, journal = project
    stopped = exec_script(gateway.directory, WRITE_THEN_DELETE)
    run_id = run_id_of(stopped.stderr)
    toolscript_cli("approve", run_id, cwd=gateway.directory)
    other = WRITE_THEN_DELETE.replace('text: "hello"', 'text: "changed"')
    diverged = exec_script(gateway.directory, other, "--resume", run_id)
    assert diverged.returncode == 121, diverged.stderr
    assert (
        "records.write_record" in diverged.stderr and "nothing more was called" in diverged.stderr
    )
    assert journal_tools(journal) == ["write_record"]


def test_a_resume_whose_check_fails_can_be_resumed_again(project: Any) -> None:
    """The person approved; the resume's script fails its type check (edited, or the tools
    changed): nothing was called, so the approval is not used up and a resume still runs."""
    gateway, journal = project
    stopped = exec_script(gateway.directory, WRITE_THEN_DELETE)
    run_id = run_id_of(stopped.stderr)
    assert toolscript_cli("approve", run_id, cwd=gateway.directory).returncode == 0
    broken = WRITE_THEN_DELETE.replace('key: "a" }))', "key: 7 }))")
    failed = exec_script(gateway.directory, broken, "--resume", run_id)
    assert failed.returncode == 1, failed.stderr
    assert "TS2322" in failed.stderr
    assert f"run {run_id} can still be resumed" in failed.stderr
    # The same in the background: `runs wait` says it.
    started = toolscript_cli(
        "exec", "--background", "--resume", run_id, "job.ts", cwd=gateway.directory
    )
    assert started.returncode == 0, started.stderr
    waited = toolscript_cli("runs", "wait", started.stdout.strip(), cwd=gateway.directory)
    assert waited.returncode == 1, waited.stderr
    assert f"run {run_id} can still be resumed" in waited.stderr
    assert journal_tools(journal) == ["write_record"]
    resumed = toolscript_cli("exec", "--resume", run_id, cwd=gateway.directory)
    assert resumed.returncode == 0, resumed.stderr
    assert "finished" in resumed.stdout
    assert journal_tools(journal) == ["write_record", "delete_record"]


WRITE_DELETE_WRITE = """import { tools } from "toolscript";
await tools.records.writeRecord({ key: "a", text: "hello" });
await tools.records.deleteRecord({ key: "a" });
await tools.records.writeRecord({ key: "b", text: "one more" });
await tools.records.writeRecord({ key: "c", text: "and one past the limit" });
console.log("finished");
"""

DELETE_THEN_PRINT = """import { tools } from "toolscript";
await tools.records.deleteRecord({ key: "z" });
console.log("x".repeat(5000));
"""


def test_a_resume_keeps_the_limits_of_the_run_it_resumes(project: Any) -> None:
    """A background run's --max-calls holds in its resume on a terminal, and a terminal
    run's --max-output in its resume in the background: what the resume does not set, it
    keeps of the stopped run."""
    gateway, journal = project
    script = gateway.directory / "calls.ts"
    script.write_text(WRITE_DELETE_WRITE)
    started = toolscript_cli(
        "exec", "--background", "--max-calls", "3", str(script), cwd=gateway.directory
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    waited = toolscript_cli("runs", "wait", run_id, cwd=gateway.directory)
    assert waited.returncode == 120, waited.stderr
    assert toolscript_cli("approve", run_id, cwd=gateway.directory).returncode == 0
    resumed = toolscript_cli("exec", "--resume", run_id, cwd=gateway.directory)
    assert resumed.returncode == 122, resumed.stderr  # its 4th call: past the kept 3
    assert "finished" not in resumed.stdout
    assert journal_tools(journal) == ["write_record", "delete_record", "write_record"]

    stopped = exec_script(gateway.directory, DELETE_THEN_PRINT, "--max-output", "1000")
    assert stopped.returncode == 120, stopped.stderr
    stopped_id = run_id_of(stopped.stderr)
    assert toolscript_cli("approve", stopped_id, cwd=gateway.directory).returncode == 0
    again = toolscript_cli("exec", "--background", "--resume", stopped_id, cwd=gateway.directory)
    assert again.returncode == 0, again.stderr
    finished = toolscript_cli("runs", "wait", again.stdout.strip(), cwd=gateway.directory)
    assert finished.returncode == 123, finished.stderr  # past the kept 1000 bytes


def test_tool_approval_lasts_across_restarts_and_revokes(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    config = records_config(journal)
    gateway = GatewayProcess(config, tmp_path)
    try:
        stopped = exec_script(tmp_path, WRITE_THEN_DELETE)
        assert stopped.returncode == 120
        approved = toolscript_cli("approve", "--tool", "records.delete_record", cwd=tmp_path)
        assert approved.returncode == 0, approved.stderr
    finally:
        gateway.stop()
    gateway = GatewayProcess(config, tmp_path)
    try:
        # The same script again: the stopped run resumes by itself (its call is approved now).
        rerun = exec_script(tmp_path, WRITE_THEN_DELETE)
        assert rerun.returncode == 0, rerun.stderr
        assert "resuming run" in rerun.stderr
        assert journal_tools(journal) == ["write_record", "delete_record"]
        listed = toolscript_cli("approve", "--list", "--json", cwd=tmp_path)
        assert [a["tool"] for a in json.loads(listed.stdout) if a["scope"] == "tool"] == [
            "records__delete_record"
        ]
        revoked = toolscript_cli(
            "approve", "--tool", "records.delete_record", "--revoke", cwd=tmp_path
        )
        assert revoked.returncode == 0, revoked.stderr
        after = exec_script(tmp_path, WRITE_THEN_DELETE.replace('"a"', '"c"'))
        assert after.returncode == 120
        # A direct call with the gateway's own token honours the policy too.
        direct = gateway.call("records__delete_record", {"key": "c"})
        assert direct.status_code == 403 and direct.json()["error"] == "approval_required"
    finally:
        gateway.stop()
    assert journal_tools(journal).count("delete_record") == 1


def test_an_always_approval_does_not_follow_a_repointed_entry(tmp_path: Path) -> None:
    """An "always" approval holds for the server it was given for: the entry repointed to
    another command (and trusted again) asks again, and approving that binds anew."""
    import shutil

    from tests.helpers import RECORDS_SERVER

    journal = tmp_path / "journal.jsonl"
    config = records_config(journal)
    gateway = GatewayProcess(config, tmp_path)
    try:
        approved = toolscript_cli("approve", "--tool", "records.delete_record", cwd=tmp_path)
        assert approved.returncode == 0, approved.stderr
        assert gateway.call("records__delete_record", {"key": "a"}).status_code == 200
    finally:
        gateway.stop()
    other = tmp_path / "other_records_server.py"
    shutil.copy(RECORDS_SERVER, other)
    config["mcpServers"]["records"]["args"] = [str(other)]
    gateway = GatewayProcess(config, tmp_path)
    try:
        asked = gateway.call("records__delete_record", {"key": "b"})
        assert asked.status_code == 403 and asked.json()["error"] == "approval_required"
        stopped = exec_script(tmp_path, WRITE_THEN_DELETE)
        assert stopped.returncode == 120, stopped.stderr
        again = toolscript_cli("approve", "--tool", "records.delete_record", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert gateway.call("records__delete_record", {"key": "b"}).status_code == 200
    finally:
        gateway.stop()
    assert journal_tools(journal).count("delete_record") == 2


def test_deny_hides_the_tool_and_refuses_calls(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    config = records_config(journal, policy={"drop_*": "deny", "delete_record": "allow"})
    gateway = GatewayProcess(config, tmp_path)
    try:
        types = toolscript_cli("get-types", "records", cwd=tmp_path)
        assert "dropTable" not in types.stdout and "deleteRecord" in types.stdout
        listed = toolscript_cli("list-tools", "records", "--json", cwd=tmp_path)
        assert "drop_table" not in listed.stdout and "delete_record" in listed.stdout
        found = toolscript_cli("search", "drop a whole table", "--json", cwd=tmp_path)
        assert "drop_table" not in found.stdout
        refused = gateway.call("records__drop_table", {"name": "t", "password": "x"})
        assert refused.status_code == 403
        assert refused.json()["error"] == "tool_denied"
        assert "denied by the policy" in refused.json()["message"]
        # Unchecked, a script calling it meets the same refusal, not a TypeError.
        unchecked = exec_script(
            tmp_path,
            'import { tools } from "toolscript";\n'
            'await (tools.records as any).dropTable({ name: "t", password: "x" });\n',
            "--no-check",
        )
        assert unchecked.returncode == 1, unchecked.stderr
        denied = "records.drop_table is denied by the policy of server 'records' in "
        assert f"ToolError: records.dropTable: {denied}" in unchecked.stderr
        assert str(tmp_path / ".toolscript.json") in unchecked.stderr
        assert "TypeError" not in unchecked.stderr
        # "allow" beats the destructive default: no approval needed.
        allowed = exec_script(tmp_path, WRITE_THEN_DELETE)
        assert allowed.returncode == 0, allowed.stderr
    finally:
        gateway.stop()
    assert "drop_table" not in journal_tools(journal)


def test_writes_setting_asks_for_every_tool_not_read_only(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    config = records_config(journal) | {"policy": {"ask": "writes"}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        read = exec_script(
            tmp_path,
            'import { tools } from "toolscript"; return await tools.records.readRecord({ key: "a" });',
        )
        assert read.returncode == 0, read.stderr
        write = exec_script(tmp_path, WRITE_THEN_DELETE)
        assert write.returncode == 120
        assert "records.write_record needs approval" in write.stderr
    finally:
        gateway.stop()
    assert journal_tools(journal) == ["read_record"]


def test_max_calls_stops_a_runaway_loop(project: Any) -> None:
    gateway, journal = project
    loop = """import { tools } from "toolscript";
for (let i = 0; i < 50; i++) {
  try { await tools.records.counter({ step: i }); } catch { /* a loop that swallows errors */ }
}
console.log("loop done");
"""
    done = exec_script(gateway.directory, loop, "--max-calls", "10")
    assert done.returncode == 122, done.stderr
    assert "more than 10 tool calls" in done.stderr
    assert journal_tools(journal) == ["counter"] * 10


def test_the_log_redacts_and_keeps_a_bounded_number_of_runs(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    config = records_config(journal, policy={"drop_table": "allow"}) | {"runs": {"keep": 3}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        code = f"""import {{ tools }} from "toolscript";
await tools.records.dropTable({{ name: "t-{SECRET}", password: "hunter2-password" }});
"""
        done = exec_script(tmp_path, code, "--trace")
        assert done.returncode == 0, done.stderr
        assert "records.drop_table" in done.stderr and "hunter2" not in done.stderr
        for _ in range(4):
            exec_script(
                tmp_path,
                'import { tools } from "toolscript"; await tools.records.counter({});',
            )
        runs = json.loads(toolscript_cli("runs", "--json", cwd=tmp_path).stdout)
        assert len(runs) == 3
        assert all(run["status"] == "ok" and run["origin"] == "cli" for run in runs)
    finally:
        gateway.stop()
    from toolscript.plumbing.paths import project_state_dir

    database = project_state_dir(tmp_path) / "runs.sqlite"
    assert database.stat().st_mode & 0o077 == 0
    everything = b"".join(
        path.read_bytes() for path in database.parent.glob("runs.sqlite*") if path.is_file()
    )
    assert SECRET.encode() not in everything
    assert b"hunter2" not in everything


def test_drop_call_arguments_are_redacted_in_runs_show(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    gateway = GatewayProcess(records_config(journal), tmp_path)
    try:
        code = f"""import {{ tools }} from "toolscript";
await tools.records.dropTable({{ name: "t-{SECRET}", password: "hunter2-password" }});
"""
        stopped = exec_script(tmp_path, code)
        assert stopped.returncode == 120
        assert SECRET not in stopped.stderr and "hunter2" not in stopped.stderr
        assert '"password":"***"' in stopped.stderr
        shown = toolscript_cli("runs", "show", run_id_of(stopped.stderr), cwd=tmp_path)
        assert "***" in shown.stdout and SECRET not in shown.stdout
    finally:
        gateway.stop()
    assert journal_tools(journal) == []


def test_a_script_cannot_use_the_gateway_token_or_answer_its_prompts(project: Any) -> None:
    gateway, _journal = project
    probe = """const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!;
const base = url.slice(0, url.lastIndexOf("/"));
const tries: Record<string, number> = {};
for (const [name, path, method] of [
  ["register", "/runs", "POST"], ["health", "/health", "GET"], ["search", "/search?q=x", "GET"],
]) {
  tries[name] = (await fetch(url + path, { method, body: method === "POST" ? "{}" : undefined })).status;
}
tries.module = (await fetch(url + "/runtime/hash")).status;
console.log(JSON.stringify(tries));
"""
    done = exec_script(gateway.directory, probe, "--no-check")
    assert done.returncode == 0, done.stderr
    tries = json.loads(done.stdout)
    assert tries == {"register": 401, "health": 401, "search": 401, "module": 200}


def test_the_terminal_prompt_approves_through_a_pty(project: Any) -> None:
    gateway, journal = project
    script = gateway.directory / "job.ts"
    script.write_text(WRITE_THEN_DELETE)
    code, seen, out = answer_on_a_terminal(
        "exec",
        str(script),
        cwd=gateway.directory,
        env=clean_env(),
        asked=b"allow it?",
        answer=b"y\n",
    )
    assert b"records.delete_record" in seen, seen
    assert code == 0, seen
    assert b"finished" in out
    assert journal_tools(journal) == ["write_record", "delete_record"]


def test_the_plugin_hook_asks_before_approve() -> None:
    hook = ROOT / "plugin" / "hooks" / "pre-tool-use.sh"
    env = clean_env(TOOLSCRIPT_BIN=str(Path(sys.executable).parent / "toolscript"))

    def decide(command: str) -> dict[str, Any] | None:
        event = {"tool_name": "Bash", "tool_input": {"command": command}}
        done = subprocess.run(
            [str(hook)],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout) if done.stdout.strip() else None

    asked = decide("toolscript approve 20261124-101500-3f9a1c")
    assert asked is not None
    assert asked["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert decide("cd x && toolscript approve --tool github.delete_repo") is not None
    assert decide("toolscript exec job.ts") is None
    assert decide("ls") is None
    declared = json.loads(hook.with_name("hooks.json").read_text())["hooks"]["PreToolUse"]
    assert declared[0]["matcher"] == "Bash"


def test_runs_list_in_a_fresh_project(tmp_path: Path) -> None:
    listed = toolscript_cli("runs", cwd=tmp_path)
    assert listed.returncode == 0 and "no runs yet" in listed.stdout
    missing = toolscript_cli("runs", "show", "nope", cwd=tmp_path)
    assert missing.returncode != 0 and "no run 'nope'" in missing.stderr
    wrong = toolscript_cli("approve", cwd=tmp_path)
    assert wrong.returncode == 2 and "RUN_ID or --tool" in wrong.stderr


def test_the_mcp_face_asks_through_elicitation_or_says_how_to_approve(project: Any) -> None:
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    gateway, journal = project
    parameters = face_parameters(gateway)
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"always": False})

    async def session_work() -> tuple[Any, Any]:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            approved = await session.call_tool("execute", {"code": WRITE_THEN_DELETE})
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            stopped = await session.call_tool(
                "execute", {"code": WRITE_THEN_DELETE.replace('"a"', '"z"')}
            )
        return approved, stopped

    approved, stopped = anyio.run(session_work)
    assert not approved.is_error, approved.content
    assert len(asked) == 1 and "records.delete_record" in asked[0] and '"a"' in asked[0]
    assert "finished" in approved.content[0].text
    assert stopped.is_error
    message = stopped.content[0].text
    assert "records.delete_record needs approval" in message
    assert "toolscript approve" in message
    assert journal_tools(journal) == ["write_record", "delete_record", "write_record"]
    runs = json.loads(toolscript_cli("runs", "--json", cwd=gateway.directory).stdout)
    assert [run["origin"] for run in runs[:2]] == ["mcp", "mcp"]


INTERNAL_TOOLS = '''"""Notes kept in the gateway."""
from toolscript import tool

NOTES: dict[str, str] = {}


@tool(read_only=True)
def read_note(key: str) -> str:
    """Read a note."""
    return NOTES.get(key, "")


@tool(destructive=True, title="Erase a note")
def erase_note(key: str) -> bool:
    """Erase a note for good."""
    return NOTES.pop(key, None) is not None


def touch(key: str) -> str:
    """Not annotated."""
    NOTES[key] = "touched"
    return key
'''

WORKER_TOOLS = '''# /// script
# requires-python = ">=3.10"
# dependencies = []
# ///
"""Tools in a worker, where toolscript is not installed."""
from toolscript import tool


@tool(destructive=True)
def shred(path: str) -> str:
    """Shred a file (pretend)."""
    return "shredded " + path


def nothing() -> str:
    """Not annotated."""
    return "ok"
'''


def test_local_tools_take_annotations_from_their_decorator_and_the_policy(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "notes.py").write_text(INTERNAL_TOOLS)
    (tools / "shredder.py").write_text(WORKER_TOOLS)
    config = {
        "localTools": {
            "dir": "tools",
            "timeout": 120,
            "files": {"notes": {"policy": {"touch": "deny"}}},
        },
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(config, tmp_path)
    try:
        listed = json.loads(toolscript_cli("list-tools", "notes", "--json", cwd=tmp_path).stdout)
        by_name = {tool["name"]: tool for tool in listed}
        assert "touch" not in by_name  # denied
        assert by_name["erase_note"]["annotations"] == {
            "title": "Erase a note",
            "destructiveHint": True,
        }
        assert by_name["read_note"]["annotations"] == {"readOnlyHint": True}
        read = exec_script(
            tmp_path,
            'import { tools } from "toolscript"; return await tools.notes.readNote({ key: "k" });',
        )
        assert read.returncode == 0, read.stderr
        erase = exec_script(
            tmp_path,
            'import { tools } from "toolscript"; await tools.notes.eraseNote({ key: "k" });',
        )
        assert erase.returncode == 120 and "notes.erase_note needs approval" in erase.stderr
        shred = exec_script(
            tmp_path,
            'import { tools } from "toolscript"; console.log(await tools.shredder.nothing({}));\n'
            'await tools.shredder.shred({ path: "x" });',
        )
        assert shred.returncode == 120, shred.stderr
        assert "shredder.shred needs approval" in shred.stderr and "ok" in shred.stdout
    finally:
        gateway.stop()


def test_the_mcp_face_keeps_cut_output_as_a_resource(project: Any) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    gateway, _journal = project
    parameters = face_parameters(gateway)
    code = (
        "return { rows: Array.from({ length: 60000 }, (_, i) => ({ id: i, name: `row ${i}` })) };"
    )

    async def session_work() -> tuple[Any, str]:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("execute", {"code": code})
            links = [block for block in result.content if block.type == "resource_link"]
            assert len(links) == 1, result.content
            whole = await session.read_resource(links[0].uri)
            return result, whole.contents[0].text

    result, whole = anyio.run(session_work)
    assert not result.is_error
    text = result.content[0].text
    assert "passed the" in text and "toolscript://runs/" in text
    assert result.structured_content, text[:3000]
    rows = result.structured_content["result"]["rows"]
    assert rows[0] == {"id": 0, "name": "row 0"} and rows[-1].endswith("more items")
    assert len(json.loads(whole)["rows"]) == 60000


def test_a_tools_error_text_never_shows_a_configured_secret(project: Any) -> None:
    """A server that answers isError with its own token (whole, JSON-escaped, base64, its
    end): the script, exec's stderr and the run log see it redacted."""
    import base64

    gateway, _ = project
    caught = exec_script(
        gateway.directory,
        'import { tools, ToolError } from "toolscript";\n'
        "try { await tools.records.failLoudly({}); } catch (e) {\n"
        "  console.log(JSON.stringify({ m: (e as ToolError).message, d: (e as ToolError).details }));\n"
        "}\n"
        "await tools.records.failLoudly({});\n",
    )
    assert caught.returncode == 1
    seen = caught.stdout + caught.stderr
    assert "cannot connect with" in seen
    for form in (SECRET, base64.b64encode(SECRET.encode()).decode(), SECRET[-12:]):
        assert form not in seen, form
