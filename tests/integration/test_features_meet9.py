"""Where features meet, ninth pass (the others: test_features_meet.py to _meet8.py): one real
gateway with the fixture server, the records server (an `ask` rule on write_record) and a
folder of local tool files; the real Deno and real SQLite, the `mcp` SDK's client and the MCP
Inspector's CLI for the MCP face. exec (and search --output types) while another process's
build (a `doit` by hand) holds the cache's lock and a tool file was added: a run of the
served tools goes on at once, one naming the new tool is told why it is missing."""

from __future__ import annotations

import fcntl
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
    fixture_server,
    gateway_cli,
    needs_semantic,
    records_server,
    running_gateway,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("features-meet9")
    (directory / "tools").mkdir()
    config = {
        "mcpServers": {
            "fx": fixture_server(),
            "records": records_server(
                env={"RECORDS_JOURNAL": str(directory / "journal.jsonl")},
                policy={"write_record": "ask"},
            ),
        },
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    running = GatewayProcess(config, directory)
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
