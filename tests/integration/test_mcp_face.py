"""`toolscript mcp`: the MCP face, driven by the `mcp` SDK's own client over stdio and HTTP,
with real MCP servers behind a real gateway and scripts run in the real Deno sandbox."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import (
    ROOT,
    argv,
    clean_env,
    fixture_server,
    fx_waits_for,
    python_bin,
    running_gateway,
    wait_until,
)
from toolscript.gateway.state import gateway_state_file
from toolscript.plumbing.processes import stop_process

TWO_SERVERS = """import { tools } from "toolscript";
const [now, weather] = await Promise.all([
  tools.time.getCurrentTime({ timezone: "Asia/Tokyo" }),
  tools.fx.structured({ city: "Paris" }),
]);
console.log("asked two servers");
return { zone: now.timezone, city: (weather as { city: string }).city };
"""


def project(directory: Path) -> Path:
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time"), "description": "Clock"},
            "fx": fixture_server(description="Fixtures"),
        }
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".toolscript.json").write_text(json.dumps(config))
    return directory


def config_of(directory: Path) -> Path:
    return directory / ".toolscript.json"


def face_env(home: Path | None) -> dict[str, str]:
    """The face's environment; ``home`` None shares the user cache (and so the state files)
    of gateways the tests start."""
    env = clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING")
    if home is not None:
        env["TOOLSCRIPT_HOME"] = str(home)
    return env


def faces() -> list[psutil.Process]:
    """The `toolscript mcp` processes this test started (children of the test process)."""
    return [
        child
        for child in psutil.Process().children()
        if argv(child)[1:4] == ["-m", "toolscript", "mcp"]
    ]


def tree(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def sandboxes(face: psutil.Process) -> list[psutil.Process]:
    """The Deno sandboxes below the face (not its gateway's type checker, `deno lsp`)."""
    found = []
    for process in tree(face):
        try:
            if "deno" in process.name() and "run" in argv(process):
                found.append(process)
        except psutil.Error:
            continue
    return found


def survivors(processes: list[psutil.Process], timeout: float = 30) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    for leftover in alive:
        leftover.kill()
    return alive


@asynccontextmanager
async def stdio_face(
    directory: Path, home: Path | None, *args: str
) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", *args],
        cwd=str(directory),
        env=face_env(home),
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def execute(session: ClientSession, code: str, **arguments: Any) -> Any:
    return await session.call_tool("execute", {"code": code, **arguments})


def test_stdio_face_end_to_end_with_a_gateway_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, home = project(tmp_path / "project"), tmp_path / "home"
    seen: list[psutil.Process] = []

    async def session_work() -> None:
        async with stdio_face(directory, home, "--config", str(config_of(directory))) as session:
            listed = await session.list_tools()
            by_name = {tool.name: tool for tool in listed.tools}
            assert set(by_name) == {
                "search_tools",
                "get_types",
                "execute",
                "wait_run",
                "run_script",
                "save_script",
                "read_resource",
                "list_servers",
            }
            assert by_name["search_tools"].annotations.read_only_hint is True
            assert by_name["execute"].output_schema is not None
            assert all(tool.input_schema.get("type") == "object" for tool in listed.tools)

            found = await session.call_tool("search_tools", {"query": "current time", "limit": 3})
            assert not found.is_error, text(found)
            hits = found.structured_content["hits"]
            assert hits[0]["call"] == "tools.time.getCurrentTime"
            assert "time.get_current_time → tools.time.getCurrentTime" in text(found)

            types = await session.call_tool("get_types", {"tools": ["time.get_current_time"]})
            assert "getCurrentTime(params: TimeGetCurrentTimeParams)" in text(types)
            assert "timezone: string;" in text(types)
            whole = await session.call_tool("get_types", {"tools": ["fx"], "example": True})
            assert "plainText(" in text(whole) and "await tools.fx." in text(whole)
            missing = await session.call_tool("get_types", {"tools": ["fx.plain_txt"]})
            assert missing.is_error and "plain_text" in text(missing)

            ran = await execute(session, TWO_SERVERS)
            assert not ran.is_error, text(ran)
            assert ran.structured_content == {"result": {"zone": "Asia/Tokyo", "city": "Paris"}}
            assert text(ran).startswith("asked two servers\n")

            servers = await session.call_tool("list_servers", {})
            states = {row["name"]: row for row in servers.structured_content["servers"]}
            assert states["time"]["state"] == "connected" and states["fx"]["tools"] >= 10
            assert "time: connected, 2 tools (Clock)" in text(servers)

            # The face started a gateway of its own, in its own process (its servers are the
            # face's children): no state file, so no other command uses it.
            (face,) = faces()
            seen.extend(tree(face))
            assert not any(argv(p)[1:4] == ["-m", "toolscript", "gateway"] for p in seen)
            assert any(
                "mcp-server-time" in " ".join(argv(p)) and p.ppid() == face.pid for p in seen
            )
            monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
            assert (home / "deno").is_dir(), "the face did not use its TOOLSCRIPT_HOME"
            assert not gateway_state_file(directory / ".toolscript").exists()

            # A new upstream tool: the face's own list stays; search and types see the tool.
            added = await execute(
                session,
                'import { tools } from "toolscript";\n'
                'return await tools.fx.addTool({ name: "shiny_new_tool" });',
            )
            assert not added.is_error, text(added)
            for _ in range(600):  # the rebuild waits for the tools' embeddings (busy machine)
                found = await session.call_tool("search_tools", {"query": "shiny_new_tool"})
                if "shiny_new_tool" in text(found):
                    break
                await anyio.sleep(0.1)
            assert "fx.shiny_new_tool → tools.fx.shinyNewTool" in text(found)
            assert "shinyNewTool(" in text(
                await session.call_tool("get_types", {"tools": ["fx.shiny_new_tool"]})
            )
            assert len((await session.list_tools()).tools) == 8

    anyio.run(session_work)
    assert seen, "the face was never seen running"
    assert survivors(seen) == [], "the face left processes behind"


def test_stdio_face_error_results(tmp_path: Path) -> None:
    directory, home = project(tmp_path / "project"), tmp_path / "home"

    async def session_work() -> None:
        async with stdio_face(directory, home, "-c", str(config_of(directory))) as session:
            typed = await execute(session, 'const n: number = "seven";\nreturn n;')
            assert typed.is_error
            assert "does not type-check, so nothing ran" in text(typed)
            assert "script.ts:1:7" in text(typed)
            assert "--no-check" not in text(typed)

            forgot = await execute(session, 'return await tools.fx.fail({ message: "x" });')
            assert forgot.is_error
            assert 'import { tools } from "toolscript";' in text(forgot), text(forgot)

            thrown = await execute(session, 'throw new Error("no such project");')
            assert thrown.is_error and "no such project" in text(thrown)
            assert "script.ts:1:7" in text(thrown)

            failed_call = await execute(
                session,
                'import { tools } from "toolscript";\nawait tools.fx.fail({ message: "bad id" });',
            )
            assert failed_call.is_error and "ToolError" in text(failed_call)
            assert "fx.fail" in text(failed_call) and "script.ts:2:1" in text(failed_call)

            slow = await execute(
                session, "await new Promise((r) => setTimeout(r, 60000));", timeout=1
            )
            assert slow.is_error and "longer than 1 s" in text(slow)
            assert "pass a larger timeout" in text(slow)

            secret = await execute(session, 'return await Deno.readTextFile("/etc/hostname");')
            assert secret.is_error and "scripts cannot read files" in text(secret)
            environment = await execute(session, 'return Deno.env.get("HOME");')
            assert environment.is_error and "cannot see environment variables" in text(environment)

            invalid = await session.call_tool("execute", {"timeout": 5})
            assert invalid.is_error and 'missing required property "code"' in text(invalid)
            unknown = await session.call_tool("get_types", {"tools": ["ghost"]})
            assert unknown.is_error and "ghost" in text(unknown)
            # named as the agent wrote it, not as the gateway's fx__nope
            for spelling in ("tools.fx.nope", "fx.nope"):
                typo = await session.call_tool("get_types", {"tools": [spelling]})
                assert typo.is_error and f"tool not found: {spelling}" in text(typo), text(typo)
                assert "fx__nope" not in text(typo)

    anyio.run(session_work)


def test_face_hints_name_the_face_tools_not_commands(tmp_path: Path) -> None:
    """An MCP client's model may have no shell: a hint names the face's own tool."""
    directory, home = project(tmp_path / "project"), tmp_path / "home"

    async def session_work() -> None:
        async with stdio_face(directory, home, "-c", str(config_of(directory))) as session:
            missing = await session.call_tool("get_types", {"tools": ["time.nothing_close"]})
            assert missing.is_error and 'get_types with ["time"]' in text(missing)
            unsaved = await session.call_tool("run_script", {"name": "weekly"})
            assert unsaved.is_error and "save_script" in text(unsaved)
            for result in (missing, unsaved):
                assert "`toolscript " not in text(result), text(result)

    anyio.run(session_work)


@pytest.fixture
def shared_gateway(tmp_path: Path) -> Iterator[Any]:
    directory = project(tmp_path / "project")
    config = json.loads((directory / ".toolscript.json").read_text())
    with running_gateway(config, directory) as gateway:
        yield gateway


def test_stdio_face_reuses_the_project_gateway_and_stops_a_script_whose_client_left(
    shared_gateway: Any, tmp_path: Path
) -> None:
    seen: list[psutil.Process] = []
    names: list[str] = []

    async def session_work() -> None:
        async with stdio_face(shared_gateway.directory, None) as session:
            assert not (await session.call_tool("list_servers", {})).is_error
            (face,) = faces()
            assert not any("gateway" in argv(p) for p in tree(face)), "started its own"
            # nor one in its own process, which would have started the servers
            assert not any("mcp-server-time" in " ".join(argv(p)) for p in tree(face))
            code = (
                'import { tools } from "toolscript";\nreturn await tools.fx.sleep({ seconds: 30 });'
            )
            async with anyio.create_task_group() as group:
                group.start_soon(execute, session, code)
                # the script's call is under way: the server says so
                await anyio.to_thread.run_sync(
                    lambda: fx_waits_for(shared_gateway, sleeping=30, timeout=120)
                )
                seen.extend(tree(face))
                # (named while they run: the sandbox is gone once the client has left)
                names.extend(" ".join(argv(p)[:1]) for p in seen)
                group.cancel_scope.cancel()  # the client leaves while the script still sleeps
            assert any("deno" in name for name in names), "no sandbox was running"

    anyio.run(session_work)  # the client leaves while the script still sleeps
    assert survivors(seen) == []
    assert shared_gateway.process.poll() is None, "the face stopped a gateway it did not own"
    # the gateway cancels the call once it sees the run's connection gone: soon, not at once
    wait_until(
        lambda: shared_gateway.call("fx__cancelled").json(),
        lambda cancelled: 30 in cancelled,
        what="the script's tool call cancelled at the server",
    )


@contextmanager
def http_face(
    directory: Path, home: Path, *args: str
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "mcp", "--http", *args],
        cwd=directory,
        env=face_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield process, url
    finally:
        stop_process(process, 30)


def test_http_face_serves_two_clients_behind_the_token_and_host_checks(tmp_path: Path) -> None:
    directory, home = project(tmp_path / "project"), tmp_path / "home"
    with http_face(directory, home, "--config", str(config_of(directory))) as (process, url):
        token = url.split("/")[3]
        assert len(token) >= 32
        base = url.rsplit("/", 2)[0]
        assert httpx.post(base + "/wrong/mcp", json={}).status_code == 401
        port = url.split(":")[2].split("/")[0]
        forged = httpx.post(url, json={}, headers={"Host": f"evil.example:{port}"})
        assert forged.status_code == 403

        results: dict[int, Any] = {}

        async def one_client(number: int) -> None:
            async with (
                streamable_http_client(url) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                initialized = await session.initialize()
                assert "search_tools" in (initialized.instructions or "")
                assert len((await session.list_tools()).tools) == 8
                results[number] = await execute(session, TWO_SERVERS)

        async def both() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(one_client, 1)
                group.start_soon(one_client, 2)

        anyio.run(both)
        for result in results.values():
            assert not result.is_error, text(result)
            assert result.structured_content is not None, (text(result), result)
            assert (result.structured_content["result"] or {}).get("city") == "Paris", (
                text(result),
                result.structured_content,
            )
        face = psutil.Process(process.pid)

        running: list[psutil.Process] = []

        async def leaving_client() -> None:
            async with (
                streamable_http_client(url) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                with anyio.move_on_after(5):
                    await execute(
                        session,
                        'import { tools } from "toolscript";\n'
                        "return await tools.fx.sleep({ seconds: 30 });",
                    )
                running.extend(sandboxes(face))
                assert running, "no sandbox was running"

        anyio.run(leaving_client)  # ends its session while the script still sleeps
        # (the run's own sandbox: a spare spawned for a next execute may wait beside it)
        wait_until(
            lambda: [p for p in running if alive(p)],
            lambda left: not left,
            10,
            "the sandbox's end",
        )

        processes = tree(face)
        # its gateway is in its own process: the servers are the face's children
        assert not any(argv(p)[1:4] == ["-m", "toolscript", "gateway"] for p in processes)
        assert any(
            "mcp-server-time" in " ".join(argv(p)) and p.ppid() == face.pid for p in processes
        )
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    assert survivors(processes) == []
    # The secret path survives a restart, so a client's configured URL keeps working.
    with http_face(directory, home, "--config", str(config_of(directory))) as (_, again):
        assert again.split("/")[3] == token


def test_an_untrusted_project_config_starts_nothing(tmp_path: Path) -> None:
    directory = project(tmp_path / "project")
    env = {
        **face_env(tmp_path / "home"),
        "TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "trust"),
        "TOOLSCRIPT_TRUSTED_PATHS": "",
    }

    async def session_work() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "toolscript", "mcp"], cwd=str(directory), env=env
        )
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            refused = await session.call_tool("list_servers", {})
            assert refused.is_error and "is not trusted yet" in text(refused)
            assert "toolscript trust" in text(refused)
            assert "not you: ask them" in text(refused)  # the model reads it, the user trusts
            (face,) = faces()
            assert not any("gateway" in argv(p) for p in tree(face))
            assert not any("mcp-server-time" in " ".join(argv(p)) for p in tree(face))
            # as the hint says: once the user trusts it, the next tool call starts its servers
            subprocess.run(
                [sys.executable, "-m", "toolscript", "trust"], cwd=directory, env=env, check=True
            )
            listed = await session.call_tool("list_servers", {})
            assert not listed.is_error and "time: connected" in text(listed), text(listed)

    anyio.run(session_work)


def test_mcp_command_refuses_bad_input(tmp_path: Path) -> None:
    # A config it cannot use is no bad input of the command: it is served (each tool call
    # says why: test_face_broken_config.py), and said in the client's log; the client
    # closed stdin, so the face ends as it always does then.
    (tmp_path / ".toolscript.json").write_text('{"mcpServers": {"x": {"command": 5}}}')
    started = time.monotonic()
    broken = subprocess.run(
        [sys.executable, "-m", "toolscript", "mcp"],
        cwd=tmp_path,
        env=face_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert broken.returncode == 0, broken.stderr
    assert ".toolscript.json:1:34: mcpServers.x.command: expected string" in broken.stderr
    assert "served all the same" in broken.stderr and "Traceback" not in broken.stderr
    assert time.monotonic() - started < 60
    project(tmp_path)
    port_only = subprocess.run(
        [sys.executable, "-m", "toolscript", "mcp", "--port", "9"],
        cwd=tmp_path,
        env=face_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert port_only.returncode == 2 and "--port needs --http" in port_only.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        in_use = subprocess.run(
            [sys.executable, "-m", "toolscript", "mcp", "--http", "--port", port],
            cwd=tmp_path,
            env=face_env(tmp_path / "home"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert in_use.returncode == 2, in_use.stderr
    assert (
        f"cannot listen on 127.0.0.1:{port}" in in_use.stderr and "Traceback" not in in_use.stderr
    )


def test_the_watchdog_spares_a_process_it_was_told_had_ended() -> None:
    """The face runs many sandboxes: their numbers are forgotten when they end, so a
    watchdog that fires later never stops a process that reused one."""
    watchdog = ROOT / "toolscript" / "execution" / "watchdog.py"
    forgotten = subprocess.Popen(["sleep", "60"], start_new_session=True)
    watched = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        subprocess.run(
            [sys.executable, "-I", "-S", str(watchdog)],
            input=f"g{forgotten.pid}\nfg{forgotten.pid}\ng{watched.pid}\n",
            text=True,
            timeout=30,
            check=True,
        )  # input ends without "done": the face died
        assert watched.wait(10) == -signal.SIGKILL
        assert forgotten.poll() is None
    finally:
        forgotten.kill()
        watched.kill()
        forgotten.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signalled_stdio_face_stops_its_gateway_and_servers(tmp_path: Path, sig: int) -> None:
    directory = project(tmp_path / "project")
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "mcp", "--config", str(config_of(directory))],
        cwd=directory,
        env=face_env(tmp_path / "home"),
        stdin=subprocess.PIPE,  # a client that stays connected and says nothing
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        face = psutil.Process(process.pid)
        seen = wait_until(  # the face starts its gateway (and servers) at once
            lambda: tree(face),
            lambda found: any("mcp-server-time" in " ".join(argv(p)) for p in found),
            60,
            "the face's gateway and its server",
        )
        # the face's gateway, in the face's own process, started the server
        assert not any(argv(p)[1:4] == ["-m", "toolscript", "gateway"] for p in seen)
        process.send_signal(sig)
        assert process.wait(40) is not None
        assert survivors(seen) == []
    finally:
        stop_process(process, 5)
