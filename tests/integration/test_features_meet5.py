"""Where features meet, fifth pass (the others: test_features_meet.py to _meet4.py): one real
gateway with the records server (an `ask` rule on one of its tools), the real Deno and real
SQLite, the `mcp` SDK's client for the MCP face. An `execute` the client cancels while its
script sleeps, and while the person is asked to approve its call (the run's record says
stopped, not failed by the kill; the question's call is left for nobody to approve; the
script's Deno is gone; the next execute runs); a script file that starts with a shebang
(after a byte order mark too) and one that imports a local file, run as `toolscript FILE`;
and the Claude Code plugin's SessionStart beside a gateway started by hand for the same
project (which `gateway status` then names), that gateway then killed -9."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    face_parameters,
    gateway_cli,
    records_server,
    toolscript_cli,
    wait_for_exit,
    wait_until,
)
from tests.integration.test_plugin import hook, pid_of


def config_of(journal: Path) -> dict[str, Any]:
    return {
        "mcpServers": {
            "records": records_server(
                env={"RECORDS_JOURNAL": str(journal)}, policy={"write_record": "ask"}
            )
        }
    }


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("features-meet5")
    running = GatewayProcess(config_of(directory / "journal.jsonl"), directory)
    try:
        yield running
    finally:
        running.stop()


def run_record(gateway: GatewayProcess, run_id: str) -> dict[str, Any]:
    shown = gateway_cli(gateway, "runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    record: dict[str, Any] = json.loads(shown.stdout)
    return record


SLEEPS = 'import { progress } from "toolscript"; progress("pid " + Deno.pid); await new Promise((r) => setTimeout(r, 600000)); return 1'
ASKS = 'import { tools, progress } from "toolscript"; progress("pid " + Deno.pid); return await tools.records.writeRecord({ key: "k", text: "cancelled" })'


@pytest.mark.parametrize("script", ["sleeps", "asks"])
def test_an_execute_the_client_cancels_is_stopped_and_the_next_one_runs(
    gateway: GatewayProcess, script: str
) -> None:
    """The client cancels (the SDK sends notifications/cancelled) once the script runs, or
    once the person is asked about its call. The face killed the script's Deno, which the
    run log recorded as a failure of its own (exit 137); the question's call could be left
    awaiting an approval."""
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    code = SLEEPS if script == "sleeps" else ASKS
    pids: list[int] = []
    asked: list[str] = []

    async def work() -> Any:
        reached = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message and message.startswith("pid "):
                pids.append(int(message.split()[1]))
                if script == "sleeps" or asked:
                    reached.set()

        async def answer(context: Any, params: Any) -> mcp_types.ElicitResult:
            asked.append(params.message)
            if pids:  # the question may come before the script's progress report does
                reached.set()
            await anyio.sleep_forever()
            raise AssertionError("never answered")

        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write, elicitation_callback=answer) as session,
        ):
            await session.initialize()
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await session.call_tool(
                        "execute", {"code": code}, progress_callback=on_progress
                    )

                group.start_soon(call)
                with anyio.fail_after(120):
                    await reached.wait()
                group.cancel_scope.cancel()  # the SDK tells the face: notifications/cancelled
            after = await session.call_tool("execute", {"code": "return 2"})
            return after

    after = anyio.run(work)
    assert not after.is_error, after.content
    assert after.structured_content == {"result": 2}
    assert len(pids) == 1, pids
    wait_for_exit(pids[0], 10)  # the script's Deno is gone
    assert script == "sleeps" or "writeRecord" in asked[0] or "write_record" in asked[0], asked
    listed = gateway_cli(gateway, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    ours = [run for run in json.loads(listed.stdout) if run["origin"] == "mcp"]
    cancelled = run_record(gateway, ours[1]["id"])  # (newest first: the execute after it)
    assert cancelled["status"] == "stopped", cancelled
    refused = gateway_cli(gateway, "approve", cancelled["id"])
    assert refused.returncode == 2, refused.stdout
    assert "is not waiting for an approval (stopped)" in refused.stderr, refused.stderr
    journal = gateway.directory / "journal.jsonl"
    assert "cancelled" not in (journal.read_text() if journal.exists() else "")


SHEBANG = "#!/usr/bin/env -S toolscript exec\n"


@pytest.mark.parametrize("start", ["", "\ufeff"], ids=["shebang", "bom-shebang"])
def test_a_script_file_with_a_shebang_runs_and_one_importing_a_local_file_is_refused(
    gateway: GatewayProcess, start: str
) -> None:
    """A file `#!/usr/bin/env toolscript` that returns a value ran as a SyntaxError at its
    first line (the wrapper's head took it); a local import was refused in a URL's words."""
    script = gateway.directory / f"count{len(start)}.ts"
    script.write_text(
        start
        + SHEBANG
        + 'import { tools } from "toolscript";\n'
        + "const counted = await tools.records.counter({ step: 3 });\n"
        + "return counted;\n",
        encoding="utf-8",
    )
    ran = gateway_cli(gateway, script.name)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout.strip().splitlines()[-1]) == {"step": 3}
    broken = gateway.directory / f"broken{len(start)}.ts"
    broken.write_text(start + SHEBANG + "const x: number = 1;\nreturn x.nope;\n", encoding="utf-8")
    failed = gateway_cli(gateway, broken.name)
    assert failed.returncode == 1, failed.stderr
    assert f"{broken.name}:3:" in failed.stderr, failed.stderr  # the user's own line
    (gateway.directory / "lib.ts").write_text("export const x = 1;\n")
    importing = gateway.directory / f"imports{len(start)}.ts"
    importing.write_text(start + SHEBANG + 'import { x } from "./lib.ts";\nreturn x;\n')
    refused = gateway_cli(gateway, importing.name)
    assert refused.returncode == 1, refused.stdout
    assert "scripts cannot import local files" in refused.stderr, refused.stderr
    assert "invalid" not in refused.stderr and "fetches it" not in refused.stderr


def test_the_session_gateway_beside_one_started_by_hand_and_after_it_is_killed(
    tmp_path: Path,
) -> None:
    """The hook starts the session's own gateway beside the project's, started by hand with
    other flags; the agent uses the session's. `gateway status` in the terminal named only
    the hand-started one while it ran, though the agent uses the other; once it is killed
    -9 (its state file left), the agent's commands go on through the session's."""
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    config = {"mcpServers": {"records": records_server()}}
    (project / ".toolscript.json").write_text(json.dumps(config))
    own = {"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_CONFIG_HOME": str(home / "config")}
    by_hand = GatewayProcess(config, project, "--no-warm-checker", env=own)
    try:
        started = hook("SessionStart", "meet5", project, home, env_file)
        assert started.returncode == 0, started.stderr
        assert "gateway ready, 1/1 servers connected" in started.stdout, started.stdout
        session_pid = pid_of(home, "meet5")
        agent_url = env_file.read_text().strip().split("=", 1)[1]
        assert (
            agent_url.rsplit(":", 1)[1].split("/")[0] != by_hand.url.rsplit(":", 1)[1].split("/")[0]
        )

        status = toolscript_cli("gateway", "status", "--json", cwd=project, env=own)
        assert status.returncode == 0, status.stderr
        shown = json.loads(status.stdout)
        assert shown["processes"]["gateway"]["pid"] == by_hand.process.pid
        assert [session["pid"] for session in shown.get("sessions", [])] == [session_pid]
        text = toolscript_cli("gateway", "status", cwd=project, env=own)
        assert f"pid {session_pid} at" in text.stdout, text.stdout

        by_hand.process.send_signal(signal.SIGKILL)
        by_hand.process.wait(10)
        agents = dict(own, TOOLSCRIPT_GATEWAY_URL=agent_url)
        ran = toolscript_cli(
            "exec",
            'import { tools } from "toolscript"; return await tools.records.counter({ step: 7 })',
            cwd=project,
            env=agents,
        )
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == {"step": 7}
        status = toolscript_cli("gateway", "status", cwd=project, env=own)
        assert status.returncode == 1
        assert f"pid {session_pid} at" in status.stderr, status.stderr
    finally:
        hook("SessionEnd", "meet5", project, home, env_file)
        by_hand.stop()
    wait_until(
        lambda: psutil.pid_exists(session_pid),
        lambda alive: not alive,
        15,
        "the session's gateway gone",
    )
