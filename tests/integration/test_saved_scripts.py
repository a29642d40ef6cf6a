"""Saved scripts end to end: a real MCP server, a real gateway, Deno's type checker and
sandbox, the CLI and the MCP face through the SDK's client."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    face_parameters,
    needs_semantic,
    records_server,
    toolscript_cli,
    wait_until,
)

RECORD_SIZES = """\
import { tools } from "toolscript";

/** Sizes of the records named by keys, in characters of their JSON. */
export default async function recordSizes(input: { keys: string[] }): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const key of input.keys) {
    sizes[key] = JSON.stringify(await tools.records.readRecord({ key })).length;
  }
  return sizes;
}
"""

TOTAL_SIZE = """\
import { scripts } from "toolscript";

export default async (input: { keys: string[] }): Promise<number> => {
  const sizes = await scripts.recordSizes(input);
  return Object.values(sizes).reduce((a, b) => a + b, 0);
};
"""


def config(journal: Path, **server: Any) -> dict[str, Any]:
    entry = records_server(env={"RECORDS_JOURNAL": str(journal)}, **server)
    return {"mcpServers": {"records": entry}, "search": {"semantic": False}}


@pytest.fixture
def project(tmp_path: Path) -> Any:
    gateway = GatewayProcess(config(tmp_path / "journal.jsonl"), tmp_path)
    try:
        yield gateway
    finally:
        gateway.stop()


def save(directory: Path, name: str, source: str, *args: str) -> Any:
    path = directory / f"{name}-draft.ts"
    path.write_text(source)
    return toolscript_cli("save", name, str(path), *args, cwd=directory)


def listing(directory: Path) -> dict[str, Any]:
    done = toolscript_cli("list-scripts", "--json", cwd=directory)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def run(directory: Path, name: str, *args: str) -> Any:
    return toolscript_cli("run", name, *args, cwd=directory)


def exec_code(directory: Path, code: str) -> Any:
    script = directory / "job.ts"
    script.write_text(code)
    return toolscript_cli("exec", str(script), cwd=directory)


def test_save_list_search_import_and_run(project: GatewayProcess) -> None:
    directory = project.directory
    saved = save(directory, "recordSizes", RECORD_SIZES)
    assert saved.returncode == 0, saved.stderr
    kept = directory / "toolscripts" / "recordSizes.ts"
    assert kept.read_text() == RECORD_SIZES
    assert "recordSizes(input: { keys: string[] })" in saved.stdout

    scripts = listing(directory)["scripts"]
    assert [(s["name"], s["status"]) for s in scripts] == [("recordSizes", "ok")]
    assert (
        scripts[0]["description"]
        == "Sizes of the records named by keys, in characters of their JSON."
    )

    # Another script imports it through the module, with the same checking as tools.
    ran = exec_code(
        directory,
        'import { scripts } from "toolscript";\n'
        'const sizes = await scripts.recordSizes({ keys: ["a", "b"] });\n'
        "return sizes.a + sizes.b;\n",
    )
    assert ran.returncode == 0, ran.stderr
    one = json.loads(run(directory, "recordSizes", "--input", '{"keys": ["a"]}').stdout)["a"]
    assert json.loads(ran.stdout) == 2 * one
    wrong = exec_code(
        directory,
        'import { scripts } from "toolscript";\nreturn await scripts.recordSizes({ keys: 3 });\n',
    )
    assert wrong.returncode == 1 and "TS2322" in wrong.stderr, wrong.stderr

    # A saved script that calls another saved script, with a description given on saving.
    saved = save(directory, "totalSize", TOTAL_SIZE, "--description", "Total size of records")
    assert saved.returncode == 0, saved.stderr
    assert (
        "/** Total size of records */\nexport default async"
        in (directory / "toolscripts" / "totalSize.ts").read_text()
    )
    total = run(directory, "totalSize", "--input", '{"keys": ["a", "b", "c"]}')
    assert total.returncode == 0, total.stderr
    assert json.loads(total.stdout) == 3 * one
    (directory / "input.json").write_text('{"keys": ["x"]}')
    assert json.loads(run(directory, "totalSize", "--input-file", "input.json").stdout) == one

    # Search finds saved scripts, marked as scripts.
    found = toolscript_cli("search", "total size of records", "--json", cwd=directory)
    hits = json.loads(found.stdout)["hits"]
    assert hits[0]["kind"] == "script" and hits[0]["name"] == "scripts.totalSize", hits
    assert hits[0]["call"].startswith("await scripts.totalSize(input)")
    tools_only = toolscript_cli("search", "read a record", "--json", cwd=directory)
    assert json.loads(tools_only.stdout)["hits"][0]["kind"] == "tool"

    # Wrong inputs: each a clear error, nothing run.
    journal_before = (directory / "journal.jsonl").read_text()
    field = run(directory, "recordSizes", "--input", '{"kes": ["a"]}')
    assert field.returncode == 1 and "'\"kes\"' does not exist" in field.stderr, field.stderr
    not_json = run(directory, "recordSizes", "--input", "{keys}")
    assert not_json.returncode == 2 and "not JSON" in not_json.stderr
    not_object = run(directory, "recordSizes", "--input", "[1]")
    assert not_object.returncode == 2 and "JSON object" in not_object.stderr
    unknown = run(directory, "recordSize", "--input", "{}")
    assert unknown.returncode == 1 and "no saved script named recordSize" in unknown.stderr
    assert "did you mean: recordSizes?" in unknown.stderr
    assert (directory / "journal.jsonl").read_text() == journal_before

    # A new version that changes its input breaks the script calling it: saving says so.
    renamed = RECORD_SIZES.replace("keys: string[]", "names: string[]").replace(
        "input.keys", "input.names"
    )
    replaced = save(directory, "recordSizes", renamed, "--force")
    assert replaced.returncode == 0, replaced.stderr
    assert "warning: totalSize no longer type-checks" in replaced.stderr
    scripts = {s["name"]: s["status"] for s in listing(directory)["scripts"]}
    assert scripts == {"recordSizes": "ok", "totalSize": "broken"}


def test_saving_refuses_what_does_not_check_and_keeps_what_is_there(
    project: GatewayProcess,
) -> None:
    directory = project.directory
    folder = directory / "toolscripts"
    bad = RECORD_SIZES.replace("readRecord({ key })", "readRecord({ key: 1 })")
    refused = save(directory, "recordSizes", bad)
    assert refused.returncode == 1, refused.stderr
    # named at the user's own file (toolscripts/recordSizes.ts was never written)
    assert "recordSizes-draft.ts:7:" in refused.stderr and "TS2322" in refused.stderr
    assert "toolscripts/recordSizes.ts" not in refused.stderr
    assert "does not type-check" in refused.stderr and not folder.exists()

    no_default = save(directory, "helper", "export const x = 1;\n")
    assert no_default.returncode == 1 and "default export" in no_default.stderr
    two_arguments = save(
        directory, "pair", "export default async function pair(a: { x: number }, b: string) {}\n"
    )
    assert two_arguments.returncode == 1
    assert "one object argument" in two_arguments.stderr, two_arguments.stderr
    scalar = save(directory, "scalar", "export default async function scalar(n: number) {}\n")
    assert scalar.returncode == 1 and "one object argument" in scalar.stderr
    for name in ("9lives", "weekly-report", "constructor", "class", "x" * 65):
        invalid = save(directory, name, RECORD_SIZES)
        assert invalid.returncode == 2, (name, invalid.stderr)
        assert f"cannot save a script as {name!r}" in invalid.stderr
    assert not folder.exists()

    assert save(directory, "recordSizes", RECORD_SIZES).returncode == 0
    again = save(directory, "recordSizes", RECORD_SIZES.replace("Sizes of", "Lengths of"))
    assert again.returncode == 1 and "--force" in again.stderr
    assert "Sizes of" in (folder / "recordSizes.ts").read_text()
    forced = save(
        directory, "recordSizes", RECORD_SIZES.replace("Sizes of", "Lengths of"), "--force"
    )
    assert forced.returncode == 0 and forced.stdout.startswith("replaced recordSizes")
    assert "Lengths of" in (folder / "recordSizes.ts").read_text()
    # Names differ by case only: one file on macOS, so it is the same script.
    clash = save(directory, "RecordSizes", RECORD_SIZES)
    assert clash.returncode == 1 and "recordSizes exists" in clash.stderr


def test_saved_scripts_get_no_more_than_any_script(project: GatewayProcess) -> None:
    directory = project.directory
    probe = """\
/** Tries what a toolscript may not do. */
export default async function probe(input: { what: string }): Promise<string> {
  try {
    if (input.what === "file") return await Deno.readTextFile("RECORD");
    if (input.what === "env") return Deno.env.get("HOME") ?? "no HOME";
    if (input.what === "net") return String((await fetch("https://example.com")).status);
    return String(new Deno.Command("PROGRAM").outputSync().code);
  } catch (error) {
    return `refused: ${(error as Error).name}`;
  }
}
"""
    secret = directory / "secret.txt"
    secret.write_text("the secret")
    probe = probe.replace("RECORD", str(secret)).replace("PROGRAM", sys.executable)
    assert save(directory, "probe", probe).returncode == 0
    for what in ("file", "env", "net", "process"):
        ran = run(directory, "probe", "--input", json.dumps({"what": what}))
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == "refused: NotCapable", (what, ran.stdout)


def wait_for_status(
    gateway: GatewayProcess, name: str, status: str, timeout: float = 30
) -> dict[str, Any]:
    """``list-scripts --json``'s scripts once ``name`` has ``status`` (the gateway's listing,
    which the command prints, asked over HTTP each 0.1 s while the gateway checks again)."""
    with contextlib.suppress(AssertionError):  # the command's listing says what there is
        wait_until(
            lambda: {s["name"]: s for s in gateway.client.get("scripts").json()["scripts"]},
            lambda scripts: scripts[name]["status"] == status,
            timeout,
            f"{name} {status}",
        )
    return {s["name"]: s for s in listing(gateway.directory)["scripts"]}


def test_a_tool_change_breaks_a_saved_script_which_is_kept(project: GatewayProcess) -> None:
    directory = project.directory
    assert save(directory, "recordSizes", RECORD_SIZES).returncode == 0
    assert save(directory, "totalSize", TOTAL_SIZE).returncode == 0
    # The server loses the tool the script calls: both break (the second through the first).
    project.config_path.write_text(
        json.dumps(config(directory / "journal.jsonl", excludeTools=["read_record"]))
    )
    scripts = wait_for_status(project, "totalSize", "broken")
    assert scripts["recordSizes"]["status"] == "broken"
    assert any("readRecord" in error for error in scripts["recordSizes"]["errors"])
    assert any("recordSizes" in error for error in scripts["totalSize"]["errors"])
    assert (directory / "toolscripts" / "recordSizes.ts").read_text() == RECORD_SIZES
    status = toolscript_cli("gateway", "status", cwd=directory)
    assert "saved scripts: 2, 2 broken" in status.stdout, status.stdout
    assert "Property 'readRecord' does not exist" in status.stdout
    health = json.loads(toolscript_cli("gateway", "status", "--json", cwd=directory).stdout)
    assert set(health["scripts"]["broken"]) == {"recordSizes", "totalSize"}
    broken = run(directory, "recordSizes", "--input", '{"keys": []}')
    assert broken.returncode == 1 and "does not type-check" in broken.stderr
    # Every other script still checks: a broken saved script is out of the module.
    other = exec_code(
        directory, 'import { tools } from "toolscript";\nreturn await tools.records.counter({});\n'
    )
    assert other.returncode == 0, other.stderr
    # The tool comes back: so do the scripts.
    project.config_path.write_text(json.dumps(config(directory / "journal.jsonl")))
    scripts = wait_for_status(project, "totalSize", "ok")
    assert scripts["recordSizes"]["status"] == "ok"
    assert run(directory, "totalSize", "--input", '{"keys": []}').stdout.strip() == "0"


def test_the_mcp_face_finds_runs_and_saves_scripts(project: GatewayProcess) -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    directory = project.directory
    assert save(directory, "recordSizes", RECORD_SIZES).returncode == 0
    parameters = face_parameters(project)

    async def session_work() -> dict[str, Any]:
        answers: dict[str, Any] = {}
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            answers["tools"] = [tool.name for tool in listed.tools]
            answers["search"] = await session.call_tool(
                "search_tools", {"query": "sizes of records in characters"}
            )
            answers["run"] = await session.call_tool(
                "run_script", {"name": "recordSizes", "input": {"keys": ["a"]}}
            )
            answers["wrong"] = await session.call_tool(
                "run_script", {"name": "recordSizes", "input": {"keys": "a"}}
            )
            answers["save"] = await session.call_tool(
                "save_script", {"name": "totalSize", "code": TOTAL_SIZE}
            )
            answers["refused"] = await session.call_tool(
                "save_script",
                {
                    "name": "broken",
                    "code": "export default async (i: { n: number }) => i.n.toUpperCase();\n",
                },
            )
            answers["execute"] = await session.call_tool(
                "execute",
                {
                    "code": 'import { scripts } from "toolscript";\nreturn await scripts.totalSize({ keys: ["a"] });'
                },
            )
        return answers

    answers = anyio.run(session_work)
    assert {"run_script", "save_script"} <= set(answers["tools"])
    first = answers["search"].structured_content["hits"][0]
    assert first["server"] == "script" and first["tool"] == "recordSizes", first
    assert (
        "script.recordSizes → await scripts.recordSizes(input)" in answers["search"].content[0].text
    )
    ran = answers["run"]
    assert not ran.is_error, ran.content[0].text
    size = ran.structured_content["result"]["a"]
    assert isinstance(size, int) and size > 0
    assert answers["wrong"].is_error and "TS2322" in answers["wrong"].content[0].text
    assert not answers["save"].is_error, answers["save"].content[0].text
    assert (directory / "toolscripts" / "totalSize.ts").exists()
    refused = answers["refused"]
    assert refused.is_error and "toolscripts/broken.ts:1:" in refused.content[0].text
    assert not (directory / "toolscripts" / "broken.ts").exists()
    executed = answers["execute"]
    assert not executed.is_error, executed.content[0].text
    assert executed.structured_content["result"] == size


@needs_semantic
def test_a_script_saved_with_semantic_search_on_is_found_by_the_next_search(
    tmp_path: Path,
) -> None:
    """With semantic search ready, a build's documents are switched in by the embedding
    task that runs after it: a search right after `save` (an agent looking for what it just
    saved, or the next session's first search) found nothing of the script for about 3 s.
    The save's answer now comes once search has it."""
    settings = config(tmp_path / "journal.jsonl")
    settings["search"] = {"semantic": True}
    gateway = GatewayProcess(settings, tmp_path)
    try:
        wait_until(
            lambda: gateway.client.get("search", params={"q": "read a record"}).json(),
            lambda answer: answer["mode"] == "hybrid",
            what="semantic search ready",
            timeout=240,
        )
        saved = save(tmp_path, "recordSizes", RECORD_SIZES)
        assert saved.returncode == 0, saved.stderr
        answer = gateway.client.get(
            "search", params={"q": "sizes of the records named by keys, in characters"}
        ).json()
        assert answer["mode"] == "hybrid", answer
        assert [hit["tool"] for hit in answer["hits"]][:1] == ["recordSizes"], answer["hits"]
    finally:
        gateway.stop()
