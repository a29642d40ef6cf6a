"""Where features meet, seventh pass (the others: test_features_meet.py to _meet6.py): one real
gateway with the fixture server (a `${VAR}` secret in its env, an `ask` rule on a tool named
`then`), the records server (an `ask` rule on write_record) and a folder of local tool
files; the real Deno and real SQLite, the `mcp` SDK's client and the MCP Inspector's CLI
for the MCP face. A type learned from a result keyed by a secret; a tool file the watch
added, found by search once connected; a tool file edited while its call is in flight, and
while doit runs by hand; a tool named then2 added while a run waits for `then` (then2
before); a background run handed a secret, waiting across a restart; doit by hand beside
a config reload's rebuild; two projects with the same server names; a gzip-compressing
streamable HTTP server's large answers and the value budget; the face's execute (and
exec) right after a config edit, through a running gateway and the face's own; a face run
handed a secret, approved, resumed by the same script through the Inspector."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    background_server,
    clean_env,
    face_call,
    face_parameters,
    fixture_server,
    free_port,
    gateway_cli,
    inspector_call,
    journal_of,
    project_gateway,
    records_server,
    run_doit,
    run_id_of,
    wait_until,
)

# A password of words: no digits, separators between its words (a key of it reads as a
# field name, not as a token's data).
SECRET = "correct-horse-battery-staple"

KEYED = '''def keyed(name: str):
    """Answer an object keyed by the name given."""
    return {name: 1, "kind": "keyed"}
'''


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("features-meet7")
    servers = {
        "records": records_server(
            env={"RECORDS_JOURNAL": str(directory / "journal.jsonl")},
            policy={"write_record": "ask"},
        ),
        "fx": fixture_server(env={"FX_API_KEY": "${MEET7_API_KEY}"}, policy={"then": "ask"}),
    }
    env = {"MEET7_API_KEY": SECRET}
    with project_gateway(directory, servers, tools={"keyed.py": KEYED}, env=env) as running:
        yield running


def secret_free(text: str) -> bool:
    return SECRET not in text and SECRET[:12] not in text


def test_a_type_learned_from_a_result_keyed_by_a_secret_never_names_it(
    gateway: GatewayProcess,
) -> None:
    """Learned result types x secret masking x get-types x doit: a script hands the key it
    received to a tool whose answer is keyed by what it was given. The type the gateway
    learns from that answer, the module it serves, get-types and the files doit leaves
    never name the secret (its recent call shows it masked)."""
    script = (
        'import { tools } from "toolscript";'
        ' const key = String(await tools.fx.env({ name: "FX_API_KEY" }));'
        " const answer = await tools.keyed.keyed({ name: key }) as any;"
        " return Object.keys(answer).length"
    )
    ran = gateway_cli(gateway, "exec", "--no-check", script)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2"
    served = wait_until(
        lambda: gateway.client.get("runtime/tools.ts").text,
        lambda text: "inferred from 1 result" in text,
        60,
        "keyed's learned type",
    )
    assert secret_free(served), served
    types = gateway_cli(gateway, "get-types", "keyed.keyed")
    assert types.returncode == 0, types.stderr
    assert secret_free(types.stdout), types.stdout
    built = run_doit(gateway.directory, env={"MEET7_API_KEY": SECRET})
    assert built.returncode == 0, built.stdout + built.stderr
    for path in (gateway.directory / ".toolscript").rglob("*"):
        if path.is_file():
            assert secret_free(path.read_text(errors="replace")), path


RAINFALL = '''def forecast_rainfall(city: str) -> str:
    """Forecast tomorrow's rainfall in millimetres for a city."""
    return city + ": 3 mm"
'''


def first_hit(answer: Any) -> tuple[str, str]:
    hits = answer["hits"] if isinstance(answer, dict) else answer
    return (hits[0]["server"], hits[0]["tool"]) if hits else ("", "")


def test_a_tool_file_the_watch_added_is_found_once_it_is_connected(
    gateway: GatewayProcess,
) -> None:
    """The config watch x search (the CLI's --json, the face's search_tools) x get-types:
    once health says the added file's server is connected (as list-servers does), search
    finds its tool and get-types types it, as exec's module does (GET /runtime/hash waits
    for that build)."""
    added = gateway.directory / "tools" / "rain.py"
    added.write_text(RAINFALL)
    try:
        gateway.wait_for_health(
            lambda h: h["servers"].get("rain", {}).get("state") == "connected", 60, "rain.py"
        )
        searched = gateway_cli(gateway, "search", "rainfall forecast for a city", "--json")
        assert searched.returncode == 0, searched.stderr
        assert first_hit(json.loads(searched.stdout)) == ("rain", "forecast_rainfall")
        typed = gateway_cli(gateway, "get-types", "rain.forecast_rainfall")
        assert typed.returncode == 0, typed.stderr
        assert "forecastRainfall" in typed.stdout, typed.stdout
        found = face_call(gateway, "search_tools", {"query": "rainfall forecast for a city"})
        assert not found.is_error, found.content
        assert first_hit(found.structured_content) == ("rain", "forecast_rainfall")
    finally:
        added.unlink()
    gateway.wait_for_health(lambda h: "rain" not in h["servers"], 60, "rain.py gone")


SLOW = '''import time
from pathlib import Path


def slow(marker: str, seconds: float) -> str:
    """Note the call began, wait, answer which version of the file ran."""
    Path(marker).write_text("began")
    time.sleep(seconds)
    return "version one"
'''


def test_a_tool_file_edited_while_a_call_to_it_is_in_flight(gateway: GatewayProcess) -> None:
    """A local tool file x the config watch x a call under way: the file is edited while its
    call runs. The call ends (its answer, or an error saying so), the gateway serves the
    edited file, and the next call runs the new code."""
    marker = gateway.directory / "slow-began"
    tool = gateway.directory / "tools" / "slowpoke.py"
    tool.write_text(SLOW)
    try:
        gateway.wait_for_health(
            lambda h: h["servers"].get("slowpoke", {}).get("state") == "connected", 60, "slowpoke"
        )
        call = "tools.slowpoke.slow({ marker: " + json.dumps(str(marker)) + ", seconds: SECONDS })"
        script = 'import { tools } from "toolscript"; return await ' + call
        running = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolscript",
                "exec",
                "--no-check",
                script.replace("SECONDS", "4"),
            ],
            cwd=gateway.directory,
            env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_until(marker.exists, bool, 60, "the call began")
        tool.write_text(SLOW.replace("version one", "version two"))
        out, err = running.communicate(timeout=120)
        assert running.returncode in (0, 1), err
        if running.returncode == 0:
            assert json.loads(out) == "version one"
        else:
            assert "slowpoke" in err and "Traceback" not in err, err
        again = wait_until(
            lambda: gateway_cli(gateway, "exec", "--no-check", script.replace("SECONDS", "0")),
            lambda ran: ran.returncode == 0 and "version two" in ran.stdout,
            60,
            "the edited file served",
        )
        assert json.loads(again.stdout) == "version two"
    finally:
        tool.unlink()
    gateway.wait_for_health(lambda h: "slowpoke" not in h["servers"], 60, "slowpoke gone")


def module_text(gateway: GatewayProcess) -> str:
    return gateway.client.get("runtime/tools.ts").text


def test_a_tool_named_then2_added_while_a_run_waits_for_then(gateway: GatewayProcess) -> None:
    """tools/list changed x then renamed x approval x resume: the server's `then` (an `ask`
    tool) is `then2`; a run calling it stops for approval. Meanwhile the server adds a tool
    really named `then2`, which takes that name (`then` is then3 now). Approved and resumed,
    the run stops, saying its log holds a call of `then` where the script called `then2`:
    it never calls `then2` in its place (held)."""
    added = gateway.call("fx__add_tool", {"name": "then"})
    assert added.status_code == 200, added.text
    wait_until(lambda: module_text(gateway), lambda t: "then2(" in t, 60, "then as then2")
    script = 'import { tools } from "toolscript"; return await (tools.fx as any).then2({})'
    stopped = gateway_cli(gateway, "exec", "--no-check", script)
    assert stopped.returncode != 0, stopped.stdout
    assert "approv" in stopped.stderr, stopped.stderr
    run_id = run_id_of(stopped.stderr)
    renamed = gateway.call("fx__add_tool", {"name": "then2"})
    assert renamed.status_code == 200, renamed.text
    wait_until(lambda: module_text(gateway), lambda t: "then3(" in t, 60, "then as then3")
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    resumed = gateway_cli(gateway, "exec", "--resume", run_id, "--no-check")
    assert resumed.returncode != 0, resumed.stdout
    assert "whose log holds a call of fx.then at this point" in resumed.stderr, resumed.stderr
    assert "nothing more was called" in resumed.stderr


HANDED = """import { tools } from "toolscript";
const key = String(await tools.fx.env({ name: "FX_API_KEY" }));
const split = key.slice(0, 12) + " / " + key.slice(12);
return await tools.records.writeRecord({ key: "handed", text: split });
"""


def pieces_of(secret: str) -> list[str]:
    """The runs of a secret the script writes: its first 12 characters, the rest."""
    return [secret, secret[:12], secret[12:]]


def test_a_background_run_handed_a_secret_waits_for_approval_across_a_restart(
    tmp_path: Path,
) -> None:
    """exec --background x masking of received secrets x approval x a gateway restart x
    resume: the background run got the key from a result and stopped asking to write its
    two pieces. `runs wait`, `approve --list` and `runs show` show neither piece, before the
    gateway restarts and after. The log keeps the key's answer as ***, so the resume on the
    new gateway cannot replay it: it stops, saying so (it said "the script or what its
    tools return changed", neither of which had), and the script run again is approved and
    resumed on that gateway, the call made with the pieces as written, its output masked."""
    journal = tmp_path / "journal.jsonl"
    servers = {
        "records": records_server(
            env={"RECORDS_JOURNAL": str(journal)}, policy={"write_record": "ask"}
        ),
        "fx": fixture_server(env={"FX_API_KEY": "${MEET7_API_KEY}"}),
    }
    env = {"MEET7_API_KEY": SECRET}
    shown_texts: list[str] = []
    with project_gateway(tmp_path, servers, "--no-warm-checker", env=env) as first:
        started = gateway_cli(first, "exec", "--background", HANDED)
        assert started.returncode == 0, started.stderr
        run_id = started.stdout.strip()
        waited = gateway_cli(first, "runs", "wait", run_id, "--timeout", "60")
        assert waited.returncode != 0, waited.stdout
        listed = gateway_cli(first, "approve", "--list", "--json")
        assert listed.returncode == 0, listed.stderr
        waiting = [a["run_id"] for a in json.loads(listed.stdout) if a["scope"] == "waiting"]
        assert waiting == [run_id], listed.stdout
        shown = gateway_cli(first, "runs", "show", run_id, "--json")
        assert shown.returncode == 0, shown.stderr
        assert "***" in shown.stdout
        shown_texts += [waited.stdout + waited.stderr, listed.stdout, shown.stdout]
    with project_gateway(tmp_path, servers, "--no-warm-checker", env=env) as again:
        listed = gateway_cli(again, "approve", "--list", "--json")
        waiting = [a["run_id"] for a in json.loads(listed.stdout) if a["scope"] == "waiting"]
        assert waiting == [run_id], listed.stdout
        shown = gateway_cli(again, "runs", "show", run_id, "--json")
        approved = gateway_cli(again, "approve", run_id)
        assert approved.returncode == 0, approved.stderr
        resumed = gateway_cli(again, "exec", "--resume", run_id)
        assert resumed.returncode == 121, resumed.stderr
        assert "1 of the answers it replayed held a secret" in resumed.stderr, resumed.stderr
        assert "the script or what its tools return changed" not in resumed.stderr
        assert journal_of(journal) == []
        shown_texts += [listed.stdout, shown.stdout, approved.stdout, resumed.stderr]
        stopped = gateway_cli(again, "exec", HANDED)  # as the hint says: run again
        assert stopped.returncode != 0, stopped.stdout
        rerun = run_id_of(stopped.stderr)
        assert gateway_cli(again, "approve", rerun).returncode == 0
        finished = gateway_cli(again, "exec", "--resume", rerun)
        assert finished.returncode == 0, finished.stderr
        shown_texts += [stopped.stderr, finished.stdout, finished.stderr]
    for text in shown_texts:
        for piece in pieces_of(SECRET):
            assert piece not in text, (piece, text[:3000])
    written = [c for c in journal_of(journal) if c["arguments"].get("key") == "handed"]
    assert len(written) == 1, written
    assert f"{SECRET[:12]} / {SECRET[12:]}" in json.dumps(written[0])


def test_doit_by_hand_while_the_gateway_rebuilds_after_a_config_edit(
    gateway: GatewayProcess,
) -> None:
    """Standalone doit x a config reload's rebuild (two writers of the same artifacts): a
    server is added to the config and doit is run by hand at once. Neither leaves a
    half-written module: the module on disk ends as the gateway serves it, with the new
    server, and a script using it passes its type check and runs."""
    before = json.loads(gateway.config_path.read_text())
    edited = {**before, "mcpServers": {**before["mcpServers"], "fx2": fixture_server()}}
    module = gateway.directory / ".toolscript" / "tools.ts"
    try:
        gateway.config_path.write_text(json.dumps(edited))
        built = run_doit(gateway.directory, env={"MEET7_API_KEY": SECRET})
        assert built.returncode == 0, built.stdout + built.stderr
        gateway.wait_for_health(
            lambda h: h["servers"].get("fx2", {}).get("state") == "connected", 60, "fx2"
        )
        served = wait_until(
            lambda: module_text(gateway), lambda text: "fx2:" in text, 60, "fx2 in the module"
        )
        wait_until(module.read_text, lambda text: text == module_text(gateway), 30, "on disk")
        assert served.rstrip().endswith("export const scripts: Scripts = {};"), served[-300:]
        ran = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript"; return await tools.fx2.plainText({ text: "b" })',
        )
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == "b"
    finally:
        gateway.config_path.write_text(json.dumps(before))
    gateway.wait_for_health(lambda h: "fx2" not in h["servers"], 60, "fx2 gone")


TWIN_TOOL = '''def {name}(text: str) -> str:
    """{doc}"""
    return text
'''


def test_two_projects_with_the_same_server_names_keep_approvals_runs_and_search_apart(
    tmp_path: Path,
) -> None:
    """Two projects' gateways at once, the same servers by the same names and settings (a
    records server asking for write_record, a folder of tool files named alike): a tool
    approved for good in one is asked for in the other, a run of one is not in the other's
    runs, and each one's search finds its own tool file's tool only."""
    with ExitStack() as started:
        projects: list[GatewayProcess] = []
        for name, doc in (("mint", "Mint a commemorative coin"), ("brew", "Brew a pot of tea")):
            directory = tmp_path / name
            directory.mkdir()
            servers = {"records": records_server(policy={"write_record": "ask"})}
            tools = {"own.py": TWIN_TOOL.format(name=name, doc=doc)}
            gateway = project_gateway(directory, servers, "--no-warm-checker", tools=tools)
            projects.append(started.enter_context(gateway))
        mint, brew = projects
        write = 'import { tools } from "toolscript"; return await tools.records.writeRecord({ key: "k", text: "t" })'
        approved = gateway_cli(mint, "approve", "--tool", "records.write_record")
        assert approved.returncode == 0, approved.stderr
        assert gateway_cli(mint, "exec", write).returncode == 0
        asked = gateway_cli(brew, "exec", write)
        assert asked.returncode != 0 and "approv" in asked.stderr, asked.stderr
        brew_run = run_id_of(asked.stderr)
        mint_runs = gateway_cli(mint, "runs", "--json")
        assert brew_run not in mint_runs.stdout
        for project, own, other in ((mint, "mint", "brew"), (brew, "brew", "mint")):
            searched = gateway_cli(project, "search", "commemorative coin tea pot", "--json")
            assert searched.returncode == 0, searched.stderr
            answer = json.loads(searched.stdout)
            tools_found = [(h["server"], h["tool"]) for h in answer["hits"]]
            assert ("own", own) in tools_found and ("own", other) not in tools_found, tools_found


GZIP_SERVER = Path(__file__).parent.parent / "servers" / "gzip_http_server.py"


def test_a_gzip_servers_large_answers_pass_and_many_values_are_refused(tmp_path: Path) -> None:
    """An answer undone before it is counted x JSON values counted outside strings x the
    value budgets x a real streamable-HTTP server (the `mcp` SDK's, every answer and event
    gzip-compressed): 300,000 rows (some 900,000 values, 10 MB undone from a few hundred
    KB) and a CSV text of 3,000,000 commas come through; an argument of 1,200,000 values is
    refused (413) and the next call on the same server works."""
    port = free_port()
    with background_server([sys.executable, str(GZIP_SERVER), str(port)], port):
        servers = {"zipped": {"url": f"http://127.0.0.1:{port}/mcp"}}
        with project_gateway(tmp_path, servers, "--no-warm-checker") as zipped:
            script = (
                'import { tools } from "toolscript";'
                " const got = await tools.zipped.rows({ count: 300000 }) as any;"
                " const text = String(await tools.zipped.csv({ lines: 750000 }));"
                " return [got.rows.length, got.rows[299999].name, text.split(',').length - 1]"
            )
            ran = gateway_cli(zipped, "exec", "--no-check", script)
            assert ran.returncode == 0, ran.stderr[-2000:]
            assert json.loads(ran.stdout) == [300000, "row 299999", 3_000_000], ran.stdout
            many = zipped.call("zipped__echo", {"message": "x", "pad": [0] * 1_200_000})
            assert many.status_code == 413, many.text[:500]
            after = zipped.call("zipped__echo", {"message": "after"})
            assert after.status_code == 200, after.text
            assert "after" in after.text


def test_the_faces_execute_right_after_a_config_edit_sees_the_added_server(
    gateway: GatewayProcess,
) -> None:
    """The MCP face (the `mcp` SDK's client, then the MCP Inspector's CLI) x a config
    reload x the module hash's wait for a tool-list change: a server is added to the config
    and the face's execute runs a script using it at once; the script is checked against
    a module that has it, and its call answers (the face up and answering before the
    edit); so does exec's, after another edit. The gateway's watch looks each second: the
    run was checked against the module without the server (Property 'fx3' does not exist
    on type 'Tools'), and once the edit was seen, the face did not wait for a server still
    connecting, as exec does."""
    before = json.loads(gateway.config_path.read_text())
    edited = {**before, "mcpServers": {**before["mcpServers"], "fx3": fixture_server()}}
    code = 'import { tools } from "toolscript"; return await tools.fx3.plainText({ text: "c" })'
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def edit_then_execute() -> Any:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            warm = await session.call_tool("execute", {"code": "return 1"})
            assert warm.structured_content == {"result": 1}, warm.content
            gateway.config_path.write_text(json.dumps(edited))
            return await session.call_tool("execute", {"code": code})

    try:
        result = anyio.run(edit_then_execute)
        assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
        assert result.structured_content == {"result": "c"}
        inspected = inspector_call(
            gateway.directory, gateway.config_path, "execute", f"code={code}"
        )
        assert inspected["structuredContent"] == {"result": "c"}, inspected
        again = {**edited, "mcpServers": {**edited["mcpServers"], "fx4": fixture_server()}}
        gateway.config_path.write_text(json.dumps(again))
        ran = gateway_cli(gateway, "exec", code.replace("fx3", "fx4"))
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == "c"
    finally:
        gateway.config_path.write_text(json.dumps(before))
    gateway.wait_for_health(
        lambda h: "fx3" not in h["servers"] and "fx4" not in h["servers"], 60, "fx3, fx4 gone"
    )


def test_the_faces_own_gateway_sees_a_config_edit_made_a_moment_before(tmp_path: Path) -> None:
    """The same through the face's own gateway (no gateway runs for the project: the face
    serves one in its process, asked on its loop, not over HTTP)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    config: dict[str, Any] = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps(config))
    edited = {**config, "mcpServers": {**config["mcpServers"], "fx5": fixture_server()}}
    code = 'import { tools } from "toolscript"; return await tools.fx5.plainText({ text: "d" })'
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(path)],
        cwd=str(tmp_path),
        env=clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home")),
    )

    async def edit_then_execute() -> Any:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            warm = await session.call_tool("execute", {"code": "return 1"})
            assert warm.structured_content == {"result": 1}, warm.content
            path.write_text(json.dumps(edited))
            return await session.call_tool("execute", {"code": code})

    result = anyio.run(edit_then_execute)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    assert result.structured_content == {"result": "d"}


def test_a_tool_file_edited_while_doit_runs_by_hand(gateway: GatewayProcess) -> None:
    """A local tool file x standalone doit x the gateway's rebuild: the file is edited (a
    new docstring and a new tool) while doit runs by hand. The module ends as the gateway
    serves it, the new docstring and tool in it, and a script calling the new tool runs."""
    tool = gateway.directory / "tools" / "keyed.py"
    module = gateway.directory / ".toolscript" / "tools.ts"
    (gateway.directory / "dodo.py").write_text(
        "from toolscript.pipeline.dodo import *  # noqa: F403\n"
    )
    doit = subprocess.Popen(
        [sys.executable, "-m", "doit"],
        cwd=gateway.directory,
        env=clean_env(MEET7_API_KEY=SECRET),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        tool.write_text(
            KEYED.replace("Answer an object keyed", "Answer a map keyed")
            + '\n\ndef unkeyed() -> str:\n    """Answer plainly."""\n    return "plain"\n'
        )
        out, err = doit.communicate(timeout=180)
        assert doit.returncode == 0, out + err
        served = wait_until(
            lambda: module_text(gateway),
            lambda text: "Answer a map keyed" in text and "unkeyed(" in text,
            60,
            "the edited file in the module",
        )
        assert "Answer an object keyed" not in served
        wait_until(module.read_text, lambda text: text == module_text(gateway), 30, "on disk")
        ran = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript"; return await tools.keyed.unkeyed()',
        )
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == "plain"
    finally:
        tool.write_text(KEYED)


FACE_HANDED = HANDED.replace('key: "handed"', 'key: "face-handed"')


def test_a_face_run_handed_a_secret_stops_and_runs_again_once_approved(
    gateway: GatewayProcess,
) -> None:
    """The MCP face x masking of received secrets x approval x a run resumed by running the
    same script again: the face's execute (the `mcp` SDK's client) stops at the write of
    the key's two pieces; `approve --list` names the run, with neither piece; approved, the
    same script sent through the MCP Inspector's CLI (another client, another face) resumes
    it: the write is made once, with the pieces as written, and neither answer shows them."""
    stopped = face_call(gateway, "execute", {"code": FACE_HANDED})
    assert stopped.is_error, stopped.content
    said = json.dumps([c.model_dump() for c in stopped.content])
    listed = gateway_cli(gateway, "approve", "--list", "--json")
    waiting = [a["run_id"] for a in json.loads(listed.stdout) if a["scope"] == "waiting"]
    assert len(waiting) == 1 and waiting[0] in said, (listed.stdout, said)
    approved = gateway_cli(gateway, "approve", waiting[0])
    assert approved.returncode == 0, approved.stderr
    inspected = inspector_call(
        gateway.directory,
        gateway.config_path,
        "execute",
        f"code={FACE_HANDED}",
        env={"TOOLSCRIPT_GATEWAY_URL": gateway.url},
    )
    assert not inspected.get("isError"), inspected["content"][0]["text"]
    for text in (said, listed.stdout, approved.stdout, json.dumps(inspected)):
        for piece in pieces_of(SECRET):
            assert piece not in text, (piece, text[:3000])
    written = [
        c
        for c in journal_of(gateway.directory / "journal.jsonl")
        if c["arguments"].get("key") == "face-handed"
    ]
    assert len(written) == 1, written
    assert f"{SECRET[:12]} / {SECRET[12:]}" in json.dumps(written[0])
