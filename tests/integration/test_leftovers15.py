"""Mend 15's leftovers, on one real gateway trusted as a user trusts it (`toolscript trust`,
nothing trusted by path) with the records server (an `ask` rule on one of its tools), the
real Deno and real SQLite: `approve --list` names a run waiting for approval; an edit of the
config not trusted yet, as list-servers, list-tools and `gateway status` say it (text,
`--json` and exit code); `gateway status` names the gateway's pid, uptime and project; an
`execute` the MCP client cancels while the person is asked logs no traceback; and (a gateway
of its own) a kept tool list of a server that does not start, not written by this user's
build, said once in the gateway's log as it is set aside."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    clean_env,
    journal_of,
    records_server,
    run_id_of,
    toolscript_cli,
    wait_for_exit,
)
from toolscript.gateway.guard import agent_url


def config_of(journal: Path) -> dict[str, Any]:
    return {
        "mcpServers": {
            "records": records_server(
                env={"RECORDS_JOURNAL": str(journal)}, policy={"write_record": "ask"}
            )
        },
        "search": {"semantic": False},
    }


class Trusted:
    """A gateway whose config the user trusted with `toolscript trust`, and its commands."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.journal = directory / "journal.jsonl"
        self.config = config_of(self.journal)
        self.env = {
            "TOOLSCRIPT_HOME": str(directory / "home"),
            "TOOLSCRIPT_CONFIG_HOME": str(directory / "trust"),
            "TOOLSCRIPT_TRUSTED_PATHS": "",
        }
        (directory / ".toolscript.json").write_text(json.dumps(self.config))
        trusted = self.cli("trust")
        assert trusted.returncode == 0, trusted.stderr
        self.gateway = GatewayProcess(self.config, directory, env=self.env)

    def cli(self, *args: str) -> Any:
        return toolscript_cli(*args, cwd=self.directory, env=self.env)


@pytest.fixture(scope="module")
def trusted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trusted]:
    project = Trusted(tmp_path_factory.mktemp("leftovers15"))
    try:
        yield project
    finally:
        project.gateway.stop()


ASKS = 'import { tools } from "toolscript";\nreturn await tools.records.writeRecord({ key: "k", text: "waits" });\n'


def test_approve_list_names_a_run_waiting_for_approval(trusted: Trusted) -> None:
    """`approve --list` said "no approvals on record" while `runs` showed the run
    awaiting_approval."""
    stopped = trusted.cli("exec", "--no-check", ASKS)
    assert stopped.returncode == 120, stopped.stderr
    run_id = run_id_of(stopped.stderr)
    listed = trusted.cli("approve", "--list")
    assert listed.returncode == 0, listed.stderr
    assert "no approvals on record" not in listed.stdout
    assert any(
        line.split()[:3] == ["waiting", "records.write_record", run_id]
        for line in listed.stdout.splitlines()
    ), listed.stdout
    assert f"`toolscript approve {run_id}`" in listed.stderr
    as_json = json.loads(trusted.cli("approve", "--list", "--json").stdout)
    waiting = [item for item in as_json if item["scope"] == "waiting"]
    assert [(item["tool"], item["run_id"]) for item in waiting] == [
        ("records__write_record", run_id)
    ]
    shown = json.loads(trusted.cli("runs", "show", run_id, "--json").stdout)
    assert shown["project"] == str(trusted.directory)
    assert "waits" not in str(journal_of(trusted.journal))


def test_gateway_status_names_the_gateways_pid_uptime_and_project(trusted: Trusted) -> None:
    """The text showed no pid (the JSON had it), no uptime, no project."""
    status = trusted.cli("gateway", "status")
    assert status.returncode == 0, status.stdout + status.stderr
    pid = trusted.gateway.health()["processes"]["gateway"]["pid"]
    lines = status.stdout.splitlines()
    assert lines[0] == f"gateway: running at {agent_url(trusted.gateway.url)} (ok)"
    assert lines[1].startswith(f"process: pid {pid}, up "), lines
    assert f"project: {trusted.directory}" in lines
    assert any(line.split("\t")[:2] == ["records", "connected"] for line in lines), lines


def test_an_untrusted_edit_is_said_alike_by_list_servers_list_tools_and_status(
    trusted: Trusted,
) -> None:
    """An edit since `toolscript trust`: list-servers said so in a note, list-tools said
    nothing, `gateway status` called it a config error; no --json said it."""
    original = trusted.gateway.config_path.read_bytes()
    edited = json.loads(original)
    edited["mcpServers"]["records"]["description"] = "edited, not trusted"
    try:
        trusted.gateway.config_path.write_text(json.dumps(edited))
        trusted.gateway.wait_for_health(
            lambda health: "is not trusted yet" in (health["config"]["error"] or ""),
            what="the edit refused for its trust",
        )
        note = "note: the gateway serves the config as it was when trusted: "
        for args in (("list-servers",), ("list-tools", "records")):
            said = trusted.cli(*args)
            assert said.returncode == 0, (args, said.stderr)
            assert note in said.stderr and "toolscript trust" in said.stderr, (args, said.stderr)
            as_json = trusted.cli(*args, "--json")
            assert as_json.returncode == 0, (args, as_json.stderr)
            items = json.loads(as_json.stdout)
            assert items and {item["config_on_disk"] for item in items} == {"untrusted"}, args
        served = json.loads(trusted.cli("list-servers", "--json").stdout)
        assert served[0]["state"] == "connected"
        status = trusted.cli("gateway", "status")
        assert status.returncode == 3  # the gateway does not serve the file as it is now
        assert note in status.stderr, status.stderr
        as_json = trusted.cli("gateway", "status", "--json")
        assert as_json.returncode == 3
        assert json.loads(as_json.stdout)["config_on_disk"] == "untrusted"
        # An edit that does not load: list-servers exited 2 where list-tools answered.
        trusted.gateway.config_path.write_text(json.dumps(edited)[:-1] + ",}")
        trusted.gateway.wait_for_health(
            lambda health: "invalid JSON" in (health["config"]["error"] or ""),
            what="the broken edit refused",
        )
        broken = trusted.cli("list-servers", "--json")
        assert broken.returncode == 0, broken.stderr
        assert "invalid JSON" in broken.stderr and "loaded before" in broken.stderr
        assert [
            (s["name"], s["state"], s["config_on_disk"]) for s in json.loads(broken.stdout)
        ] == [("records", "connected", "invalid")]
        status = trusted.cli("gateway", "status", "--json")
        assert (status.returncode, json.loads(status.stdout)["config_on_disk"]) == (3, "invalid")
    finally:
        trusted.gateway.config_path.write_bytes(original)
    trusted.gateway.wait_for_health(
        lambda health: health["config"]["error"] is None, what="the trusted config again"
    )
    again = json.loads(trusted.cli("list-servers", "--json").stdout)
    assert {item["config_on_disk"] for item in again} == {"trusted"}
    assert json.loads(trusted.cli("gateway", "status", "--json").stdout)["config_on_disk"] == (
        "trusted"
    )


def test_a_cancel_while_the_person_is_asked_logs_no_traceback(
    trusted: Trusted, tmp_path: Path
) -> None:
    """The client cancels the execute while the face asks the person (elicitation): the
    face logged "elicitation failed ..." with a traceback, for what a client does on
    purpose."""
    import anyio
    import mcp_types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    face = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(trusted.gateway.config_path)],
        cwd=str(trusted.directory),
        env=clean_env(**trusted.env),
    )
    pids: list[int] = []
    asked: list[str] = []
    code = ASKS.replace("return", 'progress("pid " + Deno.pid);\nreturn').replace(
        "import { tools }", "import { tools, progress }"
    )

    async def work() -> Any:
        reached = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if message and message.startswith("pid "):
                pids.append(int(message.split()[1]))
                if asked:
                    reached.set()

        async def answer(context: Any, params: Any) -> mcp_types.ElicitResult:
            asked.append(params.message)
            if pids:  # the question may come before the script's progress report does
                reached.set()
            await anyio.sleep_forever()
            raise AssertionError("never answered")

        with (tmp_path / "face.log").open("w") as errlog:
            async with (
                stdio_client(face, errlog=errlog) as (read, write),
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
                    group.cancel_scope.cancel()  # notifications/cancelled to the face
                return await session.call_tool("execute", {"code": "return 2"})

    after = anyio.run(work)
    assert after.structured_content == {"result": 2}, after.content
    wait_for_exit(pids[0], 10)
    log = (tmp_path / "face.log").read_text()
    assert "Traceback" not in log, log
    assert "elicitation failed" not in log, log


def test_the_gateway_says_once_why_an_away_servers_kept_list_is_not_used(
    tmp_path: Path,
) -> None:
    """A cloned repository's tool list for a server that does not start was set aside in
    silence: the server offered nothing, and no line said why."""
    from toolscript.pipeline.artifacts import listed_json

    planted = tmp_path / ".toolscript" / "servers" / "away.json"
    planted.parent.mkdir(parents=True)
    planted.write_text(listed_json([{"name": "deploy", "inputSchema": {"type": "object"}}]))
    away = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
    config = {"mcpServers": {"away": away}, "search": {"semantic": False}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        gateway.wait_for_log("server 'away' is not reachable", "not written by your own build")
    finally:
        gateway.stop()
    assert gateway.log.count("server 'away' is not reachable") == 1, gateway.log
    assert json.loads(planted.read_text()) == []
