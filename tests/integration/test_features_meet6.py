"""Where features meet, sixth pass (the others: test_features_meet.py to _meet5.py): one real
gateway with the records server (an `ask` rule on write_record), the fixture server holding
a `${VAR}` secret in its env and a folder of local tool files, the real Deno and real
SQLite, the `mcp` SDK's client and the MCP Inspector's CLI for the MCP face. A run handed a
secret by a result and stopped for approval (its stop, `approve --list`, `runs show`, the
resume); the 1 MiB script limit at the gateway's own routes (an agent's shell posts scripts
there, not only exec); tool files added while the gateway runs (one calling sys.exit at
import, one naming a tool `then`, one saved as an editor saves) called from the face and
built by a standalone doit; `approve --list` across two projects and a restart; a real
streamable HTTP server's large answers; a tool file added beside an untrusted edit; an
error's text searched everywhere; a prompt get sharing a run's budget of JSON values."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import (
    GatewayProcess,
    background_server,
    face_call,
    fixture_server,
    free_port,
    gateway_cli,
    inspector_call,
    journal_of,
    node_server,
    project_gateway,
    records_server,
    run_doit,
    run_id_of,
    toolscript_cli,
    wait_until,
)
from toolscript.execution.command import MAX_RUN_SCRIPT_BYTES
from toolscript.gateway.guard import agent_url

SECRET = "sk-live-meet6-0123456789abcdef"

GREET = '''def hello(name: str) -> str:
    """Greet someone by name."""
    return "hello " + name
'''


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("features-meet6")
    servers = {
        "records": records_server(
            env={"RECORDS_JOURNAL": str(directory / "journal.jsonl")},
            policy={"write_record": "ask"},
        ),
        "fx": fixture_server(env={"FX_API_KEY": "${MEET6_API_KEY}"}),
    }
    env = {"MEET6_API_KEY": SECRET}
    with project_gateway(directory, servers, tools={"greet.py": GREET}, env=env) as running:
        yield running


def pieces_of(secret: str) -> list[str]:
    """The runs of a secret a script may write: 12 characters from its start, the rest."""
    return [secret, secret[:12], secret[12:]]


HANDED = """import { tools } from "toolscript";
const key = String(await tools.fx.env({ name: "FX_API_KEY" }));
const split = key.slice(0, 12) + " / " + key.slice(12);
return await tools.records.writeRecord({ key: "handed", text: split });
"""


def test_a_run_handed_a_secret_and_stopped_for_approval_shows_no_piece_of_it(
    gateway: GatewayProcess,
) -> None:
    """Masking of received secrets x approvals x `approve --list` x `runs show` x resume:
    the run got the key whole from a result, then asked to write its two pieces. Its stop,
    the list of waiting runs, its record and the approval show neither piece; approved and
    resumed, the call is made with the pieces as the script wrote them."""
    stopped = gateway_cli(gateway, "exec", HANDED)
    assert stopped.returncode != 0, stopped.stdout
    run_id = run_id_of(stopped.stderr)
    listed = gateway_cli(gateway, "approve", "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    waiting = [a for a in json.loads(listed.stdout) if a["scope"] == "waiting"]
    assert [a["run_id"] for a in waiting] == [run_id], listed.stdout
    shown = gateway_cli(gateway, "runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    for text in (stopped.stderr, listed.stdout + listed.stderr, shown.stdout, approved.stdout):
        for piece in pieces_of(SECRET):
            assert piece not in text, (piece, text[:3000])
    assert "***" in shown.stdout
    resumed = gateway_cli(gateway, "exec", "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    for piece in pieces_of(SECRET):
        assert piece not in resumed.stdout + resumed.stderr
    written = [
        c
        for c in journal_of(gateway.directory / "journal.jsonl")
        if c["arguments"].get("key") == "handed"
    ]
    assert len(written) == 1, written
    assert f"{SECRET[:12]} / {SECRET[12:]}" in json.dumps(written[0])


OVER = "// " + "x" * MAX_RUN_SCRIPT_BYTES + "\nreturn 1\n"


@pytest.mark.parametrize("route", ["runs/start", "runs", "runtime/check"])
def test_a_script_over_the_limit_is_refused_by_the_gateway_too(
    gateway: GatewayProcess, route: str
) -> None:
    """The 1 MiB limit held in exec and the face, but an agent's shell posts to the agent's
    URL: a background start of a 1 MiB+ script was run, type-checked first (a 30 MB one
    took 3.6 GB), a registration kept it for a resume, and the warm checker checked it."""
    bodies: dict[str, dict[str, Any]] = {
        "runs/start": {"script": OVER},
        "runs": {"script": OVER, "origin": "exec"},
        "runtime/check": {
            "code": OVER,
            "path": str(gateway.directory / "big.ts"),
            "module": str(gateway.directory / "module.ts"),
            "hash": "0" * 64,
        },
    }
    with httpx.Client(base_url=agent_url(gateway.url) + "/", timeout=60) as agent:
        refused = agent.post(route, json=bodies[route])
    if route == "runtime/check":  # exec checks it itself then, had it not refused it first
        assert refused.json() == {
            "status": "unavailable",
            "output": "the script is over the run limit",
        }
    else:
        assert refused.status_code == 400, refused.text
        assert "a script may be 1 MB at most" in refused.json()["message"], refused.text
    fine = gateway_cli(gateway, "exec", "return 5")
    assert fine.returncode == 0, fine.stderr


EXITS_AT_IMPORT = '''import sys


def main() -> int:
    """Run as a script."""
    return 0


sys.exit(main())
'''

THEN = '''def then(value: int) -> int:
    """Pass a value on to the next step."""
    return value + 1


def hello(name: str) -> str:
    """Say hello again."""
    return "hi " + name
'''


def test_tool_files_added_while_the_gateway_runs_reach_the_face(gateway: GatewayProcess) -> None:
    """The config watch x sys.exit contained x then renamed x the face: a file calling
    sys.exit at import is added (the gateway stays up, its error in health), then a file
    saved as an editor saves (a temp file renamed over its name) whose tool is named `then`;
    the face's execute calls it as then2, and the face's get_types names it so."""
    tools = gateway.directory / "tools"
    (tools / "leaves.py").write_text(EXITS_AT_IMPORT)
    beside = tools / ".steps.py.swp"
    beside.write_text(THEN)
    os.replace(beside, tools / "steps.py")
    try:
        gateway.wait_for_health(
            lambda h: (
                h["servers"].get("leaves", {}).get("state") == "failed"
                and h["servers"].get("steps", {}).get("state") == "connected"
            ),
            60,
            "leaves.py failed and steps.py served",
        )
        assert "sys.exit(0)" in gateway.health()["servers"]["leaves"]["error"]
        assert ".steps.py" not in json.dumps(gateway.health()["servers"])
        code = (
            'import { tools } from "toolscript"; const n = await tools.steps.then2({ value: 41 });'
            ' return [n, await tools.greet.hello({ name: "Ada" })]'
        )
        result = face_call(gateway, "execute", {"code": code})
        assert not result.is_error, result.content
        assert result.structured_content == {"result": [42, "hello Ada"]}
    finally:
        (tools / "leaves.py").unlink()
        (tools / "steps.py").unlink()
    gateway.wait_for_health(
        lambda h: "steps" not in h["servers"] and "leaves" not in h["servers"], 60, "both gone"
    )


def test_the_face_refuses_a_script_one_byte_over(gateway: GatewayProcess) -> None:
    code = "return 1;" + " " * (MAX_RUN_SCRIPT_BYTES - 8)
    result = face_call(gateway, "execute", {"code": code})
    assert result.is_error
    assert "1 MB at most" in json.dumps([c.model_dump() for c in result.content])


WRITES = 'import { tools } from "toolscript"; return await tools.records.writeRecord({ key: "b", text: "after restart" })'


def waiting_runs(gateway: GatewayProcess) -> list[str]:
    listed = gateway_cli(gateway, "approve", "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    return [a["run_id"] for a in json.loads(listed.stdout) if a["scope"] == "waiting"]


def test_a_waiting_run_listed_in_its_own_project_across_a_gateway_restart(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """`approve --list` (waiting runs) x two projects' gateways x a restart mid-wait x
    resume: project B's stopped run is listed in B, not in A; B's gateway is stopped and
    started again; the run is still listed, approved, and resumed on the new gateway."""
    journal = tmp_path / "journal.jsonl"
    servers = {
        "records": records_server(
            env={"RECORDS_JOURNAL": str(journal)}, policy={"write_record": "ask"}
        )
    }
    with project_gateway(tmp_path, servers, "--no-warm-checker") as other:
        stopped = gateway_cli(other, "exec", WRITES)
        assert stopped.returncode != 0, stopped.stdout
        run_id = run_id_of(stopped.stderr)
        assert waiting_runs(other) == [run_id]
        assert run_id not in waiting_runs(gateway)
    with project_gateway(tmp_path, servers, "--no-warm-checker") as again:
        assert waiting_runs(again) == [run_id]
        approved = gateway_cli(again, "approve", run_id)
        assert approved.returncode == 0, approved.stderr
        assert waiting_runs(again) == []
        resumed = gateway_cli(again, "exec", "--resume", run_id)
        assert resumed.returncode == 0, resumed.stderr
    assert [c["arguments"]["text"] for c in journal_of(journal)] == ["after restart"]


TALLY = '''def tally(items: list[str]):
    """Count the items."""
    return {"count": len(items), "first": items[0] if items else ""}
'''


def test_doit_agrees_with_a_gateway_that_added_a_tool_file_and_learned_its_type(
    gateway: GatewayProcess,
) -> None:
    """The config watch x inferred result types x standalone doit: a tool file added while
    the gateway runs is served and called (its result's type learned); `doit` then finds
    every task up to date and leaves the module as the gateway serves it."""
    added = gateway.directory / "tools" / "tally.py"
    added.write_text(TALLY)
    module = gateway.directory / ".toolscript" / "tools.ts"
    try:
        gateway.wait_for_health(
            lambda h: h["servers"].get("tally", {}).get("state") == "connected", 60, "tally.py"
        )
        called = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript"; return await tools.tally.tally({ items: ["a"] })',
        )
        assert called.returncode == 0, called.stderr
        # tally's own learned type ("inferred from 1 result" alone was greet's, learned in
        # an earlier test: the module read then lacked tally's, which doit built after)
        served = wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda text: "call<TallyTallyResult>" in text,
            60,
            "tally's result type in the module",
        )
        wait_until(module.read_text, lambda text: text == served, 30, "the module written")
        listed = run_doit(
            gateway.directory, "list", "--all", "--status", env={"MEET6_API_KEY": SECRET}
        )
        assert listed.returncode == 0, listed.stderr
        statuses = [line.split(maxsplit=1) for line in listed.stdout.splitlines()]
        assert "fetch:tally" in [name.split()[0] for _, name in statuses], listed.stdout
        assert {status for status, _ in statuses} == {"U"}, listed.stdout
        built = run_doit(gateway.directory, env={"MEET6_API_KEY": SECRET})
        assert built.returncode == 0, built.stdout + built.stderr
        assert ".  " not in built.stdout, built.stdout  # nothing ran
        assert module.read_text() == served
    finally:
        added.unlink()
    gateway.wait_for_health(lambda h: "tally" not in h["servers"], 60, "tally.py gone")


def test_an_http_servers_answer_of_many_commas_in_a_string_passes_and_many_values_are_refused(
    tmp_path: Path,
) -> None:
    """JSON values counted outside strings x a real streamable-HTTP server x the per-call
    limit: echo's message of 2,500,000 commas goes out and comes back through the server's
    event (over the per-call 1,000,000 and under the 4,000,000 of an event, had its commas
    been counted); an argument of 1,200,000 values is refused (413) naming the limit, and
    the next call on the same server works."""
    port = free_port()
    everything = node_server("mcp-server-everything")
    with background_server([everything, "streamableHttp"], port, {"PORT": str(port)}):
        servers = {"web": {"url": f"http://127.0.0.1:{port}/mcp"}}
        with project_gateway(tmp_path, servers, "--no-warm-checker") as web:
            script = (
                'import { tools } from "toolscript";'
                ' const echoed = String(await tools.web.echo({ message: ",".repeat(2500000) }));'
                " return [echoed.length, echoed.split(',').length - 1]"
            )
            echoed = gateway_cli(web, "exec", script)
            assert echoed.returncode == 0, echoed.stderr[-2000:]
            assert json.loads(echoed.stdout)[1] == 2_500_000, echoed.stdout
            many = web.call("web__echo", {"message": "x", "pad": [0] * 1_200_000})
            assert many.status_code == 413, many.text[:500]
            assert "1000000" in many.text or "1,000,000" in many.text, many.text[:500]
            after = web.call("web__echo", {"message": "after"})
            assert after.status_code == 200, after.text
            assert "after" in after.text


ERROR_FIRST = (
    "TypeError: Cannot read properties of undefined (reading 'name') at main.ts:3:14 "
    "how do I greet someone by name?"
)


def test_an_error_pasted_before_the_question_finds_the_same_tool_everywhere(
    gateway: GatewayProcess,
) -> None:
    """Search's error-text reading x the CLI's --json x the face's search_tools (the `mcp`
    SDK's client and the MCP Inspector's CLI): the question after the error finds greet's
    hello first in each, and the error's words do not bring fx.fail or records.failLoudly
    above it."""
    searched = gateway_cli(gateway, "search", ERROR_FIRST, "--json")
    assert searched.returncode == 0, searched.stderr
    hits = json.loads(searched.stdout)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert (hits[0]["server"], hits[0]["tool"]) == ("greet", "hello"), hits[:3]
    found = face_call(gateway, "search_tools", {"query": ERROR_FIRST})
    assert not found.is_error, found.content
    first = found.structured_content["hits"][0]
    assert (first["server"], first["tool"]) == ("greet", "hello"), found.structured_content
    inspected = inspector_call(
        gateway.directory, gateway.config_path, "search_tools", f"query={ERROR_FIRST}"
    )
    first = inspected["structuredContent"]["hits"][0]
    assert (first["server"], first["tool"]) == ("greet", "hello"), inspected


CALC = '''def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


def test_a_tool_file_added_beside_an_untrusted_edit_waits_for_the_trusted_config(
    tmp_path: Path,
) -> None:
    """The config watch of localTools.dir x trust x config_on_disk: the config is edited
    (not trusted) and a tool file added. The gateway keeps serving the trusted config and
    does not start the file; list-servers said "not loaded: see `toolscript gateway
    status`", which did not name it. Once the edit is undone, the file is served."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "greet.py").write_text(GREET)
    env = {
        "TOOLSCRIPT_HOME": str(tmp_path / "home"),
        "TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "trust"),
        "TOOLSCRIPT_TRUSTED_PATHS": "",
    }
    config = {
        "mcpServers": {"records": records_server()},
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    assert toolscript_cli("trust", cwd=tmp_path, env=env).returncode == 0
    project = GatewayProcess(config, tmp_path, "--no-warm-checker", env=env)
    try:
        edited = {**config, "mcpServers": {"records": {**records_server(), "description": "x"}}}
        project.config_path.write_text(json.dumps(edited))
        project.wait_for_health(
            lambda h: "is not trusted yet" in (h["config"]["error"] or ""), what="edit refused"
        )
        (tmp_path / "tools" / "calc.py").write_text(CALC)
        listed = wait_until(
            lambda: toolscript_cli("list-servers", cwd=tmp_path, env=env),
            lambda ran: "calc" in ran.stdout,
            30,
            "calc.py listed",
        )
        row = next(line for line in listed.stdout.splitlines() if line.startswith("calc"))
        assert "not started: the edit is not trusted (see note)" in row, listed.stdout
        assert "toolscript trust" in listed.stderr, listed.stderr
        assert "calc" not in project.health()["servers"]
        project.config_path.write_text(json.dumps(config))  # the edit undone
        project.wait_for_health(
            lambda h: h["servers"].get("calc", {}).get("state") == "connected", 60, "calc served"
        )
        added = toolscript_cli(
            "exec",
            'import { tools } from "toolscript"; return await tools.calc.add({ a: 2, b: 3 })',
            cwd=tmp_path,
            env=env,
        )
        assert added.returncode == 0, added.stderr
        assert added.stdout.strip() == "5"
    finally:
        assert project.stop() == []


SHARED_BUDGET = """import { tools, prompts } from "toolscript";
const pad = new Array(900000).fill(0);
const slow = [5, 6].map((seconds) => tools.fx.sleep({ seconds, pad } as any));
for (const seconds of [5, 6]) {
  while (String(await tools.fx.waitFor({ sleeping: seconds, within: 1 })) !== "yes") {}
}
let said = "";
try {
  await (prompts.fx as any).get("nothing", { pad });
} catch (error) {
  said = String(error);
}
await Promise.all(slow);
return said;
"""


def test_a_prompt_get_shares_the_run_budget_with_its_tool_calls(gateway: GatewayProcess) -> None:
    """The per-run budget of JSON values x a prompt get (the fast path that counts any JSON
    body) x tool calls under way: two slow calls hold 1,800,000 values of the run; a
    prompt get of 900,000 more is refused naming the run's bound, and the calls end well."""
    ran = gateway_cli(gateway, "exec", "--no-check", SHARED_BUDGET)
    assert ran.returncode == 0, ran.stderr[-2000:]
    said = json.loads(ran.stdout)
    assert "2,000,000 JSON values for one run" in said, said
    assert "the arguments of a prompt get refused" in said, said  # not "of the tool calls"
