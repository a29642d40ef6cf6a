"""The MCP face's own gateway is served in the face's own process (issue 45: one Python
interpreter, one copy of the MCP SDK, less than two): no `gateway start` child, the
servers the face's children; its stdout still carries nothing but JSON-RPC while that
gateway logs; and a client that leaves leaves no process behind. With
TOOLSCRIPT_FACE_GATEWAY=process the face still starts a `gateway start` process."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import LATEST_PROTOCOL_VERSION

from tests.helpers import argv, clean_env, fixture_server, python_bin, wait_until
from toolscript.plumbing.processes import stop_process

SCRIPT = """import { tools } from "toolscript";
const now = await tools.time.getCurrentTime({ timezone: "Asia/Tokyo" });
const weather = await tools.fx.structured({ city: "Paris" });
console.log("asked two servers");
return { zone: now.timezone, city: (weather as { city: string }).city };
"""


def project(directory: Path) -> Path:
    directory.mkdir(parents=True)
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time")},
            "fx": fixture_server(),
        },
        "search": {"semantic": False},
    }
    (directory / ".toolscript.json").write_text(json.dumps(config))
    return directory / ".toolscript.json"


def gateway_processes(processes: list[psutil.Process]) -> list[psutil.Process]:
    """The `toolscript gateway start` processes among ``processes``."""
    return [p for p in processes if argv(p)[1:5] == ["-m", "toolscript", "gateway", "start"]]


def tree(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


class RawClient:
    """A client speaking JSON-RPC over the face's pipes, keeping every line it wrote."""

    def __init__(self, config: Path, env: dict[str, str], command: list[str] | None = None) -> None:
        self.process = subprocess.Popen(
            command or [sys.executable, "-m", "toolscript", "mcp", "--config", str(config)],
            cwd=config.parent,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stdout: list[bytes] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout.append(line)
            self.lines.put(line)

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def initialize(self) -> dict[str, Any]:
        """The MCP handshake (request 1): the face's answer to ``initialize``."""
        params = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        }
        started = self.ask(1, "initialize", params)
        self.send({"method": "notifications/initialized"})
        return started

    def ask(self, number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.send({"id": number, "method": method, "params": params})
        while True:
            answer: dict[str, Any] = json.loads(self.lines.get(timeout=120))
            if answer.get("id") == number:
                return answer


def test_the_face_serves_its_own_gateway_in_its_own_process_and_nothing_else_on_stdout(
    tmp_path: Path,
) -> None:
    """INFO logs from the gateway (connecting, listening, ready) go to stderr; every
    stdout line is a JSON-RPC message; the servers are the face's own children."""
    config = project(tmp_path / "project")
    env = clean_env(TOOLSCRIPT_LOG_LEVEL="INFO", TOOLSCRIPT_HOME=str(tmp_path / "home"))
    client = RawClient(config, env)
    try:
        started = client.initialize()
        assert started["result"]["serverInfo"]["name"] == "toolscript"
        ran = client.ask(2, "tools/call", {"name": "execute", "arguments": {"code": SCRIPT}})
        assert not ran["result"]["isError"], ran
        assert ran["result"]["structuredContent"] == {
            "result": {"zone": "Asia/Tokyo", "city": "Paris"}
        }
        listed = client.ask(3, "tools/call", {"name": "list_servers", "arguments": {}})
        assert "time: connected" in listed["result"]["content"][0]["text"]

        face = psutil.Process(client.process.pid)
        processes = tree(face)
        assert gateway_processes(processes) == [], [argv(p) for p in processes]
        servers = [p for p in processes if "mcp-server-time" in " ".join(argv(p))]
        assert servers and all(server.ppid() == face.pid for server in servers)
    finally:
        assert client.process.stdin is not None
        client.process.stdin.close()
        client.process.wait(30)
    for line in client.stdout:
        assert json.loads(line)["jsonrpc"] == "2.0", line
    logged = b"".join(client.stderr).decode("utf-8", "replace")
    assert "toolscript.gateway: listening on" in logged, logged
    assert "toolscript.gateway: ready:" in logged, logged


@pytest.mark.parametrize("mode", ["", "process"])
def test_a_client_that_leaves_leaves_no_process(tmp_path: Path, mode: str) -> None:
    """The face, its servers, the type checker, the spare sandbox and the watchdog all
    exit once the client has left (stdin closed), the face by itself; the gateway is in the
    face's process unless TOOLSCRIPT_FACE_GATEWAY=process."""
    config = project(tmp_path / "project")
    env = clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING", TOOLSCRIPT_HOME=str(tmp_path / "home"))
    if mode:
        env["TOOLSCRIPT_FACE_GATEWAY"] = mode
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(config)],
        cwd=str(config.parent),
        env=env,
    )
    seen: list[psutil.Process] = []
    commands: list[str] = []
    gateways: list[psutil.Process] = []

    async def client() -> None:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(2):  # the second run takes the spare the first one left
                ran = await session.call_tool("execute", {"code": SCRIPT})
                assert not ran.is_error, ran.content
            (face,) = [
                child
                for child in psutil.Process().children()
                if argv(child)[1:4] == ["-m", "toolscript", "mcp"]
            ]
            found = wait_until(  # the warm checker and the next spare come after a run
                lambda: tree(face),
                lambda found: (
                    any("lsp" in argv(p) for p in found)
                    and any("run" in argv(p) and "deno" in p.name() for p in found)
                ),
                60,
                "the face's type checker and spare sandbox",
            )
            seen.extend(found)
            commands.extend(" ".join(argv(p)) for p in found)
            gateways.extend(gateway_processes(found))

    anyio.run(client)
    assert any("mcp-server-time" in command for command in commands), commands
    assert any("watchdog.sh" in command for command in commands), commands
    assert bool(gateways) == (mode == "process"), commands
    _, alive = psutil.wait_procs(seen, timeout=30)
    for leftover in alive:
        leftover.kill()
    assert alive == [], [argv(p) for p in alive]


def test_a_face_signalled_while_its_gateway_starts_leaves_no_process(tmp_path: Path) -> None:
    """SIGTERM before the gateway in the face's thread is up: the servers spawned for it
    stop with the face."""
    config = project(tmp_path / "project")
    env = clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING", TOOLSCRIPT_HOME=str(tmp_path / "home"))
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "mcp", "--config", str(config)],
        cwd=config.parent,
        env=env,
        stdin=subprocess.PIPE,  # a client that stays connected and says nothing
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        face = psutil.Process(process.pid)
        seen = wait_until(
            lambda: tree(face),
            lambda found: any("mcp-server-time" in " ".join(argv(p)) for p in found),
            60,
            "the face's servers",
        )
        assert gateway_processes(seen) == []
        process.terminate()
        assert process.wait(40) is not None
        _, alive = psutil.wait_procs(seen, timeout=30)
        for leftover in alive:
            leftover.kill()
        assert alive == [], [argv(p) for p in alive]
    finally:
        stop_process(process, 5)


def test_a_face_gateway_asked_to_stop_before_it_started_stops_the_servers_spawned_for_it(
    tmp_path: Path,
) -> None:
    """The face failed after its servers were spawned and before it started the gateway
    (a port in use for --http, say): the servers go with it."""
    from toolscript.gateway.inprocess import InProcessGateway

    config = tmp_path / ".toolscript.json"
    config.write_text(json.dumps({"mcpServers": {"slow": {"command": "sleep", "args": ["60"]}}}))
    gateway = InProcessGateway(str(config), None)
    gateway.prepare()
    # (a child forked a moment ago shows this process's command line until it execs; the
    # server is spawned by its path on PATH, /bin/sleep)
    (server,) = wait_until(
        lambda: [
            p
            for p in psutil.Process().children()
            if [os.path.basename(word) for word in argv(p)[:2]] == ["sleep", "60"]
        ],
        lambda found: len(found) == 1,
        10,
        "the server spawned for the gateway",
    )
    gateway.stop(5)
    assert psutil.wait_procs([server], timeout=10)[1] == []
    assert gateway.wait_for_url(0) == ""


def test_the_face_s_own_gateway_asks_through_the_client_and_follows_config_edits(
    tmp_path: Path,
) -> None:
    """Policy and approvals through elicitation, and a config reload, as with the gateway
    the face used to start as a process."""
    import mcp_types

    from tests.integration.test_policy import WRITE_THEN_DELETE, journal_tools, records_config

    journal = tmp_path / "journal.jsonl"
    directory = tmp_path / "project"
    directory.mkdir()
    config = directory / ".toolscript.json"
    config.write_text(json.dumps(records_config(journal) | {"policy": {"ask": "writes"}}))
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(config)],
        cwd=str(directory),
        env=clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING", TOOLSCRIPT_HOME=str(tmp_path / "home")),
    )
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"always": False})

    async def session_work() -> None:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write, elicitation_callback=approve) as session,
        ):
            await session.initialize()
            approved = await session.call_tool("execute", {"code": WRITE_THEN_DELETE})
            assert not approved.is_error, approved.content
            (face,) = [
                child
                for child in psutil.Process().children()
                if argv(child)[1:4] == ["-m", "toolscript", "mcp"]
            ]
            assert gateway_processes(tree(face)) == []

            edited = records_config(journal)
            edited["mcpServers"]["time"] = {"command": python_bin("mcp-server-time")}
            config.write_text(json.dumps(edited | {"policy": {"ask": "writes"}}))
            for _ in range(600):
                listed = await session.call_tool("list_servers", {})
                if "time: connected" in listed.content[0].text:  # type: ignore[union-attr]
                    break
                await anyio.sleep(0.1)
            assert "time: connected" in listed.content[0].text  # type: ignore[union-attr]

    anyio.run(session_work)
    assert [message.split(",")[0] for message in asked] == [
        "A script calls records.write_record",
        "A script calls records.delete_record",
    ]
    assert journal_tools(journal) == ["write_record", "delete_record"]


# The face's process with its gateway's start swapping sys.stdout as a doit task of that
# gateway's build does (for the whole process, from the gateway's thread), at the worst
# moment: before the face's stdio transport has taken its streams.
SWAPPED_AT_GATEWAY_START = """
import io, sys, threading
from toolscript.gateway.inprocess import InProcessGateway
started = InProcessGateway.start
def start(self):
    real = sys.stdout
    sys.stdout = io.StringIO()
    threading.Timer(3.0, lambda: setattr(sys, "stdout", real)).start()
    return started(self)
InProcessGateway.start = start
sys.argv = ["toolscript", "mcp", "--config", sys.argv[1]]
from toolscript.cli.entry import main
main()
"""


def test_the_faces_transport_holds_whatever_its_gateways_build_does_to_sys_stdout(
    tmp_path: Path,
) -> None:
    """The face takes stdin and stdout for the wire before its gateway's thread starts: a
    build task swapping sys.stdout in that thread cannot take the wire from the face."""
    config = project(tmp_path / "project")
    env = clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home"))
    client = RawClient(config, env, [sys.executable, "-c", SWAPPED_AT_GATEWAY_START, str(config)])
    try:
        started = client.initialize()
        assert started["result"]["serverInfo"]["name"] == "toolscript", client.stderr
        ran = client.ask(2, "tools/call", {"name": "execute", "arguments": {"code": SCRIPT}})
        assert ran["result"]["structuredContent"]["result"]["city"] == "Paris", ran
    finally:
        assert client.process.stdin is not None
        client.process.stdin.close()
        client.process.wait(30)


def test_a_face_killed_by_sigkill_leaves_no_process(tmp_path: Path) -> None:
    """SIGKILL gives the face no clean-up: its watchdog stops the spare sandbox and what
    else it named, the servers and the type checker leave when their pipes close."""
    config = project(tmp_path / "project")
    env = clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING", TOOLSCRIPT_HOME=str(tmp_path / "home"))
    client = RawClient(config, env)
    seen: list[psutil.Process] = []
    try:
        client.initialize()
        for number in (2, 3):  # the second run takes the spare the first one left
            ran = client.ask(
                number, "tools/call", {"name": "execute", "arguments": {"code": SCRIPT}}
            )
            assert not ran["result"]["isError"], ran
        face = psutil.Process(client.process.pid)
        seen.extend(
            wait_until(
                lambda: tree(face),
                lambda found: (
                    any("lsp" in argv(p) for p in found)
                    and any("run" in argv(p) and "deno" in p.name() for p in found)
                    and any("watchdog.sh" in " ".join(argv(p)) for p in found)
                ),
                60,
                "the face's type checker, spare sandbox and watchdog",
            )
        )
        client.process.kill()
        client.process.wait(10)
        _, alive = psutil.wait_procs(seen[1:], timeout=30)
        assert alive == [], [" ".join(argv(p))[:120] for p in alive]
    finally:
        for leftover in seen[1:]:
            with contextlib.suppress(psutil.NoSuchProcess):
                leftover.kill()
        stop_process(client.process, 5)
