"""Where features meet, fourth pass (the others: test_features_meet.py to _meet3.py): one
real gateway with the records server (its journal counts what reached it) and a local tool
file whose function asks for approval; the real Deno, real SQLite, and the official MCP
Inspector's CLI for the MCP face. A person's "always", then the server's `env` changed by an
editor's save (rename, then in place) while a run waits for approval, and `approve RUN_ID`
after it; the kept output of a background run stopped for approval, the gateway restarted,
then the resume; learned result types, a standalone `doit`, then the server repointed
(get-types and the warm checker agree); a tool file edited while its call waits for
approval (`approve RUN_ID`, and the face's elicitation); semantic search across a reload
that swaps a server for one with the same tools; and `toolscript mcp` with its gateway in
its own process, driven by the Inspector, while a `doit` holds the build lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    NODE_BIN,
    RECORDS_SERVER,
    GatewayProcess,
    clean_env,
    face_parameters,
    gateway_cli,
    journal_of,
    needs_semantic,
    records_server,
    restarted,
    returning_counter,
    run_doit,
    run_id_of,
    save_config,
    wait_until,
)
from toolscript.pipeline.buildlock import hold_build_lock

OPS = '''def deploy(target: str) -> str:
    """Deploy the build to a target (asks first)."""
    return "deployed " + target
'''
OPS_EDITED = '''def deploy(target: str) -> str:
    """Deploy the build to a target (asks first; edited)."""
    return "edited " + target
'''


def config_of(
    journal: Path, records_args: list[str] | None = None, **records_env: str
) -> dict[str, Any]:
    """The project's config; ``records_env`` is added to the records server's env, and
    ``records_args`` repoint it (its identity)."""
    env = {"RECORDS_JOURNAL": str(journal), **records_env}
    records = records_server(env=env) | ({"args": records_args} if records_args else {})
    return {
        "mcpServers": {"records": records},
        "localTools": {"dir": "tools", "files": {"ops": {"policy": {"deploy": "ask"}}}},
        "search": {"semantic": False},
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    directory = tmp_path_factory.mktemp("features-meet4")
    journal = directory / "journal.jsonl"
    (directory / "tools").mkdir()
    (directory / "tools" / "ops.py").write_text(OPS)
    gateway = GatewayProcess(config_of(journal), directory)
    try:
        yield gateway, journal
    finally:
        gateway.stop()


def use_config(gateway: GatewayProcess, config: dict[str, Any]) -> None:
    """The project's config as ``config``, records restarted with it where it changed (the
    tests sharing the gateway leave it as they need it)."""
    if json.loads(gateway.config_path.read_text()) == config:
        return
    since = gateway.health()["servers"]["records"]["connected_at"]
    save_config(gateway, config, in_place=False)
    restarted(gateway, "records", since)


def background(gateway: GatewayProcess, code: str, *args: str) -> str:
    """Start ``code`` in the background; its run id once it stopped for approval."""
    started = gateway_cli(gateway, "exec", "--background", "--json", *args, code)
    assert started.returncode == 0, started.stderr
    run_id: str = json.loads(started.stdout)["run"]
    waited = gateway_cli(gateway, "runs", "wait", run_id, "--timeout", "60")
    assert waited.returncode == 120, (waited.stdout[-500:], waited.stderr)
    return run_id


def deletes(key: str) -> str:
    return f'import {{ tools }} from "toolscript";\nreturn await tools.records.deleteRecord({{ key: "{key}" }});\n'


def test_an_always_holds_until_an_editor_changes_the_servers_env_and_a_waiting_run_says_so(
    project: tuple[GatewayProcess, Path],
) -> None:
    """A person's "always" (`approve --tool`) x the server's identity x a config reload that
    changes only that server's `env` (an editor's rename, then an in-place write) x a run
    stopped for approval as the reload lands x `approve RUN_ID`: the "always" lets calls
    through until the env changes, then they ask again; a run that stopped before the
    change is approved after it, and its resume asks again, saying that the entry's env
    changed; nothing reaches the server that a person did not approve for it as it is."""
    gateway, journal = project
    use_config(gateway, config_of(journal))
    approved = gateway_cli(gateway, "approve", "--tool", "records.delete_record")
    assert approved.returncode == 0, approved.stderr
    before = len(journal_of(journal))
    ran = gateway_cli(gateway, "exec", deletes("always"))
    assert ran.returncode == 0, ran.stderr
    for step, in_place in enumerate((False, True)):
        run_id = background(gateway, deletes(f"w{step}")) if step else ""
        since = gateway.health()["servers"]["records"]["connected_at"]
        save_config(gateway, config_of(journal, RECORDS_EDIT=str(step)), in_place=in_place)
        restarted(gateway, "records", since)
        if not step:  # the "always" was for records before its env changed
            asked = gateway_cli(gateway, "exec", deletes("after-env"))
            assert asked.returncode == 120, (asked.stdout, asked.stderr)
            assert "records.delete_record needs approval" in asked.stderr, asked.stderr
            continue
        # the person approving is told at once that this approval would not hold: nothing
        # is recorded, and the resume stops at the call again for the server as it is now
        shown = gateway_cli(gateway, "approve", run_id)
        assert shown.returncode == 2, (shown.stdout, shown.stderr)
        assert f"run {run_id} stopped at a call of" in shown.stderr, shown.stderr
        assert "changed in the config since (its command, args, cwd, env," in shown.stderr
        assert "nothing was approved" in shown.stderr, shown.stderr
        resumed = gateway_cli(gateway, "exec", "--resume", run_id)
        assert resumed.returncode == 120, (resumed.stdout, resumed.stderr)
        assert "records.delete_record needs approval" in resumed.stderr, resumed.stderr
        again = run_id_of(resumed.stderr)
        assert gateway_cli(gateway, "approve", again, "--json").returncode == 0
        finished = gateway_cli(gateway, "exec", "--resume", again)
        assert finished.returncode == 0, (finished.stdout, finished.stderr)
    made = [e["arguments"]["key"] for e in journal_of(journal)[before:]]
    assert made == ["always", "w1"], made
    assert gateway_cli(gateway, "approve", "--revoke", "records.delete_record").returncode == 0
    use_config(gateway, config_of(journal))


PRINTS_THEN_ASKS = """import { tools } from "toolscript";
console.log("a".repeat(3000));
await tools.records.deleteRecord({ key: "restart" });
console.log("b".repeat(3000));
return "done";
"""
FIRST_LEG = "a" * 3000 + "\n"


def test_kept_output_of_a_stopped_run_outlives_a_gateway_restart_before_its_resume(
    tmp_path: Path,
) -> None:
    """Kept output x a background run cut past --max-output, then stopped for approval x
    the gateway stopped and started again x `approve RUN_ID` x a background resume: `runs
    wait --json` and `runs show --json` answer for both legs from the new gateway, and each
    leg's output file holds what it printed (the second, both legs')."""
    journal = tmp_path / "journal.jsonl"
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "ops.py").write_text(OPS)
    gateway = GatewayProcess(config_of(journal), tmp_path)
    try:
        run_id = background(gateway, PRINTS_THEN_ASKS, "--max-output", "1000")
    finally:
        gateway.stop()
    gateway = GatewayProcess(config_of(journal), tmp_path)
    try:
        waited = gateway_cli(gateway, "runs", "wait", run_id, "--json", "--timeout", "10")
        # the new gateway did not start that run: the wait answers by the run log, with the
        # run's own code (120: stopped for approval)
        assert waited.returncode == 120 and "by the run log" in waited.stderr, waited.stderr
        shown = json.loads(gateway_cli(gateway, "runs", "show", run_id, "--json").stdout)
        assert (shown["status"], shown["exit"]) == ("awaiting_approval", 120), shown
        assert Path(shown["output_file"]).read_text() == FIRST_LEG
        assert gateway_cli(gateway, "approve", run_id).returncode == 0
        resumed = gateway_cli(
            gateway, "exec", "--resume", run_id, "--background", "--json", "--max-output", "1000"
        )
        assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
        second_id = json.loads(resumed.stdout)["run"]
        waited = gateway_cli(gateway, "runs", "wait", second_id, "--json", "--timeout", "60")
        second = json.loads(waited.stdout)
        assert second["exit"] == 123, second
        shown = json.loads(gateway_cli(gateway, "runs", "show", second_id, "--json").stdout)
        assert shown["resumed_from"] == run_id, shown
        kept = Path(shown["output_file"]).read_text()
        assert kept.startswith(FIRST_LEG + "b" * 3000 + "\n") and '"done"' in kept, kept[-200:]
        first = json.loads(gateway_cli(gateway, "runs", "show", run_id, "--json").stdout)
        assert (first["status"], first["exit"]) == ("resumed", 120), first
        assert Path(first["output_file"]).read_text() == FIRST_LEG
        made = [e["arguments"]["key"] for e in journal_of(journal)]
        assert made == ["restart"], made
    finally:
        gateway.stop()


# type-checks only while the result type of records.counter is known (learned)
TYPED_COUNTER = """import { tools } from "toolscript";
const counted = await tools.records.counter({ step: 2 });
const step: number = counted.step;
return step;
"""


def test_types_learned_then_doit_then_the_server_repointed_agree_in_get_types_and_the_checker(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Result types learned by the gateway x standalone `doit` (run while the gateway serves)
    x the server repointed by a config reload x `doit` again x the warm checker: while the
    type is learned, get-types shows it and a script using it passes the check; once the
    server is another program, get-types drops it and the checker holds a module without it
    (the script fails its check), and a standalone `doit` after that does not bring it back
    in either."""
    gateway, journal = project
    use_config(gateway, config_of(journal))
    assert gateway_cli(gateway, "exec", returning_counter(1)).returncode == 0
    wait_until(
        lambda: gateway_cli(gateway, "get-types", "records", "counter").stdout,
        lambda types: "inferred from" in types,
        what="the learned result type of records.counter",
    )
    typed = gateway_cli(gateway, "exec", TYPED_COUNTER)
    assert (typed.returncode, typed.stdout.strip()) == (0, "2"), typed.stderr
    built = run_doit(gateway.directory)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "inferred from" in gateway_cli(gateway, "get-types", "records", "counter").stdout
    typed = gateway_cli(gateway, "exec", TYPED_COUNTER)
    assert typed.returncode == 0, typed.stderr

    since = gateway.health()["servers"]["records"]["connected_at"]
    repointed = config_of(journal, records_args=["-u", str(RECORDS_SERVER)])
    save_config(gateway, repointed, in_place=True)
    restarted(gateway, "records", since)
    for step in ("reload", "doit"):
        if step == "doit":
            built = run_doit(gateway.directory)
            assert built.returncode == 0, built.stdout + built.stderr
            artifact = (gateway.directory / ".toolscript" / "tools.ts").read_text()
            assert "RecordsCounterResult" not in artifact, step
        wait_until(
            lambda: gateway_cli(gateway, "get-types", "records", "counter").stdout,
            lambda types: "counter" in types and "inferred from" not in types,
            what=f"records.counter typed without the other program's results ({step})",
        )
        untyped = gateway_cli(gateway, "exec", TYPED_COUNTER)
        assert untyped.returncode == 1, (step, untyped.stdout, untyped.stderr)
        assert "counted" in untyped.stderr, (step, untyped.stderr)
    use_config(gateway, config_of(journal))


DEPLOYS = """import { tools } from "toolscript";
return await tools.ops.deploy({ target: "prod" });
"""


def test_a_tool_file_edited_while_its_call_waits_for_approval(
    project: tuple[GatewayProcess, Path],
) -> None:
    """A local tool file x an `ask` rule x a run stopped for approval x the file edited
    before `approve RUN_ID` x resume: the resume runs the file as it is now, once (the
    approval is for the call; the file is the project's code, as the config is)."""
    gateway, _ = project
    run_id = background(gateway, DEPLOYS)
    tool_file = gateway.directory / "tools" / "ops.py"
    tool_file.write_text(OPS_EDITED)
    wait_until(
        lambda: gateway_cli(gateway, "get-types", "ops", "deploy").stdout,
        lambda types: "asks first; edited" in types,  # the edited file served
        what="ops.deploy after its file's edit",
    )
    shown = gateway_cli(gateway, "approve", run_id)
    assert shown.returncode == 0, shown.stderr
    resumed = gateway_cli(gateway, "exec", "--resume", run_id)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert json.loads(resumed.stdout) == "edited prod"
    tool_file.write_text(OPS)


def test_a_tool_file_edited_while_the_face_asks_about_its_call_runs_as_edited(
    project: tuple[GatewayProcess, Path],
) -> None:
    """A local tool file x an `ask` rule x `toolscript mcp` asking through elicitation x the
    file edited (and taken in by the gateway) while the question is out: the "yes" lets the
    call run once, as the file now is, and the answer is the script's result (the edit did
    not lose the call waiting for its answer)."""
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    gateway, _ = project
    tool_file = gateway.directory / "tools" / "ops.py"
    tool_file.write_text(OPS)
    wait_until(
        lambda: gateway_cli(gateway, "get-types", "ops", "deploy").stdout,
        lambda types: "asks first)" in types,
        what="ops.deploy as first written",
    )
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        tool_file.write_text(OPS_EDITED)
        await anyio.to_thread.run_sync(
            lambda: wait_until(
                lambda: gateway_cli(gateway, "get-types", "ops", "deploy").stdout,
                lambda types: "asks first; edited)" in types,
                what="ops.deploy as edited",
            )
        )
        return mcp_types.ElicitResult(action="accept", content={"always": False})

    async def execute() -> Any:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            return await session.call_tool("execute", {"code": DEPLOYS})

    try:
        answer = anyio.run(execute)
    finally:
        tool_file.write_text(OPS)
    assert len(asked) == 1 and "ops.deploy" in asked[0], asked
    assert not answer.is_error, answer.content
    assert answer.structured_content == {"result": "edited prod"}, answer


def inspector_bin() -> str:
    path = NODE_BIN / "mcp-inspector"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run npm ci --prefix tests/servers")
    return str(path)


def test_the_inspector_drives_the_in_process_face_through_a_doits_build(tmp_path: Path) -> None:
    """`toolscript mcp` with its gateway in its own process (the default) x no gateway
    running x a `doit` holding the build lock x the Inspector's CLI (a client that asks for
    no progress): the face's first `execute` waits for that build (its gateway says so on
    /runtime/building), then answers with what doit built, a result the Inspector's SDK
    validates against the tool's outputSchema, and the face leaves nothing running."""
    directory = tmp_path / "inspected"
    directory.mkdir()
    (directory / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"records": records_server()}, "search": {"semantic": False}})
    )
    built = run_doit(directory)
    assert built.returncode == 0, built.stdout + built.stderr
    held = hold_build_lock(directory / ".toolscript", lambda: None, wait=10)
    assert held is not None
    code = 'import { tools } from "toolscript"; return await tools.records.counter({ step: 4 });'
    face_log = tmp_path / "face.log"
    # the face's log (the Inspector reads its stderr and shows none of it) goes to a file
    face = f'exec "$0" -m toolscript mcp 2>>"{face_log}"'
    inspector = subprocess.Popen(
        [
            inspector_bin(),
            "--cli",
            "/bin/sh",
            "-c",
            face,
            sys.executable,
            "--method",
            "tools/call",
            "--tool-name",
            "execute",
            "--tool-arg",
            f"code={code}",
        ],
        cwd=directory,
        env=clean_env(TOOLSCRIPT_LOG_LEVEL="INFO"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: face_log.read_text() if face_log.exists() else "",
            lambda log: "waiting for another build" in log,
            timeout=60,
            what="the face's gateway waiting for the doit's build",
        )
        os.close(held)
        held = None
        out, err = inspector.communicate(timeout=120)
    finally:
        if held is not None:
            os.close(held)
        if inspector.poll() is None:
            inspector.kill()
            inspector.communicate()
    assert inspector.returncode == 0, err
    result = json.loads(out)
    assert not result.get("isError"), result
    assert result["structuredContent"] == {"result": {"step": 4}}, result
    log = face_log.read_text()
    assert "artifacts: 0 tasks ran" in log, log


def search_servers(gateway: GatewayProcess, query: str, mode: str) -> tuple[str, set[str]]:
    """The mode a search answered in and the servers of its hits."""
    response = gateway.client.get("search", params={"q": query, "mode": mode})
    assert response.status_code == 200, response.text
    answer = response.json()
    return answer["mode"], {hit["server"] for hit in answer["hits"]}


def embedded_rows(directory: Path) -> int:
    import sqlite3

    with sqlite3.connect(directory / ".toolscript" / "embeddings.db") as db:
        return int(db.execute("select count(*) from embeddings").fetchone()[0])


@needs_semantic
def test_a_reload_swapping_a_server_for_one_with_the_same_tools_leaves_no_stale_search(
    tmp_path: Path,
) -> None:
    """Semantic search (its worker process, the vectors on disk) x a config reload that
    removes a server and adds another with the same tool names: from the moment the gateway
    no longer has the removed server, no search (semantic, hybrid) answers with it; once the
    new one is embedded, search finds its tools by meaning; and the removed server's
    vectors are gone from embeddings.db (as many rows as before)."""
    query = "erase one stored entry permanently"

    def config(name: str) -> dict[str, Any]:
        return {"mcpServers": {name: records_server()}, "search": {"semantic": True}}

    def ready(name: str) -> None:
        gateway.wait_for_health(
            lambda health: (
                list(health["servers"]) == [name]
                and health["servers"][name]["state"] == "connected"
                and health["search"]["semantic"] == "ready"
                and health["search"]["tools"] == health["tools"]
            ),
            timeout=180,
            what=f"{name}'s tools embedded",
        )
        wait_until(
            lambda: search_servers(gateway, query, "hybrid"),
            lambda answer: answer == ("hybrid", {name}),
            timeout=60,
            what=f"a hybrid answer with {name}'s tools",
            log=lambda: gateway.log,
        )

    gateway = GatewayProcess(config("alpha"), tmp_path)
    try:
        ready("alpha")
        rows = embedded_rows(tmp_path)
        assert rows > 0
        save_config(gateway, config("beta"), in_place=False)
        gateway.wait_for_health(
            lambda health: "alpha" not in health["servers"], what="alpha removed"
        )
        for mode in ("semantic", "hybrid", "keyword"):
            _, servers = search_servers(gateway, query, mode)
            assert "alpha" not in servers, (mode, servers)
        ready("beta")
        assert search_servers(gateway, query, "semantic") == ("semantic", {"beta"})
        assert embedded_rows(tmp_path) == rows
    finally:
        gateway.stop()
