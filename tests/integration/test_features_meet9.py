"""Where features meet, ninth pass (the others: test_features_meet.py to _meet8.py): one real
gateway with the fixture server, the records server (an `ask` rule on write_record) and a
folder of local tool files; the real Deno and real SQLite, the `mcp` SDK's client and the MCP
Inspector's CLI for the MCP face. exec (and search --output types) while another process's
build (a `doit` by hand) holds the cache's lock and a tool file was added: a run of the
served tools goes on at once, one naming the new tool is told why it is missing."""

from __future__ import annotations

import fcntl
import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    clean_env,
    face_parameters,
    fixture_server,
    gateway_cli,
    journal_of,
    needs_semantic,
    records_server,
    run_doit,
    running_gateway,
    toolscript_cli,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"


# A password of words (no digits): masked wherever the gateway shows what a call sends.
SECRET = "correct-horse-battery-staple"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("features-meet9")
    (directory / "tools").mkdir()
    config = {
        "mcpServers": {
            "fx": fixture_server(),
            "records": records_server(
                env={
                    "RECORDS_JOURNAL": str(directory / "journal.jsonl"),
                    "RECORDS_KEY": "${MEET9_KEY}",
                },
                policy={"write_record": "ask"},
            ),
        },
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    running = GatewayProcess(config, directory, env={"MEET9_KEY": SECRET})
    try:
        yield running
    finally:
        assert running.stop() == []


SLEET = '''def forecast_sleet(city: str) -> str:
    """Forecast tomorrow's sleet in millimetres for a city."""
    return city + ": 2 mm"
'''
PLAIN = 'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "on" });'
NEW = (
    'import { tools } from "toolscript"; return await tools.sleet.forecastSleet({ city: "Oslo" });'
)
HELD = "its build waits for another build of the cache"


def test_exec_goes_on_with_what_is_served_while_another_build_holds_the_cache(
    gateway: GatewayProcess,
) -> None:
    """A run's wait for a changed tool list's build x the build lock x search's output forms:
    a tool file added while a `doit` by hand holds the cache's lock. A run of the served
    tools goes on at once (it waited the whole 10 s for a build that waited for the doit);
    a run naming the new tool fails its check and is told why; `search --output types` says
    that search answered from what is served, as the table does (it said nothing); once the
    lock is let go the new tool runs."""
    lock = os.open(gateway.directory / ".toolscript" / ".build.lock", os.O_RDWR | os.O_CREAT)
    added = gateway.directory / "tools" / "sleet.py"
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        added.write_text(SLEET)
        gateway.wait_for_health(
            lambda h: h["servers"].get("sleet", {}).get("state") == "connected", 60, "sleet.py"
        )
        gateway.wait_for_log("pipeline: waiting for another build")
        started = time.monotonic()
        plain = gateway_cli(gateway, "exec", PLAIN)
        took = time.monotonic() - started
        started = time.monotonic()
        new = gateway_cli(gateway, "exec", NEW)
        took_new = time.monotonic() - started
        sys.stdout.write(
            f"\nexec with a doit holding the lock: {took:.2f} s (served tools),"
            f" {took_new:.2f} s (the new tool), load {os.getloadavg()[0]:.1f}\n"
        )
        assert plain.returncode == 0, plain.stderr
        assert plain.stdout.strip() == '"on"', plain.stdout
        assert new.returncode == 1, new
        assert HELD in new.stderr, new.stderr
        typed = gateway_cli(gateway, "search", "sleet forecast", "--output", "types")
        assert HELD.replace("its build", "") in typed.stderr, typed.stderr
        listed = json.loads(gateway_cli(gateway, "search", "sleet forecast", "--json").stdout)
        assert HELD in listed["unbuilt"], listed
    finally:
        os.close(lock)  # (the flock goes with its descriptor)
    try:
        ran = wait_until(
            lambda: gateway_cli(gateway, "exec", NEW),
            lambda ran: ran.returncode == 0,
            60,
            "the new tool run once the lock is let go",
        )
        assert ran.stdout.strip() == '"Oslo: 2 mm"', ran.stdout
    finally:
        added.unlink()
    gateway.wait_for_health(lambda h: "sleet" not in h["servers"], 60, "sleet.py gone")


def test_a_server_declaring_no_capabilities_and_offering_no_prompts_is_told_quietly(
    tmp_path: Path,
) -> None:
    """A repaired initialize (no capabilities) x prompts and resources listing: its prompts
    and resources are asked for (a server whose initialize declared nothing had them served
    as none, though it answered them: features_meet8); one that has none (method not found)
    is said to offer none, with no warning of a failed listing."""
    spec = {
        "bare_initialize": True,
        "tools": [{"name": "note", "inputSchema": {"type": "object"}}],
        "refuse": ["prompts/list", "prompts/get", "resources/list", "resources/templates/list"],
    }
    (tmp_path / "bare.json").write_text(json.dumps(spec))
    config = {
        "mcpServers": {"bare": {"command": sys.executable, "args": [str(HOSTILE), "bare.json"]}},
        "search": {"semantic": False},
    }
    with running_gateway(config, tmp_path, "--no-warm-checker") as bare:
        health = bare.wait_for_health(
            lambda h: h["servers"]["bare"]["state"] == "connected", 60, "bare connected"
        )
        prompts = gateway_cli(bare, "list-prompts", "bare")
        resources = gateway_cli(bare, "list-resources", "bare")
        called = bare.call("bare__note")
        health = bare.health()
    assert prompts.returncode == 1 and "offers no prompts" in prompts.stderr, prompts
    assert resources.returncode == 1 and "offers no resources" in resources.stderr, resources
    assert called.status_code == 200, called.text
    warnings = health["servers"]["bare"]["warnings"]
    assert not [w for w in warnings if "list" in w], warnings


# A tool file of many tools: embedding them (the torch worker started again) takes seconds.
FOG = "\n".join(
    f'''def fog_reading_{n}(station: str) -> str:
    """Read the fog density at weather station number {n} along the coast."""
    return station
'''
    for n in range(150)
)
MIST = '''def forecast_mist(valley: str) -> str:
    """Forecast tomorrow's mist over a mountain valley."""
    return valley + ": light"
'''


@needs_semantic
def test_a_tool_file_added_while_new_tools_are_embedded_is_built_at_once(
    tmp_path: Path,
) -> None:
    """A changed tool list's build x semantic search's embedding of new tools x exec: a tool
    file of 150 tools added once search is hybrid, and while they are embedded another
    tool file added. Its build waited for that embedding (one lock for both: its tool was
    in no module until every fog tool was embedded); it is built at once now, and search
    finds both files' tools, hybrid, once embedded."""
    (tmp_path / "tools").mkdir()
    config = {"mcpServers": {"fx": fixture_server()}, "localTools": {"dir": "tools"}}
    with running_gateway(config, tmp_path, "--no-warm-checker") as gateway:
        gateway.wait_for_health(lambda h: h["search"]["semantic"] == "ready", 180, "hybrid")
        (tmp_path / "tools" / "fog.py").write_text(FOG)
        wait_until(
            lambda: searched(gateway, "fog density"),
            lambda answer: "being embedded" in answer.get("unbuilt", ""),
            60,
            "fog's tools being embedded",
        )
        started = time.monotonic()
        (tmp_path / "tools" / "mist.py").write_text(MIST)
        wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda module: "forecastMist" in module,
            120,
            "mist's tool in the module",
        )
        took = time.monotonic() - started
        embedding = "being embedded" in searched(gateway, "fog density").get("unbuilt", "")
        sys.stdout.write(
            f"\nmist's tool in the module {took:.2f} s after its file was saved (fog's"
            f" embedding still under way: {embedding}), load {os.getloadavg()[0]:.1f}\n"
        )
        called = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript";'
            ' return await tools.mist.forecastMist({ valley: "Aosta" })',
        )
        assert called.returncode == 0, called.stderr
        assert called.stdout.strip() == '"Aosta: light"', called.stdout
        for query, name in (
            ("mist over a valley", "mist__forecast_mist"),
            ("fog density at weather station number 7", "fog__fog_reading_7"),
        ):
            found = wait_until(  # (asked over HTTP: a CLI a poll took the embedding's CPU)
                lambda query=query: searched(gateway, query),
                lambda answer, name=name: name in hit_names(answer)[:3] and "unbuilt" not in answer,
                120,
                f"{name} searched once embedded",
            )
            assert found["mode"] == "hybrid", found
        assert "search: embedding the tools a build listed failed" not in gateway.log


def searched(gateway: GatewayProcess, query: str) -> dict[str, Any]:
    """The gateway's search answer for ``query`` (what `search --json` prints)."""
    answer: dict[str, Any] = gateway.client.get("search", params={"q": query}).json()
    return answer


def hit_names(answer: dict[str, Any]) -> list[str]:
    return [str(hit["name"]) for hit in answer["hits"]]


WRITE = (
    'import { tools } from "toolscript";'
    ' return await tools.records.writeRecord({ key: "stopped", text: "never" })'
)
STREAMING = """import { tools, progress } from "toolscript";
for (let i = 0; i < 600; i++) {
  progress(`step ${i}`, i / 600);
  await tools.fx.sleep({ seconds: 0.1 });
}
return "all steps";
"""


def test_gateway_stop_while_the_face_waits_for_approval_and_while_a_call_streams_progress(
    tmp_path: Path,
) -> None:
    """`gateway stop` x the MCP face (the `mcp` SDK's client, elicitation and progress) x
    approval: the project's gateway is stopped while the face's execute waits for the
    person's approval of a write, and while another execute's calls stream progress. Each
    execute answers an error naming the gateway (not a hang, not the script's own
    failure); the write never reached the server; no Deno of the face's is left; the face's
    next execute runs (through a gateway of its own)."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    journal = tmp_path / "journal.jsonl"
    config = {
        "mcpServers": {
            "fx": fixture_server(),
            "records": records_server(
                env={"RECORDS_JOURNAL": str(journal)}, policy={"write_record": "ask"}
            ),
        },
        "search": {"semantic": False},
    }
    results: dict[str, Any] = {}
    progressed: list[str] = []
    timings: dict[str, float] = {}

    with running_gateway(config, tmp_path, "--no-warm-checker") as gateway:

        async def work() -> None:
            asked = anyio.Event()

            async def elicit(context: Any, params: Any) -> Any:
                from mcp.types import ElicitResult

                asked.set()
                await anyio.sleep(30)  # nobody answers
                return ElicitResult(action="decline")

            async def on_progress(
                progress: float, total: float | None, message: str | None
            ) -> None:
                progressed.append(message or "")

            async with (
                stdio_client(face_parameters(gateway)) as (read, write),
                ClientSession(read, write, elicitation_callback=elicit) as session,
            ):
                await session.initialize()
                async with anyio.create_task_group() as group:

                    async def run(name: str, code: str, **extra: Any) -> None:
                        results[name] = await session.call_tool("execute", {"code": code}, **extra)
                        timings[name] = time.monotonic()

                    group.start_soon(run, "write", WRITE)
                    group.start_soon(
                        functools.partial(run, progress_callback=on_progress),
                        "stream",
                        STREAMING,
                    )
                    with anyio.fail_after(60):
                        await asked.wait()
                        while len(progressed) < 3:
                            await anyio.sleep(0.05)
                    timings["asked"] = time.monotonic()
                    stopped = await anyio.to_thread.run_sync(
                        lambda: gateway_cli(gateway, "gateway", "stop")
                    )
                    timings["stop"] = time.monotonic()
                    results["stop"] = stopped
                    with anyio.fail_after(60):
                        while len(timings) < 4:
                            await anyio.sleep(0.05)
                    group.cancel_scope.cancel()
                results["after"] = await session.call_tool("execute", {"code": "return 6 * 7"})

        anyio.run(work)
        assert gateway.process.wait(30) is not None
    assert results["stop"].returncode == 0, results["stop"].stderr
    for name in ("write", "stream"):
        answer = results[name]
        text = answer.content[0].text
        assert answer.is_error, text
        assert "gateway" in text, text
        assert "all steps" not in text, text
    assert not results["after"].is_error, results["after"].content
    assert results["after"].structured_content == {"result": 42}, results["after"]
    assert journal_of(journal) == [], journal_of(journal)
    sys.stdout.write(
        f"\nface's executes answered {timings['write'] - timings['asked']:.2f} s and"
        f" {timings['stream'] - timings['asked']:.2f} s after `gateway stop` began"
        f" ({timings['stop'] - timings['asked']:.2f} s), load {os.getloadavg()[0]:.1f}\n"
    )


SLOW = """import { tools } from "toolscript";
for (let i = 0; i < 120; i++) await tools.fx.sleep({ seconds: 0.1 });
return "slept through";
"""


def face_of(directory: Path, *args: str) -> Any:
    """``toolscript mcp ARGS`` in ``directory`` with no gateway running there (the face's
    own, in its process), as an MCP client starts it."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", *args],
        cwd=str(directory),
        env=clean_env(),
    )


def test_runs_wait_and_stop_from_a_second_shell_on_a_run_of_the_faces_own_gateway(
    tmp_path: Path,
) -> None:
    """The MCP face's own gateway (no gateway runs for the project) x a run it yielded x
    `runs wait`/`runs stop`/`runs show` from a second shell: the face's gateway writes no
    state file, so the shell reaches no gateway. They said the run was not under way (it
    was), or that the gateway stopped before it ended."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    shells: dict[str, Any] = {}

    async def work() -> Any:
        async with (
            stdio_client(face_of(tmp_path, "--yield-after", "1")) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            first = await session.call_tool("execute", {"code": SLOW})
            run_id = (first.structured_content or {}).get("run")
            assert run_id and first.structured_content.get("running"), first
            for name, args in (
                ("wait", ("runs", "wait", run_id, "--timeout", "1")),
                ("stop", ("runs", "stop", run_id)),
                ("show", ("runs", "show", run_id, "--json")),
            ):
                shells[name] = await anyio.to_thread.run_sync(
                    lambda args=args: toolscript_cli(*args, cwd=tmp_path)
                )
            waited = await session.call_tool("wait_run", {"run": run_id})
            while (waited.structured_content or {}).get("running"):
                waited = await session.call_tool("wait_run", {"run": run_id})
            return waited

    waited = anyio.run(work)
    for name in ("wait", "stop"):
        said = shells[name]
        assert said.returncode == 2, said
        assert "is under way in an MCP face's own gateway (`toolscript mcp`" in said.stderr, said
        assert "wait_run" in said.stderr and "not under way" not in said.stderr, said
    shown = json.loads(shells["show"].stdout)
    assert shown["status"] == "running" and shown["origin"] == "mcp", shown
    assert not waited.is_error, waited.content
    assert waited.structured_content == {"result": "slept through"}, waited


DEPTH = {
    "name": "snow_depth",
    "description": "Measure the snow depth at a pass.",
    "inputSchema": "any",
    "outputSchema": "a number",
}
DEPTH_TOOLS = [
    DEPTH,
    {"description": "A tool with no name.", "inputSchema": {"type": "object"}},
    {"name": "shift", "inputSchema": {"type": "object"}},
]
DEPTH_CALL = (
    'import { tools } from "toolscript";'
    ' const found = await tools.shifty.snowDepth({ pass_name: "Furka" });'
    " return found.depth + 1;"
)


def test_learned_types_of_a_repaired_tool_survive_its_relisting_and_doit_by_hand(
    tmp_path: Path,
) -> None:
    """Tolerant validation x learned result types x get-types' recent call x list_changed x
    standalone doit: a tool whose inputSchema and outputSchema are strings (served taking
    any arguments, its outputSchema ignored) beside a nameless tool. Its result's type is
    learned; the server's list changes (the same tool, repaired again): the learned type
    and the example stay; `doit` by hand (it fetches the server itself: its learned types
    changed) writes the module the gateway serves, byte for byte."""
    spec = {
        "tools": DEPTH_TOOLS,
        "results": {"snow_depth": {"content": [{"type": "text", "text": '{"depth": 41}'}]}},
        "shifts": {
            "shift": {
                "tools": [*DEPTH_TOOLS, {"name": "avalanche_risk", "inputSchema": {}}],
            }
        },
    }
    (tmp_path / "shifty.json").write_text(json.dumps(spec))
    config = {
        "mcpServers": {
            "shifty": {"command": sys.executable, "args": [str(HOSTILE), "shifty.json"]}
        },
        "search": {"semantic": False},
    }
    with running_gateway(config, tmp_path, "--no-warm-checker") as gateway:
        gateway.wait_for_health(
            lambda h: h["servers"]["shifty"]["state"] == "connected", 60, "shifty"
        )
        ran = gateway_cli(gateway, "exec", "--no-check", DEPTH_CALL)  # (no type yet)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == "42", ran.stdout
        typed = wait_until(
            lambda: gateway_cli(gateway, "get-types", "shifty.snow_depth").stdout,
            lambda types: "inferred from 1 result" in types,
            60,
            "the learned type",
        )
        assert "depth: number" in typed and "Furka" in typed, typed
        assert gateway.call("shifty__shift").status_code == 200
        # (a server doit starts lists what the one shifted does)
        spec["tools"] = spec["shifts"]["shift"]["tools"]
        (tmp_path / "shifty.json").write_text(json.dumps(spec))
        module = wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda text: "avalanche" in text.lower(),
            60,
            "the relisted tools",
        )
        assert "inferred from 1 result" in module, module
        relisted = gateway_cli(gateway, "get-types", "shifty.snow_depth").stdout
        assert "depth: number" in relisted and "Furka" in relisted, relisted
        again = gateway_cli(gateway, "exec", DEPTH_CALL)  # checked against the learned type
        assert again.stdout.strip() == "42", again.stderr
        wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda text: "inferred from 2 results" in text,
            60,
            "the second result learned",
        )
        served = gateway.client.get("runtime/tools.ts").text
        fetched = run_doit(tmp_path, "-a", "fetch")  # the server asked again, by doit
        assert fetched.returncode == 0, fetched.stdout + fetched.stderr
        assert ".  fetch:shifty" in fetched.stdout, fetched.stdout
        built = run_doit(tmp_path)
        assert built.returncode == 0, built.stdout + built.stderr
        written = (tmp_path / ".toolscript" / "tools.ts").read_text()
        assert gateway.client.get("runtime/tools.ts").text == served
    assert written == served, built.stdout + built.stderr


SEEN = (
    'import { tools } from "toolscript"; console.log("seen printed first");'
    f' return await tools.records.writeRecord({{ key: "seen", text: "pass {SECRET}" }});'
)
NEW_BROKEN = (
    'import { tools } from "toolscript"; console.log("new printed first");'
    f' await tools.records.writeRecord({{ key: "new", text: "pass {SECRET}" }});'
    ' const wrong: number = "not a number"; return wrong;'
)


def test_a_new_script_checked_beside_its_run_and_a_seen_one_both_asking_approval(
    gateway: GatewayProcess,
) -> None:
    """The check beside a new script's run x approval through the MCP face's elicitation x
    masking x two executes at once: a script seen before and a new one whose check fails
    after its call, both writing a record that needs approval, with the server's secret in
    the text. Only the seen script's call is asked (the new one's waits for its verdict,
    then is refused), each question shows the secret masked, the new script's output
    before its call is dropped with it, and only the seen script's writes reach the
    server."""
    import anyio
    import mcp_types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    asked: list[str] = []
    journal = gateway.directory / "journal.jsonl"
    before = len(journal_of(journal)) if journal.exists() else 0

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"always": False})

    face = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(gateway.config_path)],
        cwd=str(gateway.directory),
        env=clean_env(MEET9_KEY=SECRET),
    )
    results: dict[str, Any] = {}

    async def work() -> None:
        async with (
            stdio_client(face) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            results["first"] = await session.call_tool("execute", {"code": SEEN})

            async def run(name: str, code: str) -> None:
                results[name] = await session.call_tool("execute", {"code": code})

            async with anyio.create_task_group() as group:
                group.start_soon(run, "new", NEW_BROKEN)
                group.start_soon(run, "seen", SEEN)

    anyio.run(work)
    for name in ("first", "seen"):
        answer = results[name]
        assert not answer.is_error, answer.content
        assert "seen printed first" in answer.content[0].text, answer.content
    broken = results["new"]
    assert broken.is_error, broken.content
    text = broken.content[0].text
    assert "not assignable to type 'number'" in text, text
    assert "new printed first" not in text, text
    assert len(asked) == 2, asked
    for question in asked:
        assert '"seen"' in question and SECRET not in question, question
        assert "***" in question, question
    keys = [entry["arguments"]["key"] for entry in journal_of(journal)[before:]]
    assert keys == ["seen", "seen"], keys


DEP_V1 = """# /// script
# dependencies = []
# ///
import time
from pathlib import Path


def slow(seconds: float, marker: str) -> str:
    \"\"\"Sleep, then say which version answered.\"\"\"
    Path(marker).write_text("under way")
    time.sleep(seconds)
    return "v1"


def version() -> str:
    \"\"\"Which version answers.\"\"\"
    return "v1"
"""
DEP_V2 = """# /// script
# dependencies = ["six"]
# ///
import time
from pathlib import Path

import six


def slow(seconds: float, marker: str) -> str:
    \"\"\"Sleep, then say which version answered.\"\"\"
    Path(marker).write_text("under way")
    time.sleep(seconds)
    return "v2 six " + six.__version__


def version() -> str:
    \"\"\"Which version answers.\"\"\"
    return "v2 six " + six.__version__
"""


def test_a_tool_file_edited_with_new_dependencies_while_a_run_calls_it(
    gateway: GatewayProcess,
) -> None:
    """Local tool files' live edits x PEP 723 dependencies x a call in flight x a background
    run: a file's function is called (4 s) when the file is saved anew, as an editor saves
    (a temporary file renamed), now needing `six`. The call in flight answers (the worker
    it started in), the run's next call reaches the new file with its dependency
    installed, and the types follow; nothing is left failed."""
    tool = gateway.directory / "tools" / "dep.py"
    marker = gateway.directory / "dep-marker"
    tool.write_text(DEP_V1)
    try:
        gateway.wait_for_health(
            lambda h: h["servers"].get("dep", {}).get("state") == "connected", 120, "dep.py"
        )
        script = (
            'import { tools } from "toolscript";'
            f" const first = await tools.dep.slow({{ seconds: 4, marker: {json.dumps(str(marker))} }});"
            " const second = await tools.dep.version({});"
            " return [first, second];"
        )
        started = gateway_cli(gateway, "exec", "--background", script)
        assert started.returncode == 0, started.stderr
        run_id = started.stdout.strip().split()[-1]
        wait_until(lambda: marker.exists(), bool, 60, "the slow call under way")
        saved = tool.with_suffix(".py.swp")
        saved.write_text(DEP_V2)
        saved.replace(tool)
        waited = gateway_cli(gateway, "runs", "wait", run_id, "--timeout", "120")
        assert waited.returncode == 0, waited.stdout + waited.stderr
        first, second = json.loads(waited.stdout)
        assert first in ("v1", "v2 six 1.17.0") or first.startswith("v2 six"), waited.stdout
        assert second.startswith("v2 six "), waited.stdout
        ran = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript"; return await tools.dep.version({});',
        )
        assert ran.returncode == 0 and "v2 six" in ran.stdout, ran
        sys.stdout.write(f"\nthe call in flight answered {first!r}, the next {second!r}\n")
    finally:
        tool.unlink()
    gateway.wait_for_health(lambda h: "dep" not in h["servers"], 60, "dep.py gone")


LATE_WRITE = """import { tools } from "toolscript";
await tools.fx.sleep({ seconds: 2 });
return await tools.records.writeRecord({ key: "late", text: "after the yield" });
"""


def test_a_config_saved_by_an_editor_while_a_yielded_face_run_waits_for_approval(
    tmp_path: Path,
) -> None:
    """The MCP face's own gateway x a run it yielded (wait_run) x approval asked through
    wait_run's elicitation x the config saved by an editor (a temporary file renamed over
    it) adding a server and changing the records server's env (it restarts): the person
    is asked again, of the new records process, and once approved the write reaches it
    once (it failed at once, 'server records is still connecting', when the person
    answered before the new process had connected), wait_run gives the result, and
    search_tools (which waits for the build of the changed list) finds the added server's
    tools (it found none, when the search came as that server still connected, or as a
    second one connected after the first). A search of a server an edit saved a moment
    before adds finds its tools (it said the server was not found)."""
    import anyio
    import mcp_types
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    journal = tmp_path / "journal.jsonl"
    config: dict[str, Any] = {
        "mcpServers": {
            "fx": fixture_server(),
            "records": records_server(
                env={"RECORDS_JOURNAL": str(journal)}, policy={"write_record": "ask"}
            ),
        },
        "search": {"semantic": False},
    }
    config_path = tmp_path / ".toolscript.json"
    config_path.write_text(json.dumps(config))
    asked: list[str] = []
    saved = anyio.Event()

    def save_as_an_editor() -> None:
        edited = json.loads(config_path.read_text())
        edited["mcpServers"]["weather"] = fixture_server()
        edited["mcpServers"]["records"]["env"]["RECORDS_MOOD"] = "edited"
        temporary = tmp_path / ".toolscript.json.tmp"
        temporary.write_text(json.dumps(edited, indent=2))
        temporary.replace(config_path)

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        if not saved.is_set():
            save_as_an_editor()
            saved.set()
            await anyio.sleep(3)  # the watch applies the edit while the person reads
        return mcp_types.ElicitResult(action="accept", content={"always": False})

    async def work() -> tuple[Any, Any, Any]:
        async with (
            stdio_client(face_of(tmp_path, "--yield-after", "1")) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            first = await session.call_tool("execute", {"code": LATE_WRITE})
            run_id = (first.structured_content or {}).get("run")
            assert run_id, first
            waited = await session.call_tool("wait_run", {"run": run_id})
            while (waited.structured_content or {}).get("running"):
                waited = await session.call_tool("wait_run", {"run": run_id})
            found = await session.call_tool(
                "search_tools", {"query": "plain text", "server": "weather"}
            )
            # a second save, and at once a search of the server it adds
            edited = json.loads(config_path.read_text())
            edited["mcpServers"]["hail"] = fixture_server()
            temporary = tmp_path / ".toolscript.json.tmp"
            temporary.write_text(json.dumps(edited))
            temporary.replace(config_path)
            at_once = await session.call_tool(
                "search_tools", {"query": "plain text", "server": "hail"}
            )
            servers = await session.call_tool("list_servers", {})
            return waited, found, servers, at_once

    waited, found, servers, at_once = anyio.run(work)
    assert "hail.plain_text" in at_once.content[0].text, at_once.content
    # the records server changed while the person was asked: asked again, of the new one
    assert len(asked) == 2, asked
    assert "Asked again: server 'records' changed in the config" in asked[1], asked
    assert not waited.is_error, waited.content[0].text
    assert waited.structured_content == {"result": {"key": "late", "written": True}}, waited
    assert [entry["arguments"]["key"] for entry in journal_of(journal)] == ["late"]
    assert "weather" in found.content[0].text, (found.content, servers.content)
    assert "weather" in servers.content[0].text, servers.content
