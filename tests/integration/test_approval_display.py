"""The person approving a call sees all of it: the attack of a call whose dangerous part sits
past where a prompt cut its arguments (``"echo hi" + " ".repeat(600) + "; rm -rf ~"``), made
for real against an interactive exec's terminal prompt, the MCP face's elicitation,
``toolscript approve RUN_ID`` and ``toolscript runs show RUN_ID``; a real MCP server whose
journal counts what was called, a real gateway, exec in Deno.

Also: the face says "nothing ran" only when its gateway counted no tool call, not when a
script merely printed what a failed type check prints."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    answer_on_a_terminal,
    clean_env,
    face_parameters,
    records_server,
    toolscript_cli,
)

TAIL = "; rm -rf ~"


def deleting(key_expression: str) -> str:
    """A script whose destructive call's key is ``key_expression`` (TypeScript)."""
    return f"""import {{ tools }} from "toolscript";
const key = {key_expression};
console.log(JSON.stringify(await tools.records.deleteRecord({{ key }})));
console.log("finished");
"""


PADDED = deleting(f'"echo hi" + " ".repeat(600) + "{TAIL}"')  # past every old cut
HUGE = deleting(f'"echo hi" + " ".repeat(20000) + "{TAIL}"')  # past a prompt's whole view
TOO_LARGE = deleting(f'"echo hi" + " ".repeat(1200000) + "{TAIL}"')  # past what a run keeps


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    directory = tmp_path_factory.mktemp("approval-display")
    journal = directory / "journal.jsonl"
    entry = records_server(env={"RECORDS_JOURNAL": str(journal)})
    gateway = GatewayProcess(
        {"mcpServers": {"records": entry}, "search": {"semantic": False}}, directory
    )
    try:
        yield gateway, journal
    finally:
        gateway.stop()


def deleted_keys(journal: Path) -> list[str]:
    if not journal.exists():
        return []
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    return [line["arguments"]["key"] for line in lines if line["tool"] == "delete_record"]


def stopped_run(directory: Path, code: str, name: str) -> tuple[str, str]:
    """Run ``code`` with exec (no terminal: it stops for approval); (run id, stderr)."""
    script = directory / name
    script.write_text(code)
    done = toolscript_cli("exec", str(script), cwd=directory)
    assert done.returncode == 120, done.stderr
    found = re.search(r"\brun (\d{8}-\d{6}-[0-9a-f]+) stopped", done.stderr)
    assert found is not None, done.stderr
    return found[1], done.stderr


def refused_on_a_terminal(
    gateway: GatewayProcess,
    name: str,
    code: str,
    meanwhile: Callable[[bytes], None] | None = None,
) -> tuple[int, bytes, bytes]:
    """``exec`` of ``code`` (written to NAME) on a terminal whose person answers no at the
    approval prompt: the exit code, what the terminal showed, the output."""
    script = gateway.directory / name
    script.write_text(code)
    return answer_on_a_terminal(
        "exec",
        str(script),
        cwd=gateway.directory,
        env=clean_env(),
        asked=b"[y]es",
        answer=b"n\n",
        meanwhile=meanwhile,
    )


def test_the_terminal_prompt_shows_the_whole_call(project: Any) -> None:
    gateway, journal = project
    code, seen, out = refused_on_a_terminal(gateway, "padded.ts", PADDED)
    shown = seen.decode()
    assert "records.delete_record" in shown, shown
    assert "echo hi" + " " * 600 + TAIL in shown  # every byte, before the question
    assert "SHORTENED" not in shown
    assert code != 0 and b"finished" not in out
    assert "echo hi" + " " * 600 + TAIL not in deleted_keys(journal)


def test_the_terminal_prompt_says_when_it_shortens_and_where_the_whole_is(
    project: Any,
) -> None:
    gateway, journal = project
    code, seen, _ = refused_on_a_terminal(gateway, "huge.ts", HUGE)
    shown = seen.decode()
    question = shown[shown.index("allow it") :]
    assert "SHORTENED" in question.split("\n", 1)[0], shown  # on the prompt's line itself
    assert "characters not shown …]" in shown
    assert f'{TAIL}"' in shown  # the string's end is shown, not only its start
    assert "toolscript runs show 2" in shown  # a run id: where the whole is
    assert len(seen) < 20000  # and it is shortened: the 20,000 blanks are not all there
    assert code != 0
    assert deleted_keys(journal) == []


def test_runs_show_and_approve_show_the_whole_stopped_call(project: Any) -> None:
    gateway, journal = project
    run_id, stderr = stopped_run(gateway.directory, HUGE, "huge-stopped.ts")
    # The stop's message says its view is shortened and where the whole is.
    assert "characters not shown …]" in stderr and f"toolscript runs show {run_id}" in stderr
    assert f'{TAIL}"' in stderr
    shown = toolscript_cli("runs", "show", run_id, cwd=gateway.directory)
    assert shown.returncode == 0, shown.stderr
    assert '"echo hi' + " " * 20000 + TAIL + '"' in shown.stdout  # whole
    # the tool as users write it (approve --tool takes it), never the gateway's records__...
    assert "records.delete_record needs approval" in shown.stdout
    assert "records__" not in shown.stdout
    as_json = json.loads(
        toolscript_cli("runs", "show", run_id, "--json", cwd=gateway.directory).stdout
    )
    assert as_json["stopped"]["call"]["arguments"] == {"key": "echo hi" + " " * 20000 + TAIL}

    padded_id, _ = stopped_run(gateway.directory, PADDED, "padded-stopped.ts")
    approved = toolscript_cli("approve", padded_id, cwd=gateway.directory)
    assert approved.returncode == 0, approved.stderr
    assert "records.delete_record" in approved.stdout
    assert "echo hi" + " " * 600 + TAIL in approved.stdout  # what was approved, whole

    approved = toolscript_cli("approve", run_id, cwd=gateway.directory)
    assert approved.returncode == 0, approved.stderr
    assert "characters not shown …]" in approved.stdout and f'{TAIL}"' in approved.stdout
    assert f"toolscript runs show {run_id}" in approved.stdout
    assert deleted_keys(journal) == []  # approving runs nothing


def test_a_call_too_large_to_show_whole_cannot_be_approved_by_itself(project: Any) -> None:
    gateway, journal = project
    run_id, stderr = stopped_run(gateway.directory, TOO_LARGE, "too-large.ts")
    assert "cannot be approved by itself" in stderr, stderr
    assert "toolscript approve --tool records.delete_record" in stderr
    refused = toolscript_cli("approve", run_id, cwd=gateway.directory)
    assert refused.returncode != 0
    assert "too large to be shown whole" in refused.stderr, refused.stderr
    shown = toolscript_cli("runs", "show", run_id, cwd=gateway.directory)
    assert "TRIMMED" in shown.stdout
    assert len(shown.stdout) < 100_000
    assert deleted_keys(journal) == []


def face_session(gateway: GatewayProcess, answer: str, codes: list[str]) -> tuple[Any, list[str]]:
    """Each of ``codes`` run with the face's execute, by a client that answers approval
    questions with ``answer`` (accept or decline); (the results, the questions asked)."""
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    asked: list[str] = []

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        content = {"always": False} if answer == "accept" else None
        return mcp_types.ElicitResult(action=answer, content=content)

    async def work() -> list[Any]:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            return [await session.call_tool("execute", {"code": code}) for code in codes]

    return anyio.run(work), asked


def test_the_faces_elicitation_shows_the_whole_call_or_says_it_is_shortened(
    project: Any,
) -> None:
    gateway, journal = project
    # Scripts of their own: the same script as a run approved earlier would resume it.
    results, asked = face_session(gateway, "decline", [PADDED + "// face\n", HUGE + "// face\n"])
    assert len(asked) == 2, results
    assert "echo hi" + " " * 600 + TAIL in asked[0] and "SHORTENED" not in asked[0]
    assert "SHORTENED" in asked[1] and "characters not shown …]" in asked[1]
    assert f'{TAIL}"' in asked[1] and "toolscript runs show 2" in asked[1]
    # The sentence asking for the answer comes after the notice, not only before the view.
    assert "SHORTENED" in asked[1][asked[1].rindex("characters not shown …]") :]
    assert deleted_keys(journal) == []


TYPE_CHECK_PRINTED = """import { tools } from "toolscript";
await tools.records.writeRecord({ key: "printed", text: "side effect" });
console.error("error: Type checking failed");
throw new Error("stop");
"""
NOT_CHECKED = """const n: number = "not a number";
console.log(n);
"""


def test_the_face_says_nothing_ran_only_when_no_call_was_made(project: Any) -> None:
    gateway, journal = project
    (printed, failed), _ = face_session(gateway, "decline", [TYPE_CHECK_PRINTED, NOT_CHECKED])
    assert printed.is_error
    text = printed.content[0].text
    assert "nothing ran" not in text, text
    assert "1 tool call" in text
    assert failed.is_error
    assert "does not type-check, so nothing ran" in failed.content[0].text
    lines = journal.read_text().splitlines()
    assert sum(json.loads(line)["tool"] == "write_record" for line in lines) == 1


def test_runs_show_shows_the_whole_call_while_the_terminal_prompt_waits(project: Any) -> None:
    """Where the shortened prompt sends the person: `runs show` in another terminal."""
    gateway, journal = project
    shows: list[Any] = []

    def show_the_run(seen: bytes) -> None:
        found = re.search(rb"toolscript runs show (\S+)`", seen)
        assert found is not None, seen
        shows.append(toolscript_cli("runs", "show", found[1].decode(), cwd=gateway.directory))

    # (not the script of a run approved earlier)
    refused_on_a_terminal(gateway, "huge-asking.ts", HUGE + "// asking\n", show_the_run)
    [shown] = shows
    assert shown.returncode == 0, shown.stderr
    assert "records.delete_record" in shown.stdout
    assert '"echo hi' + " " * 20000 + TAIL + '"' in shown.stdout
    assert deleted_keys(journal) == []
