"""Attacks of stop 60 with a real gateway, real Deno and real servers.

- What a script learns of the machine without any permission: ``Deno.cwd()`` (and Node's
  ``process.cwd()``) named the folder toolscript was run from, the project's: its path names
  the user and the project, and a script may send it to any tool. Deno runs from the file
  system's root now, in a fresh Deno, a spare, a background run and the MCP face alike.
- A server listing more tools than any real one, each small enough for every size bound:
  all were typed into the module every script loads (20,000: a 4 MB module, a 0.95 GB type
  checker, each exec 1.1-1.5 s); past ``ENTRY_LIMIT`` the rest are skipped, said once.
- A server whose tools change at every listing, announced 100 times after each: the gateway
  listed it and rebuilt the module, search and the warm checker every second for as long as
  it went on (35-40% of a core, every exec 3-5 s); each change soon after the last now
  doubles the wait before the next listing (to 60 s).
- A server sending notifications by the thousand: each was checked and handled (2,000 a
  second took 30% of a core); past ``NOTICE_RATE`` a second they are dropped as read, said once.
- A server's schema with ``$ref`` aliases naming each other directly (``"loop": {"$ref":
  "#/$defs/loop"}``) made ``type A = A;``: the module failed TypeScript's check, and with it
  every script of every server (``TS2456``). Such a reference is ``unknown`` now.
- The agent's URL read a person's runs: an id's prefix (``2``) answered with the ids it
  matches, then the script of a person's run stopped for approval, a resume of it replayed
  what its calls answered, and a person's background run's output was the agent's to read.
  The agent's URL reaches the agent's own runs there now."""

from __future__ import annotations

import itertools
import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from tests.helpers import (
    ROOT,
    GatewayProcess,
    clean_env,
    face_parameters,
    fixture_server,
    running_gateway,
    toolscript_cli,
    wait_until,
)
from toolscript.gateway.guard import agent_url
from toolscript.upstream.limits import ENTRY_LIMIT, NOTICE_RATE

HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("attacks60") / "alice-secret-project"
    directory.mkdir()
    fx = fixture_server(policy={"structured": "ask"})
    started = GatewayProcess({"mcpServers": {"fx": fx}}, directory)
    try:
        yield started
    finally:
        started.stop()


def where_am_i() -> str:
    """A script new each time (a spare runs a script the warm checker passed)."""
    return (
        f'// {secrets.token_hex(8)}\nimport process from "node:process";\n'
        "console.log(JSON.stringify({ deno: Deno.cwd(), node: process.cwd() }));\n"
    )


def _seen(printed: str, project: Path) -> dict[str, str]:
    assert str(project) not in printed and project.name not in printed, printed
    seen: dict[str, str] = json.loads(printed.strip().splitlines()[-1])
    return seen


@pytest.mark.parametrize("spare", [True, False], ids=["spare", "fresh-deno"])
def test_a_script_learns_no_folder_of_the_project_from_exec(
    gateway: GatewayProcess, toolscript_home: Path, spare: bool
) -> None:
    """Before: ``{"deno": ".../alice-secret-project", "node": ".../alice-secret-project"}``."""
    env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    if not spare:
        env["TOOLSCRIPT_NO_SPARE"] = "1"
    done = toolscript_cli("exec", where_am_i(), cwd=gateway.directory, env=env)
    assert done.returncode == 0, done.stderr
    assert _seen(done.stdout, gateway.directory) == {"deno": "/", "node": "/"}


def test_a_background_script_learns_no_folder_of_the_project(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    started = toolscript_cli("exec", "--background", where_am_i(), cwd=gateway.directory, env=env)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    done = toolscript_cli(
        "runs", "wait", run_id, "--timeout", "100", cwd=gateway.directory, env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert _seen(printed[0], gateway.directory) == {"deno": "/", "node": "/"}


def test_a_script_the_mcp_face_runs_learns_no_folder_of_the_project(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    parameters = face_parameters(gateway)
    parameters.env = clean_env(TOOLSCRIPT_HOME=str(toolscript_home))

    async def execute() -> str:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("execute", {"code": where_am_i()})
            return "\n".join(block.text for block in result.content if block.type == "text")

    text = anyio.run(execute)
    assert str(gateway.directory) not in text and gateway.directory.name not in text, text
    assert _seen(text, gateway.directory) == {"deno": "/", "node": "/"}


def test_a_server_listing_too_many_tools_is_cut_and_the_others_serve(tmp_path: Path) -> None:
    listed = ENTRY_LIMIT + 1_000
    tools = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(listed)]
    (tmp_path / "many.json").write_text(json.dumps({"tools": tools}))
    many = {"command": sys.executable, "args": [str(HOSTILE), str(tmp_path / "many.json")]}
    config = {"mcpServers": {"many": many, "fx": fixture_server()}}
    with running_gateway(config, tmp_path) as gateway:
        servers = gateway.health()["servers"]
        assert servers["many"]["tools"] == ENTRY_LIMIT
        assert f"tools past the first {ENTRY_LIMIT:,}: 1000 skipped" in servers["many"]["warnings"]
        assert servers["fx"]["state"] == "connected"
        assert gateway.call(f"many__t{ENTRY_LIMIT - 1}").status_code == 200
        assert gateway.call(f"many__t{ENTRY_LIMIT}").status_code == 404


SECRET = "person-secret-7f3a"
# A person's script that stops for approval at its second call, after one that answered.
PERSONS = (
    'import { tools } from "toolscript";\n'
    f'const key = "{SECRET}";\n'
    "console.log(JSON.stringify(await tools.fx.plainText({ text: key })));\n"
    "await tools.fx.structured({ city: key });\n"
)


def test_the_agents_url_reads_none_of_a_persons_runs(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    person = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    agent_env = person | {"TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url)}
    code = PERSONS + f"// {secrets.token_hex(6)}\n"
    stopped = toolscript_cli("exec", code, cwd=gateway.directory, env=person)
    assert stopped.returncode == 120, stopped.stderr
    persons_run = next(w for w in stopped.stderr.split() if w.count("-") == 2 and w[:8].isdigit())
    background = toolscript_cli(
        "exec", "--background", f'console.log("{SECRET}")', cwd=gateway.directory, env=person
    )
    assert background.returncode == 0, background.stderr
    persons_background = background.stdout.strip()
    waited = toolscript_cli("runs", "wait", persons_background, cwd=gateway.directory, env=person)
    assert SECRET in waited.stdout  # the person reads their own

    agent = httpx.Client(base_url=agent_url(gateway.url) + "/", timeout=30)
    try:
        for asked in (persons_run, persons_run[:1], persons_run[:10]):
            script = agent.get(f"runs/{asked}/script")
            assert script.status_code == 404, script.text
            assert SECRET not in script.text, script.text
            assert asked == persons_run or persons_run not in script.text, script.text
        resumed = agent.post("runs", json={"resume": persons_run, "pid": 1})
        assert resumed.status_code == 404, resumed.text
        # the same script, registered by the agent, resumes nothing of the person's
        same = toolscript_cli("exec", code, cwd=gateway.directory, env=agent_env)
        assert "resuming" not in same.stderr and same.returncode == 120, same.stderr
        output = agent.get(f"runs/{persons_background}/output")
        assert output.status_code == 403 and SECRET not in output.text, output.text
    finally:
        agent.close()
    # the person still resumes theirs
    script = httpx.get(f"{gateway.url}/runs/{persons_run}/script", timeout=30)
    assert script.status_code == 200 and SECRET in script.text


def test_the_agents_url_reads_and_resumes_the_agents_own_runs(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    env = {
        "TOOLSCRIPT_HOME": str(toolscript_home),
        "TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url),
    }
    stopped = toolscript_cli(
        "exec", PERSONS + f"// {secrets.token_hex(6)}\n", cwd=gateway.directory, env=env
    )
    assert stopped.returncode == 120, stopped.stderr
    own = next(w for w in stopped.stderr.split() if w.count("-") == 2 and w[:8].isdigit())
    with httpx.Client(base_url=agent_url(gateway.url) + "/", timeout=30) as agent:
        script = agent.get(f"runs/{own[:17]}/script")  # a unique prefix will do
        assert script.status_code == 200 and SECRET in script.text, script.text
    background = toolscript_cli(
        "exec", "--background", 'console.log("mine")', cwd=gateway.directory, env=env
    )
    assert background.returncode == 0, background.stderr
    waited = toolscript_cli(
        "runs", "wait", background.stdout.strip(), cwd=gateway.directory, env=env
    )
    assert waited.returncode == 0 and "mine" in waited.stdout, waited.stderr


def test_a_server_whose_tools_change_at_every_listing_is_listed_ever_less_often(
    tmp_path: Path,
) -> None:
    listed = tmp_path / "listed.txt"
    (tmp_path / "storm.json").write_text(json.dumps({"storm": str(listed)}))
    storm = {"command": sys.executable, "args": [str(HOSTILE), str(tmp_path / "storm.json")]}
    config = {"mcpServers": {"storm": storm, "fx": fixture_server()}}
    with running_gateway(config, tmp_path) as gateway:

        def listings() -> list[float]:
            return [float(line) for line in listed.read_text().split()] if listed.exists() else []

        # the first listing (connecting), then one at once, then after 1, 2, 4 and 8 s: the
        # last wait 8 times the first, 4 times asked (a listing's own time, under load)
        times = wait_until(listings, lambda found: len(found) >= 6, 120, "six listings")
        gaps = [later - earlier for earlier, later in itertools.pairwise(times[1:])]
        assert gaps[-1] >= 4 * gaps[0], gaps  # before: a listing each second, every gap ~1 s
        assert gateway.call("fx__plain_text").status_code == 200
        assert gateway.health()["servers"]["fx"]["state"] == "connected"


def test_a_flood_of_notifications_is_dropped_past_its_rate_and_said_once(tmp_path: Path) -> None:
    (tmp_path / "notices.json").write_text(json.dumps({"notices": 50_000, "tools": []}))
    noisy = {"command": sys.executable, "args": [str(HOSTILE), str(tmp_path / "notices.json")]}
    config = {"mcpServers": {"noisy": noisy, "fx": fixture_server()}}
    with running_gateway(config, tmp_path) as gateway:
        said = f"sent over {NOTICE_RATE} notifications a second: those past it are dropped"
        health = gateway.wait_for_health(
            lambda h: said in h["servers"]["noisy"]["warnings"], 60, "the flood said"
        )
        assert health["servers"]["noisy"]["state"] == "connected"
        assert gateway.call("fx__plain_text").status_code == 200
        assert gateway.log.count(said) == 1


def test_a_schema_whose_aliases_name_each_other_fails_no_script(
    tmp_path: Path, toolscript_home: Path
) -> None:
    cycles = {
        "type": "object",
        "$defs": {
            "loop": {"$ref": "#/$defs/loop"},
            "p": {"anyOf": [{"$ref": "#/$defs/q"}, {"type": "string"}]},
            "q": {"allOf": [{"$ref": "#/$defs/p"}]},
        },
        "properties": {"loop": {"$ref": "#/$defs/loop"}, "p": {"$ref": "#/$defs/p"}},
        "allOf": [{"$ref": "#"}],
    }
    spec = {"tools": [{"name": "cyc", "inputSchema": cycles, "outputSchema": cycles}]}
    (tmp_path / "cycles.json").write_text(json.dumps(spec))
    evil = {"command": sys.executable, "args": [str(HOSTILE), str(tmp_path / "cycles.json")]}
    config = {"mcpServers": {"evil": evil, "fx": fixture_server()}}
    with running_gateway(config, tmp_path) as gateway:
        env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
        code = (
            'import { tools } from "toolscript";\nreturn await tools.fx.plainText({ text: "ok" });'
        )
        done = toolscript_cli("exec", code, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr  # before: TS2456 in the module, exit 1
        assert "circularly references itself" not in done.stderr
        assert json.loads(done.stdout) == "ok"
