"""Where features meet, eighth pass (the others: test_features_meet.py to _meet7.py): one real
gateway with the fixture server (a `${VAR}` secret in its env), a hostile server whose `shift`
tool changes its tool list (one tool in it nameless, one with a string for a schema) and
sends tools/list_changed, and a folder of local tool files; the real Deno and real SQLite,
the `mcp` SDK's client and the MCP Inspector's CLI for the MCP face. A tool file added
while another process's build (a `doit` by hand) holds the cache's lock: search and
get-types answer from what is served, saying why, where each waited 10 s; a list_changed
bringing invalid tools while a run waits for approval: the module, search and get-types
agree, and the run resumes; a server whose initialize is repaired (no capabilities) and
its prompts, resources and list_changed; doit by hand building a repaired tool list as the
gateway serves it; a build that cannot write (a file size limit) keeps the cache; an
execute cancelled by the client while it waits for a connecting server never runs; a
project moved while the face's own gateway has a run in flight; halves of a received key
as learned keys, recent calls and the run log; two projects with the same server names
and a face each, a config edit in one."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    RECORDS_SERVER,
    ROOT,
    GatewayProcess,
    clean_env,
    face_parameters,
    fixture_server,
    gateway_cli,
    inspector_call,
    journal_of,
    last_run,
    needs_semantic,
    records_server,
    run_doit,
    running_gateway,
    save_config,
    wait_until,
)

HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"

OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}}
# What the shifty server lists first, and after its `shift` call: a nameless tool (skipped
# with a warning), a tool whose inputSchema is no object (served taking any arguments) and
# a tool added.
FIRST_TOOLS = [
    {"name": "write_note", "description": "Write a note down.", "inputSchema": OBJECT},
    {"name": "shift", "description": "Change the tool list.", "inputSchema": {"type": "object"}},
]
SHIFTED_TOOLS = [
    *FIRST_TOOLS,
    {"description": "A tool with no name.", "inputSchema": OBJECT},
    {"name": "loose_schema", "description": "Its schema is a string.", "inputSchema": "any"},
    {
        "name": "measure_snowfall",
        "description": "Measure the snowfall of a mountain pass in centimetres.",
        "inputSchema": {"type": "object", "properties": {"pass_name": {"type": "string"}}},
    },
]


# A password of words (no digits): a key of it reads as a field name, not as a token's data.
SECRET = "correct-horse-battery-staple"
KEYED = '''def keyed(name: str):
    """Answer an object keyed by the name given."""
    return {name: 1, "kind": "keyed"}
'''


def hostile(directory: Path, name: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A config entry for the hostile server with ``spec`` written beside the project."""
    path = directory / f"{name}.json"
    path.write_text(json.dumps(spec))
    return {"command": sys.executable, "args": [str(HOSTILE), str(path)], **extra}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("features-meet8")
    (directory / "tools").mkdir()
    (directory / "tools" / "keyed.py").write_text(KEYED)
    spec = {"tools": FIRST_TOOLS, "shifts": {"shift": {"tools": SHIFTED_TOOLS}}}
    config = {
        "mcpServers": {
            "fx": fixture_server(env={"FX_API_KEY": "${MEET8_API_KEY}"}),
            "shifty": hostile(directory, "shifty", spec, policy={"write_note": "ask"}),
        },
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    running = GatewayProcess(config, directory, env={"MEET8_API_KEY": SECRET})
    try:
        yield running
    finally:
        assert running.stop() == []


def face_calls(gateway: GatewayProcess, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """tools/calls of one `toolscript mcp` (the gateway's project) through the `mcp` SDK's
    client over stdio, in order: their CallToolResults."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def work() -> list[Any]:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [await session.call_tool(tool, arguments) for tool, arguments in calls]

    return anyio.run(work)


def module_text(gateway: GatewayProcess) -> str:
    return gateway.client.get("runtime/tools.ts").text


def hit_names(answer: dict[str, Any]) -> list[str]:
    return [str(hit["name"]) for hit in answer["hits"]]


HAIL = '''def forecast_hail(city: str) -> str:
    """Forecast tomorrow's hailstones in millimetres for a city."""
    return city + ": 4 mm"
'''


def test_search_answers_at_once_while_another_build_holds_the_cache(
    gateway: GatewayProcess,
) -> None:
    """search/get-types' wait for a changed tool list's build x the build lock x the config
    watch x the face: a tool file added while another process's build (a `doit` by hand)
    holds the cache's lock. Its server connects; the gateway's build waits for the lock.
    Search (the CLI, the face through the MCP Inspector's CLI) answers from what is served and says why the new tool is
    not in it (each search waited the whole 10 s for that build before), get-types too;
    once the lock is let go, the build runs and search finds the tool."""
    lock = os.open(gateway.directory / ".toolscript" / ".build.lock", os.O_RDWR | os.O_CREAT)
    added = gateway.directory / "tools" / "hail.py"
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        added.write_text(HAIL)
        gateway.wait_for_health(
            lambda h: h["servers"].get("hail", {}).get("state") == "connected", 60, "hail.py"
        )
        searched = gateway_cli(gateway, "search", "hailstone forecast for a city")
        assert "another build of the cache" in searched.stderr, searched.stderr
        assert "hail" not in searched.stdout, searched.stdout
        found = inspector_call(
            gateway.directory,
            gateway.config_path,
            "search_tools",
            "query=hailstone forecast",
            env={"TOOLSCRIPT_GATEWAY_URL": gateway.url},
        )
        assert "another build of the cache" in found["content"][0]["text"], found
        typed = gateway_cli(gateway, "get-types", "fx.plain_text")
        assert typed.returncode == 0, typed.stderr
        assert gateway.process.poll() is None
    finally:
        os.close(lock)  # (the flock goes with its descriptor)
    try:
        answer = wait_until(
            lambda: json.loads(gateway_cli(gateway, "search", "hailstone", "--json").stdout),
            lambda answer: "hail__forecast_hail" in hit_names(answer),
            60,
            "hail's tool searched once the lock is let go",
        )
        assert "unbuilt" not in answer, answer
    finally:
        added.unlink()
    gateway.wait_for_health(lambda h: "hail" not in h["servers"], 60, "hail.py gone")


SHIFTY_WRITE = (
    'import { tools } from "toolscript";'
    ' return await tools.shifty.writeNote({ text: "while it shifted" })'
)


def test_a_list_changed_with_an_invalid_tool_while_a_run_waits_for_approval(
    gateway: GatewayProcess,
) -> None:
    """tools/list_changed x per-version tolerant validation x approval x resume x search x
    get-types: a background run waits for approval of shifty.write_note; meanwhile the
    server's list changes to hold a nameless tool (skipped, a warning), a tool whose schema
    is a string (served taking any arguments) and a tool added. The server keeps its
    other tools; the module, search and get-types agree on what it offers, and the run,
    approved and resumed (checked against the module that changed meanwhile), finishes
    with the write's answer."""
    started = gateway_cli(gateway, "exec", "--background", "--no-check", SHIFTY_WRITE)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip().split()[-1]
    wait_until(
        lambda: gateway_cli(gateway, "approve", "--list", "--json").stdout,
        lambda listed: run_id in listed,
        60,
        "the background run waiting for approval",
    )
    shifted = gateway.call("shifty__shift")
    assert shifted.status_code == 200, shifted.text
    module = wait_until(
        lambda: module_text(gateway), lambda t: "measureSnowfall" in t, 60, "the shifted list"
    )
    gateway.wait_for_log("has no name; skipped")
    assert "looseSchema" in module and "writeNote" in module, module
    assert gateway.health()["servers"]["shifty"]["state"] == "connected"
    searched = json.loads(gateway_cli(gateway, "search", "snowfall of a pass", "--json").stdout)
    assert hit_names(searched)[0] == "shifty__measure_snowfall", searched
    typed = gateway_cli(gateway, "get-types", "shifty")
    assert typed.returncode == 0, typed.stderr
    for name in ("measureSnowfall", "looseSchema", "writeNote"):
        assert name in typed.stdout, typed.stdout
    loose = gateway.call("shifty__loose_schema", {"anything": [1, 2]})
    assert loose.status_code == 200, loose.text
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    resumed = gateway_cli(gateway, "exec", "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == '"write_note"', resumed.stdout
    called = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript";'
        ' return await tools.shifty.measureSnowfall({ pass_name: "Furka" })',
    )
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == '"measure_snowfall"', called.stdout


def test_a_repaired_initialize_with_prompts_resources_and_list_changed(tmp_path: Path) -> None:
    """A repaired initialize (no capabilities, no serverInfo.version) x prompts and resources
    listing x list_changed: what the server offers besides tools is not known, so its
    prompts and resources are asked for and served, as they answer (they were served as
    none: list-prompts said it offers none while the server had one, features_meet9); its
    tools/list_changed (with a prompts/list_changed it never declared) brings its new tools
    and its new prompt; nothing fails."""
    spec = {
        "bare_initialize": True,
        "tools": FIRST_TOOLS,
        "prompts": [{"name": "greeting", "description": "Greet someone."}],
        "resources": [{"uri": "bare://readme", "name": "readme"}],
        "contents": {"bare://readme": [{"uri": "bare://readme", "text": "read me first"}]},
        "shifts": {
            "shift": {
                "tools": SHIFTED_TOOLS,
                "prompts": [{"name": "farewell", "description": "Say goodbye."}],
            }
        },
    }
    config = {
        "mcpServers": {"bare": hostile(tmp_path, "bare", spec)},
        "search": {"semantic": False},
    }
    with running_gateway(config, tmp_path, "--no-warm-checker") as bare:
        bare.wait_for_health(
            lambda h: h["servers"]["bare"]["state"] == "connected", 60, "bare connected"
        )
        bare.wait_for_log("capabilities missing", "it answers prompts/list")
        prompts = gateway_cli(bare, "list-prompts", "bare")
        resources = gateway_cli(bare, "list-resources", "bare")
        read = gateway_cli(bare, "read-resource", "bare", "bare://readme")
        assert "greeting" in wait_until(
            lambda: module_text(bare), lambda t: "greeting" in t, 60, "bare's prompt typed"
        )
        assert bare.call("bare__shift").status_code == 200
        module = wait_until(
            lambda: module_text(bare),
            lambda t: "measureSnowfall" in t and "farewell" in t,
            60,
            "bare's new list",
        )
        assert bare.health()["servers"]["bare"]["state"] == "connected"
        assert bare.process.poll() is None
    said = prompts.stdout + prompts.stderr + resources.stdout + resources.stderr
    assert "Traceback" not in said and "pydantic" not in said, said
    assert prompts.returncode == 0 and "greeting" in prompts.stdout, said
    assert resources.returncode == 0 and "bare://readme" in resources.stdout, said
    assert read.returncode == 0 and "read me first" in read.stdout, read
    assert "writeNote" in module, module


def test_doit_by_hand_builds_a_repaired_tool_list_as_the_gateway_served_it(
    tmp_path: Path,
) -> None:
    """Tolerant validation x standalone doit: a server listing a nameless tool and one whose
    schema is a string. The gateway serves the rest repaired; doit by hand on a cache of
    its own (it connects to the server itself) builds the same module, where it failed or
    differed if its fetch did not repair as the gateway does."""
    spec = {"tools": SHIFTED_TOOLS}
    config = {
        "mcpServers": {"repaired": hostile(tmp_path, "repaired", spec)},
        "search": {"semantic": False},
    }
    with running_gateway(config, tmp_path, "--no-warm-checker") as served:
        served.wait_for_health(
            lambda h: h["servers"]["repaired"]["state"] == "connected", 60, "connected"
        )
        module = wait_until(
            lambda: module_text(served), lambda t: "looseSchema" in t, 60, "the module"
        )
    shutil.rmtree(tmp_path / ".toolscript")
    built = run_doit(tmp_path)
    assert built.returncode == 0, built.stdout + built.stderr
    by_hand = (tmp_path / ".toolscript" / "tools.ts").read_text()
    assert by_hand == module


SLEET = '''def forecast_sleet(city: str) -> str:
    """Forecast tomorrow's sleet for a city."""
    return city + ": some"
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="psutil sets rlimits on Linux")
def test_a_build_that_cannot_write_keeps_the_cache_it_has(gateway: GatewayProcess) -> None:
    """A build that fails x the cache's repair x the config watch x search: a tool file added
    while the gateway may write no file past 100 bytes (RLIMIT_FSIZE, as a disk full: the
    write fails with 'File too large'). The build fails saying so; the cache built before is
    kept (it was taken for damaged and deleted whole, servers' tool lists, module and
    catalogue, and the log said 'No such file or directory'), no partial file is left, and
    search answers at once from what is served."""
    assert "writeNote" in module_text(gateway)  # (the first build done: routes wait for it)
    process = psutil.Process(gateway.process.pid)
    limit = process.rlimit(psutil.RLIMIT_FSIZE)
    cache = gateway.directory / ".toolscript"
    added = gateway.directory / "tools" / "sleet.py"
    try:
        process.rlimit(psutil.RLIMIT_FSIZE, (100, limit[1]))
        added.write_text(SLEET)
        gateway.wait_for_log(f"cannot write the cache in {cache} (File too large)", timeout=60)
        searched = gateway_cli(gateway, "search", "forecast sleet", "--json")
        assert searched.returncode == 0, searched.stderr
    finally:
        process.rlimit(psutil.RLIMIT_FSIZE, limit)
    assert f"the cache in {cache} is damaged" not in gateway.log, gateway.log
    assert (cache / "servers" / "fx.json").is_file()
    assert (cache / "tools.ts").is_file() and (cache / "catalogue.db").is_file()
    assert not list(cache.rglob("*.tmp")), list(cache.rglob("*.tmp"))
    added.unlink()
    gateway.wait_for_health(lambda h: "sleet" not in h["servers"], 60, "sleet.py gone")
    assert gateway.process.poll() is None


def test_an_execute_cancelled_while_it_waits_for_a_connecting_server_never_runs(
    tmp_path: Path,
) -> None:
    """The face's wait for a server still connecting x the client's request timeout (the
    `mcp` SDK sends notifications/cancelled) x the run: an execute writing a record through
    a server held connecting (its program waits for a gate file) is cancelled by the
    client. Once the server connects, the cancelled script is never run (it ran when the
    wait ended, writing the record the person had cancelled, seconds later); the next
    execute runs as usual."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    gate, journal = tmp_path / "gate", tmp_path / "journal.jsonl"
    held = (
        f"while [ ! -e '{gate}' ]; do sleep 0.1; done; exec '{sys.executable}' '{RECORDS_SERVER}'"
    )
    config = {
        "mcpServers": {
            "slow": {
                "command": "sh",
                "args": ["-c", held],
                "env": {"RECORDS_JOURNAL": str(journal)},
            }
        },
        "search": {"semantic": False},
    }
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp"],
        cwd=str(tmp_path),
        env=clean_env(),
    )

    def writing(key: str) -> str:
        return (
            'import { tools } from "toolscript";'
            f' return await tools.slow.writeRecord({{ key: "{key}", text: "{key}" }})'
        )

    async def work() -> list[str]:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with pytest.raises(Exception, match="timed out"):
                await session.call_tool(
                    "execute", {"code": writing("cancelled")}, read_timeout_seconds=2
                )
            gate.touch()
            after = await session.call_tool("execute", {"code": writing("after")})
            assert not after.is_error, after.content
            # The face's wait would have ended by the gateway's ready wait (10 s) after the
            # cancelled request began, and its script run then: looked for past that.
            with anyio.move_on_after(12):
                while "cancelled" not in keys():
                    await anyio.sleep(0.2)
            again = await session.call_tool("execute", {"code": "return 1"})
            assert again.content[0].text.strip() == "1", again.content
        return keys()

    def keys() -> list[str]:
        return [entry["arguments"]["key"] for entry in journal_of(journal)]

    assert anyio.run(work) == ["after"]


MARK = '''from pathlib import Path


def mark(marker: str) -> str:
    """Note that the script got this far."""
    Path(marker).write_text("began")
    return "marked"
'''


def test_a_project_moved_while_the_faces_own_gateway_has_a_run_in_flight(
    tmp_path: Path,
) -> None:
    """A moved project folder x the MCP face's own gateway (in its process) x a run in
    flight x the config watch: the folder is moved while an execute sleeps in a call. The
    face's gateway stops as a gateway process does: the run ends saying its gateway
    stopped, the old folder is not made again by a build, and the next execute runs in a
    gateway of the folder where the project is now (the face's gateway kept serving with
    its watch ended: each execute waited 10 s for a watch pass, the run went on, and its
    next build made the old folder's .toolscript/ again)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    project, moved = tmp_path / "project", tmp_path / "moved"
    (project / "tools").mkdir(parents=True)
    (project / "tools" / "mark.py").write_text(MARK)
    marker = tmp_path / "began"
    config = {
        "mcpServers": {"fx": fixture_server()},
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    (project / ".toolscript.json").write_text(json.dumps(config))
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "toolscript", "mcp"], cwd=str(project), env=clean_env()
    )
    sleeping = (
        'import { tools } from "toolscript";'
        f" await tools.mark.mark({{ marker: {json.dumps(str(marker))} }});"
        ' await tools.fx.sleep({ seconds: 60 }); return "slept"'
    )

    async def work() -> tuple[Any, Any]:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            answers: list[Any] = []

            async def in_flight() -> None:
                answers.append(await session.call_tool("execute", {"code": sleeping}))

            async with anyio.create_task_group() as group:
                group.start_soon(in_flight)
                with anyio.fail_after(60):
                    while not marker.exists():
                        await anyio.sleep(0.1)
                project.rename(moved)
            after = await session.call_tool("execute", {"code": "return 2"})
        return answers[0], after

    stopped, after = anyio.run(work)
    assert stopped.is_error, stopped.content
    assert "the gateway stopped" in stopped.content[0].text, stopped.content
    assert not after.is_error, after.content
    assert after.content[0].text.strip() == "2", after.content
    assert not project.exists(), sorted(str(path) for path in project.rglob("*"))


PIECES = [SECRET[:14], SECRET[14:]]


def test_pieces_of_a_received_secret_as_keys_never_reach_types_or_the_run_log(
    gateway: GatewayProcess,
) -> None:
    """Masking of what a run received x learned result types (map types) x get-types'
    recent-call examples x `runs show --json`: a script reads the key, then hands its two
    halves to a tool answering an object keyed by what it was given, and to one answering
    it as a value. The learned types, the module, get-types' examples and the run log
    show neither half (held)."""
    script = (
        'import { tools } from "toolscript";'
        ' const key = String(await tools.fx.env({ name: "FX_API_KEY" }));'
        " await tools.keyed.keyed({ name: key.slice(0, 14) });"
        " await tools.keyed.keyed({ name: key.slice(14) });"
        " await tools.fx.structured({ city: key.slice(0, 14) });"
        " return 1"
    )
    ran = gateway_cli(gateway, "exec", "--no-check", script)
    assert ran.returncode == 0, ran.stderr
    served = wait_until(
        lambda: module_text(gateway),
        lambda text: "inferred from 2 results" in text,
        60,
        "keyed's learned type",
    )
    typed = gateway_cli(gateway, "get-types", "keyed.keyed", "fx.structured")
    assert typed.returncode == 0, typed.stderr
    assert "A recent successful call" in typed.stdout, typed.stdout
    shown = json.dumps(last_run(gateway))
    assert "keyed" in shown, shown
    for text in (served, typed.stdout, shown, ran.stdout + ran.stderr):
        assert not [piece for piece in [SECRET, *PIECES] if piece in text], text


def test_two_projects_with_the_same_server_names_and_a_face_each_after_a_config_edit(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Two gateways of two projects, both with servers named fx and notes, x one MCP face
    each (the `mcp` SDK's client) x a config edit in one: a server added to the first
    project's config is searched, listed and called by its face; the second's face neither
    finds nor lists it and calls it in vain, and each face's record lands in its own
    project's journal (held)."""
    gateways = []
    try:
        for name in ("first", "second"):
            directory = tmp_path_factory.mktemp(f"meet8-{name}")
            config = {
                "mcpServers": {
                    "fx": fixture_server(),
                    "notes": records_server(env={"RECORDS_JOURNAL": str(directory / "j.jsonl")}),
                },
                "search": {"semantic": False},
            }
            gateways.append(GatewayProcess(config, directory, "--no-warm-checker"))
        first, second = gateways
        edited = json.loads(first.config_path.read_text())
        edited["mcpServers"]["rainfall"] = hostile(
            first.directory, "rainfall", {"tools": SHIFTED_TOOLS[-1:]}
        )
        save_config(first, edited, in_place=False)
        first.wait_for_health(
            lambda h: h["servers"].get("rainfall", {}).get("state") == "connected", 60, "added"
        )
        calling = (
            'import { tools } from "toolscript";'
            ' return await tools.rainfall.measureSnowfall({ pass_name: "Furka" })'
        )
        writing = (
            'import { tools } from "toolscript";'
            ' return await tools.notes.writeRecord({ key: "k", text: "%s" })'
        )
        called, found, wrote_first = face_calls(
            first,
            ("execute", {"code": calling}),
            ("search_tools", {"query": "snowfall of a mountain pass"}),
            ("execute", {"code": writing % "first"}),
        )
        assert not called.is_error, called.content
        assert "measure_snowfall" in called.content[0].text, called.content
        assert "rainfall.measure_snowfall" in found.content[0].text, found.content
        elsewhere, missing, listed, wrote_second = face_calls(
            second,
            ("execute", {"code": calling}),
            ("search_tools", {"query": "snowfall of a mountain pass"}),
            ("list_servers", {}),
            ("execute", {"code": writing % "second"}),
        )
        assert elsewhere.is_error, elsewhere.content
        assert "Property 'rainfall' does not exist" in elsewhere.content[0].text, elsewhere.content
        assert "rainfall" not in missing.content[0].text, missing.content
        assert "rainfall" not in listed.content[0].text, listed.content
        assert not wrote_first.is_error and not wrote_second.is_error
        texts = [
            [entry["arguments"]["text"] for entry in journal_of(g.directory / "j.jsonl")]
            for g in gateways
        ]
        assert texts == [["first"], ["second"]], texts
    finally:
        for running in gateways:
            assert running.stop() == []


FOG = '''def forecast_fog(city: str) -> str:
    """Forecast tomorrow's fog density for a city."""
    return city + ": thick"
'''


@needs_semantic
def test_a_tool_file_added_while_search_is_hybrid_is_run_before_it_is_embedded(
    tmp_path: Path,
) -> None:
    """search/get-types' wait for a changed list's build x semantic search x exec: a tool
    file added once search is hybrid. Its build made the module, then embedded the new tool
    (the torch worker started again) before anything went on: every exec and search in
    between waited 10 s for it (10.06, 10.24, 10.08 s at load 13; 36 s of embedding). The
    module is built first: exec calls the tool at once; search answers from the tools it
    has, saying the new ones are being embedded, and finds the tool, hybrid, once they
    are."""
    (tmp_path / "tools").mkdir()
    config = {"mcpServers": {"fx": fixture_server()}, "localTools": {"dir": "tools"}}
    with running_gateway(config, tmp_path, "--no-warm-checker") as gateway:
        gateway.wait_for_health(lambda h: h["search"]["semantic"] == "ready", 180, "hybrid")
        (tmp_path / "tools" / "fog.py").write_text(FOG)
        gateway.wait_for_health(
            lambda h: h["servers"].get("fog", {}).get("state") == "connected", 60, "fog.py"
        )
        searched = json.loads(gateway_cli(gateway, "search", "fog density", "--json").stdout)
        assert searched["mode"] == "hybrid", searched
        assert (
            "being embedded" in searched.get("unbuilt", "")
            or hit_names(searched)[0] == "fog__forecast_fog"
        ), searched
        called = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript"; return await tools.fog.forecastFog({ city: "Bern" })',
        )
        assert called.returncode == 0, called.stderr
        assert called.stdout.strip() == '"Bern: thick"', called.stdout
        found = wait_until(
            lambda: json.loads(gateway_cli(gateway, "search", "fog density", "--json").stdout),
            lambda answer: hit_names(answer)[0] == "fog__forecast_fog",
            120,
            "fog's tool searched once embedded",
        )
        assert found["mode"] == "hybrid" and "unbuilt" not in found, found
