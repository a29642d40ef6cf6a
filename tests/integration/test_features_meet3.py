"""Where features meet, third pass (the others: test_features_meet.py, test_features_meet2.py):
one real gateway with the records server (its journal counts what reached it), a second
records server that the config renames, and local tool files, one of which asks for a
Python no interpreter has; the real Deno and real SQLite. Output past --max-output in a
background run that stops for approval and is resumed (both legs kept, the stop's exit
code in the log); result types learned from runs, then `doit` (twice: no work the second
time), then the server renamed in the config (get-types and the checker follow the new
name); a tool file refused for its `requires-python` (not in the module, not found by
search, named failed by `gateway status`); and `toolscript mcp` with no gateway running
while a build of the project holds its lock (a `doit`)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    RECORDS_SERVER,
    GatewayProcess,
    clean_env,
    face_parameters,
    gateway_cli,
    journal_of,
    records_server,
    restarted,
    returning_counter,
    run_doit,
    save_config,
    wait_until,
)
from toolscript.pipeline.buildlock import hold_build_lock
from toolscript.plumbing.paths import project_state_dir

FUTURE = '''# /// script
# requires-python = ">=3.99"
# ///
def forecast_weather(city: str) -> str:
    """Forecast tomorrow's weather over a city."""
    return city
'''


SECRET = "sk-live-meet3-0123456789abcdef"


def config_of(
    journal: Path, shelf: str = "shelf", records_args: list[str] | None = None, **shelf_env: str
) -> dict[str, Any]:
    """The project's config; ``records_args`` repoint the records server (its identity)."""
    records = records_server(env={"RECORDS_JOURNAL": str(journal), "RECORDS_TOKEN": "${MEET3}"})
    return {
        "mcpServers": {
            "records": records | ({"args": records_args} if records_args else {}),
            shelf: records_server(env=shelf_env),
        },
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    directory = tmp_path_factory.mktemp("features-meet3")
    journal = directory / "journal.jsonl"
    (directory / "tools").mkdir()
    (directory / "tools" / "future.py").write_text(FUTURE)
    gateway = GatewayProcess(config_of(journal), directory, env={"MEET3": SECRET})
    try:
        yield gateway, journal
    finally:
        gateway.stop()


def kept_outputs(gateway: GatewayProcess) -> dict[str, str]:
    """The kept output files of the project's runs, by run id."""
    runs = project_state_dir(gateway.directory) / "runs"
    return {path.parent.name: path.read_text() for path in runs.glob("*/output.txt")}


PRINTS_THEN_ASKS = """import { tools } from "toolscript";
console.log("a".repeat(3000));
await tools.records.deleteRecord({ key: "kept" });
console.log("b".repeat(3000));
return "done";
"""


def test_a_background_run_cut_then_stopped_for_approval_keeps_both_legs_and_its_stop(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Kept output x background runs x approval x resume x the run log: a background run
    prints past --max-output, then stops for approval; `runs wait` ends 120 naming the kept
    file, and the log says 120 too (it said 123, the cut's code, while the shell saw 120);
    resumed, the second leg keeps the whole output of both legs in its own file; `runs
    show` names each leg's file (it named none: the path was said once, on stderr)."""
    gateway, journal = project
    before = len(journal_of(journal))
    started = gateway_cli(
        gateway, "exec", "--background", "--json", "--max-output", "1000", PRINTS_THEN_ASKS
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    waited = gateway_cli(gateway, "runs", "wait", run_id, "--timeout", "60")
    assert waited.returncode == 120, (waited.stdout[-500:], waited.stderr)
    assert "output cut: 3001 of its 3001 bytes" in waited.stderr, waited.stderr
    assert "records.delete_record needs approval" in waited.stderr
    assert kept_outputs(gateway)[run_id] == "a" * 3000 + "\n"
    shown = json.loads(gateway_cli(gateway, "runs", "show", run_id, "--json").stdout)
    assert (shown["status"], shown["exit"]) == ("awaiting_approval", 120), shown
    assert Path(shown["output_file"]).read_text() == kept_outputs(gateway)[run_id]

    assert gateway_cli(gateway, "approve", run_id).returncode == 0
    resumed = gateway_cli(gateway, "exec", "--resume", run_id)
    assert resumed.returncode == 123, (resumed.stdout[-500:], resumed.stderr)
    second = json.loads(gateway_cli(gateway, "runs", "--json").stdout)[0]
    assert second["resumed_from"] == run_id
    assert second["id"] in resumed.stderr  # the whole output's file is named
    kept = kept_outputs(gateway)
    assert kept[second["id"]].startswith("a" * 3000 + "\n" + "b" * 3000 + "\n"), kept
    assert '"done"' in kept[second["id"]]
    first = json.loads(gateway_cli(gateway, "runs", "show", run_id, "--json").stdout)
    assert (first["status"], first["exit"]) == ("resumed", 120), first
    for leg in (run_id, second["id"]):  # `runs show` names each leg's file
        text = gateway_cli(gateway, "runs", "show", leg).stdout
        assert f"the whole of it is kept in {project_state_dir(gateway.directory)}" in text, text
        assert f"{leg}/output.txt" in text, text
    made = [(e["tool"], e["arguments"]) for e in journal_of(journal)[before:]]
    assert made == [("delete_record", {"key": "kept"})]


def test_a_tool_file_refused_for_its_python_is_named_failed_and_offers_nothing(
    project: tuple[GatewayProcess, Path],
) -> None:
    """`requires-python` x search x the module x `gateway status` x `doit`: a tool file
    that needs a Python the gateway's is not is failed with the reason, its function is in
    neither the served module nor search, and a standalone `doit` says so and builds the
    rest."""
    gateway, _journal = project
    status = gateway_cli(gateway, "gateway", "status")
    line = next(row for row in status.stdout.splitlines() if row.startswith("future\t"))
    assert "failed" in line and "needs Python >=3.99" in line, status.stdout
    assert "forecastWeather" not in gateway.client.get("runtime/tools.ts").text
    found = gateway_cli(gateway, "search", "forecast tomorrow's weather", "--json")
    assert found.returncode == 0, found.stderr
    assert all(hit["server"] != "future" for hit in json.loads(found.stdout)["hits"])
    types = gateway_cli(gateway, "get-types", "future", "forecast_weather")
    assert types.returncode != 0
    assert "needs Python >=3.99" in types.stderr, types.stderr
    # what to do: the file's requires-python or the gateway's Python, not the config entry
    assert "change requires-python in the file" in types.stderr, types.stderr
    assert "uv venv --python VERSION" in types.stderr, types.stderr
    assert "fix the tool file" in types.stderr and "fix its entry" not in types.stderr


def test_doit_after_learned_types_keeps_them_and_a_second_doit_does_nothing(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Result types learned by the gateway x standalone `doit` x `doit` again: the learned
    type is in the artifact `doit` writes, and a second `doit` with nothing changed runs no
    task but asking the failed tool file again."""
    gateway, _journal = project
    ran = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript"; return await tools.shelf.counter({ step: 4 });',
    )
    assert ran.returncode == 0, ran.stderr
    wait_until(
        lambda: gateway_cli(gateway, "get-types", "shelf", "counter").stdout,
        lambda types: "inferred from 1 result" in types,
        what="the learned type of shelf.counter",
    )
    first = run_doit(gateway.directory, env={"MEET3": SECRET})
    assert first.returncode == 0, first.stdout + first.stderr
    artifact = (gateway.directory / ".toolscript" / "tools.ts").read_text()
    assert "inferred from 1 result" in artifact
    again = run_doit(gateway.directory, env={"MEET3": SECRET})
    assert again.returncode == 0, again.stdout + again.stderr
    ran_tasks = [line for line in again.stdout.splitlines() if line.startswith(".")]
    assert ran_tasks == [".  fetch:future"], again.stdout
    assert (gateway.directory / ".toolscript" / "tools.ts").read_text() == artifact


def test_a_tool_file_refused_for_its_python_serves_once_its_requires_python_is_changed(
    project: tuple[GatewayProcess, Path],
) -> None:
    """What the refusal says to do works without a restart: the file's requires-python
    changed, the gateway loads it again and offers its tool."""
    gateway, _journal = project
    future = gateway.directory / "tools" / "future.py"
    future.write_text(FUTURE.replace(">=3.99", ">=3.8"))  # (after the doit test: it counts on
    wait_until(  # the refusal)
        lambda: gateway.client.get("runtime/tools.ts").text,
        lambda module: "forecastWeather" in module,
        what="the tool file loaded again once its requires-python was changed",
    )
    status = gateway_cli(gateway, "gateway", "status")
    line = next(row for row in status.stdout.splitlines() if row.startswith("future\t"))
    assert "connected" in line, status.stdout


DELETES = """import { tools } from "toolscript";
return await tools.records.deleteRecord({ key: "edited" });
"""


def test_a_config_saved_by_an_editor_while_a_background_run_waits_binds_its_approval(
    project: tuple[GatewayProcess, Path],
) -> None:
    """A config edit saved by an editor (rename, then in-place truncate and write) x a
    background run stopped for approval x `approve RUN_ID` x resume: an edit of another
    server leaves the approval to the records server it stopped for (the resume makes the
    call); an edit that repoints records at another command: `approve` says so and approves
    nothing, and the resume stops at the call again instead of going to a server nobody
    approved it for (it went)."""
    gateway, journal = project
    before = len(journal_of(journal))
    for in_place, repoint in ((False, False), (True, True)):
        started = gateway_cli(gateway, "exec", "--background", "--json", DELETES)
        assert started.returncode == 0, started.stderr
        run_id = json.loads(started.stdout)["run"]
        waited = gateway_cli(gateway, "runs", "wait", run_id, "--timeout", "60")
        assert waited.returncode == 120, (waited.stdout, waited.stderr)
        changed = "records" if repoint else "shelf"
        since = gateway.health()["servers"][changed]["connected_at"]
        edited = config_of(
            journal,
            records_args=["-u", str(RECORDS_SERVER)] if repoint else None,
            **({} if repoint else {"SHELF_EDITED": "1"}),
        )
        save_config(gateway, edited, in_place=in_place)
        restarted(gateway, changed, since)
        approved = gateway_cli(gateway, "approve", run_id)
        if repoint:  # said before the person decides: the approval would not hold
            assert approved.returncode != 0, approved.stdout
            assert "its entry changed in the config since" in approved.stderr, approved.stderr
        else:
            assert approved.returncode == 0, approved.stderr
        resumed = gateway_cli(gateway, "exec", "--resume", run_id)
        made = [e["tool"] for e in journal_of(journal)[before:]]
        if repoint:
            assert resumed.returncode == 120, (resumed.stdout, resumed.stderr)
            assert "records.delete_record needs approval" in resumed.stderr, resumed.stderr
            assert made == ["delete_record"], made  # only the first run's
        else:
            assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
            assert json.loads(resumed.stdout) == {"key": "edited", "deleted": False}
            assert made == ["delete_record"], made
    assert gateway.health()["config"]["error"] is None


def test_an_always_given_through_the_face_holds_until_the_server_is_repointed(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Approval through the MCP face (elicitation) x masking x "always" x the server's
    identity x learned result types: the question shows the configured secret as `***` (as
    does the run log), the "always" lets the next run call without asking, and once the
    config points records at another command the face asks again (the answer "no" refuses
    the call) and the result type learned from the other program is dropped (it typed the
    new program's tool)."""
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    gateway, journal = project
    asked: list[str] = []
    answers = [{"always": True}, None]

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        answer = answers[min(len(asked), len(answers)) - 1]
        if answer is None:
            return mcp_types.ElicitResult(action="decline")
        return mcp_types.ElicitResult(action="accept", content=answer)

    code = f"""import {{ tools }} from "toolscript";
return await tools.records.deleteRecord({{ key: "t-{SECRET}" }});
"""

    async def execute() -> Any:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            return await session.call_tool("execute", {"code": code})

    before = len(journal_of(journal))
    for _ in range(2):  # asked once, then approved for good
        answer = anyio.run(execute)
        assert not answer.is_error, answer.content
    assert len(asked) == 1, asked
    assert "records.delete_record" in asked[0] and "***" in asked[0]
    assert SECRET not in asked[0] and SECRET[-12:] not in asked[0]
    runs = gateway_cli(gateway, "runs", "--json")
    shown = gateway_cli(gateway, "runs", "show", json.loads(runs.stdout)[1]["id"], "--json")
    assert "delete_record" in shown.stdout and "***" in shown.stdout
    assert SECRET not in shown.stdout + runs.stdout
    assert [e["tool"] for e in journal_of(journal)[before:]] == ["delete_record"] * 2

    wait_until(
        lambda: gateway_cli(gateway, "get-types", "records", "delete_record").stdout,
        lambda types: "inferred from" in types,
        what="the result type learned for records.delete_record",
    )

    since = gateway.health()["servers"]["records"]["connected_at"]
    now = json.loads(gateway.config_path.read_text())["mcpServers"]["records"]["args"]
    other = ["-u", str(RECORDS_SERVER)] if now == [str(RECORDS_SERVER)] else None
    save_config(gateway, config_of(journal, records_args=other), in_place=False)
    restarted(gateway, "records", since)
    # another program's results no longer type its tools (they were kept)
    wait_until(
        lambda: gateway_cli(gateway, "get-types", "records", "delete_record").stdout,
        lambda types: "RecordsDeleteRecordParams" in types and "inferred from" not in types,
        what="records.delete_record typed without what the other program taught",
    )
    refused = anyio.run(execute)
    assert refused.is_error
    assert len(asked) == 2, asked
    assert "the user refused this call" in str(refused.content)
    assert [e["tool"] for e in journal_of(journal)[before:]] == ["delete_record"] * 2


def test_a_server_renamed_in_the_config_is_checked_and_typed_by_its_new_name(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Learned result types x get-types x the warm checker x a config reload renaming a
    server: the checker takes the new module (the old name is a type error naming the new
    one), get-types answers for the new name, and the old name's learned type is not given
    to it (types are learned per name; it learns again)."""
    gateway, journal = project
    gateway.config_path.write_text(json.dumps(config_of(journal, shelf="ledger")))
    wait_until(
        lambda: gateway.client.get("runtime/tools.ts").text,
        lambda module: "ledger: {" in module and "shelf: {" not in module,
        what="the renamed server in the module",
    )
    gateway.wait_for_health(lambda health: health["servers"]["ledger"]["state"] == "connected")
    old = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript"; return await tools.shelf.counter({ step: 1 });',
    )
    assert old.returncode == 1, old.stderr
    assert "Property 'shelf' does not exist" in old.stderr and "ledger" in old.stderr
    new = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript"; return await tools.ledger.counter({ step: 5 });',
    )
    assert new.returncode == 0, new.stderr
    assert json.loads(new.stdout) == {"step": 5}
    types = wait_until(
        lambda: gateway_cli(gateway, "get-types", "ledger", "counter").stdout,
        lambda found: "inferred from 1 result" in found,
        what="the type ledger.counter learned",
    )
    assert "LedgerCounterResult" in types


@pytest.mark.parametrize("face_gateway", ["inprocess", "process"])
def test_the_faces_first_execute_during_a_doit_says_it_waits_then_serves_doits_build(
    tmp_path: Path, face_gateway: str
) -> None:
    """The build lock x `toolscript mcp` with no gateway running x `doit`: while a build of
    the project holds the lock (here held by the test, as `doit` holds it for its run), the
    face's first `execute` tells its client why it waits, as MCP progress (it said nothing
    until the build ended, up to 600 s); once the lock is let go, the face's gateway finds
    doit's artifacts up to date (no task runs) and the script runs. So too with a gateway
    process of the face's own (TOOLSCRIPT_FACE_GATEWAY=process), whose routes wait for that
    build: the face asks it whether it waits (it said nothing, then timed out at 30 s)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    directory = tmp_path / "face-project"
    directory.mkdir()
    (directory / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"records": records_server()}, "search": {"semantic": False}})
    )
    built = run_doit(directory)
    assert built.returncode == 0, built.stdout + built.stderr
    held: list[int | None] = [hold_build_lock(directory / ".toolscript", lambda: None, wait=10)]
    assert held[0] is not None
    messages: list[str | None] = []

    def let_go() -> None:
        descriptor, held[0] = held[0], None
        if descriptor is not None:
            os.close(descriptor)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)
        let_go()  # told: the "doit" ends

    face_log = tmp_path / "face.log"
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp"],
        cwd=str(directory),
        env=clean_env(TOOLSCRIPT_LOG_LEVEL="INFO", TOOLSCRIPT_FACE_GATEWAY=face_gateway),
    )

    async def work() -> Any:
        with face_log.open("w") as errlog:
            async with (
                stdio_client(parameters, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                async with anyio.create_task_group() as guard:
                    guard.start_soon(let_go_at_last)
                    result = await session.call_tool(
                        "execute",
                        {"code": returning_counter(3)},
                        progress_callback=on_progress,
                    )
                    guard.cancel_scope.cancel()
                return result

    async def let_go_at_last() -> None:
        # Never told (the old face): the "doit" ends anyway, so the test fails, not hangs.
        await anyio.sleep(30)
        let_go()

    try:
        result = anyio.run(work)
    finally:
        let_go()
    assert messages[:1] == [
        "waiting for a build of this project's tools under way in another process (a `doit`?);"
        " the script runs once it ends"
    ], messages
    assert not result.is_error, result.content
    assert result.structured_content == {"result": {"step": 3}}
    log = face_log.read_text()
    assert "waiting for another build" in log
    assert "artifacts: 0 tasks ran" in log, log
