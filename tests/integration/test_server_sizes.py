"""A server that lists strings and schemas of absurd size (tests/servers/hostile_server.py)
against a real gateway, real Deno and the real CLI: its texts are cut with a marker, its
schemas too large to type are served open, its tools still type-check and run, one
warning says so per kind, and another server's tools are not touched."""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.helpers import ROOT, GatewayProcess, toolscript_cli

HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"
HUGE = 20_000_000
# A real description, a little longer than the longest in the public tool corpus (3,866).
REAL = "Searches the catalogue. " * 200
OPEN = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
BIG_TOOLS: list[dict[str, Any]] = [
    {"name": "huge", "description": {"$repeat": "x", "$times": HUGE}, "inputSchema": OPEN},
    {
        "name": "wide",  # a 5 MB input schema
        "description": "Wide.",
        "inputSchema": {
            "type": "object",
            "properties": {"$many": {"type": "string", "description": "d" * 400}, "$times": 12_000},
        },
    },
    {
        "name": "deep",
        "description": "Deep.",
        "inputSchema": {"$nest": {"type": "string"}, "$times": 100},
    },
    {"name": "fails", "description": "Fails.", "inputSchema": {"type": "object"}},
]
GOOD_TOOLS: list[dict[str, Any]] = [{"name": "find", "description": REAL, "inputSchema": OPEN}]
FIND = 'import { tools } from "toolscript"; return await tools.good.find({ q: "x" });'


def hostile(directory: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    path = directory / f"{name}.json"
    path.write_text(json.dumps(spec))
    return {"command": sys.executable, "args": [str(HOSTILE), str(path)]}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("sizes")
    servers = {
        "big": hostile(
            directory,
            "big",
            {
                "tools": BIG_TOOLS,
                "instructions": {"$repeat": "i", "$times": HUGE},
                "prompts": [{"name": "p", "description": {"$repeat": "p", "$times": HUGE}}],
                "errors": {"fails": {"code": -32000, "message": {"$repeat": "e", "$times": HUGE}}},
            },
        ),
        "good": hostile(directory, "good", {"tools": GOOD_TOOLS}),
    }
    started = GatewayProcess({"mcpServers": servers, "search": {"semantic": False}}, directory)
    started.wait_for_health(
        lambda health: all(s["state"] == "connected" for s in health["servers"].values()),
        timeout=120,
        what="both servers connected",
    )
    yield started
    started.stop()


def cli(gateway: GatewayProcess, *args: str) -> str:
    done = toolscript_cli(*args, cwd=gateway.directory, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_huge_description_is_cut_with_a_marker(gateway: GatewayProcess) -> None:
    types = cli(gateway, "get-types", "big")
    assert f"… [cut: {HUGE - 32_768:,} more characters]" in types
    assert len(types) < 1_000_000  # was: the whole 20 MB, and every script's check read it
    listed = cli(gateway, "list-tools", "big", "--json")
    assert len(listed) < 1_000_000


def test_a_schema_too_large_to_type_is_served_open_with_a_note(gateway: GatewayProcess) -> None:
    types = cli(gateway, "get-types", "big")
    assert "[arguments not typed: the server's input schema is over 262,144 characters]" in types
    assert "[arguments not typed: the server's input schema is nested over 64 levels" in types


@pytest.mark.timeout(300)
def test_its_tools_still_type_check_and_run(gateway: GatewayProcess) -> None:
    script = (
        'import { tools } from "toolscript";\n'
        'const a = await tools.big.huge({ q: "x" });\n'
        "const b = await tools.big.wide({ p0: 'y', anything: 1 });\n"
        "const c = await tools.big.deep({ a: {} });\n"
        "return [a, b, c];"
    )
    assert json.loads(cli(gateway, "exec", script)) == ["huge", "wide", "deep"]
    wrong = toolscript_cli(
        "exec",
        'import { tools } from "toolscript";\nawait tools.big.huge({ q: 1 });',
        cwd=gateway.directory,
        timeout=300,
    )
    assert wrong.returncode != 0 and "q" in wrong.stderr  # a tool cut short keeps its types


def test_another_servers_tools_are_untouched(gateway: GatewayProcess) -> None:
    types = cli(gateway, "get-types", "good")
    assert REAL.strip() in types and "[cut:" not in types
    [tool] = json.loads(cli(gateway, "list-tools", "good", "--json"))
    assert tool["description"] == REAL


def test_one_warning_per_kind_however_many_listings(gateway: GatewayProcess) -> None:
    cli(gateway, "list-prompts", "big")  # a listing again: no second warning
    cli(gateway, "list-prompts", "big")
    log = gateway.log
    for kind in ("tool descriptions", "tool input schemas", "instructions", "prompt descriptions"):
        assert log.count(f"big: {kind}: ") == 1, (kind, log[-5000:])
    assert "good: " not in log.replace("good: connected", "")
    warnings = gateway.health()["servers"]["big"].get("warnings") or []
    assert any(line.startswith("tool descriptions: 1 over 32,768") for line in warnings), warnings


def test_a_huge_error_message_of_a_call_is_cut(gateway: GatewayProcess) -> None:
    """A call's error is the server's text too: the script, its output and the run log get
    it cut with the marker, not 20 MB of it."""
    script = """import { tools } from "toolscript";
try {
  await tools.big.fails({});
} catch (error) {
  return (error as Error).message.length;
}"""
    length = json.loads(cli(gateway, "exec", script))
    assert 1_000 < length < 40_000, length
    done = toolscript_cli(
        "exec",
        'import { tools } from "toolscript"; await tools.big.fails({});',
        cwd=gateway.directory,
        timeout=300,
    )
    assert done.returncode == 1
    assert "[cut: 19,96" in done.stderr and len(done.stderr) < 100_000


@pytest.mark.timeout(300)
def test_a_message_with_no_end_drops_its_server_not_the_gateway(tmp_path: Path) -> None:
    """A server that writes one line with no newline, past what any answer holds: its
    connection is dropped (the call fails, the server is started again), not every byte
    held until the gateway runs out of memory."""
    tools = [
        {"name": name, "description": name, "inputSchema": {"type": "object"}}
        for name in ("flood", "fine")
    ]
    flooding = hostile(tmp_path, "flooding", {"tools": tools, "flood": {"flood": 160}})
    _flood_drops_only_its_server(tmp_path, flooding, "a message over 128 MB (no newline yet)")


def _flood_drops_only_its_server(
    tmp_path: Path, flooding: dict[str, Any], logged: str, env: dict[str, str] | None = None
) -> None:
    """A gateway with ``flooding`` (whose `flood` answer has no end) and a good server: the
    call fails as its server going away, the log says ``logged``, the good server still
    answers, and ``flooding`` connects again and answers its `fine`. ``env``: the gateway's."""
    servers = {"flooding": flooding, "good": hostile(tmp_path, "good", {"tools": GOOD_TOOLS})}
    config = {"mcpServers": servers, "search": {"semantic": False}}
    started = GatewayProcess(config, tmp_path, env=env)
    try:
        started.wait_for_health(
            lambda health: all(s["state"] == "connected" for s in health["servers"].values()),
            timeout=120,
            what="both servers connected",
        )
        flooded = toolscript_cli(
            "exec",
            'import { tools } from "toolscript"; await tools.flooding.flood({});',
            cwd=tmp_path,
            timeout=240,
        )
        assert flooded.returncode == 1, flooded.stdout
        # (not the whole message read, then "Failed to parse JSON response")
        assert "server 'flooding' went away" in flooded.stderr, flooded.stderr
        started.wait_for_log(logged)
        assert json.loads(cli(started, "exec", FIND)) == "find"
        started.wait_for_health(
            lambda health: health["servers"]["flooding"]["state"] == "connected",
            timeout=120,
            what="the flooding server connected again",
        )
        fine = 'import { tools } from "toolscript"; return await tools.flooding.fine({});'
        assert json.loads(cli(started, "exec", fine)) == "fine"
    finally:
        started.stop()


class _FloodingHTTP(BaseHTTPRequestHandler):
    """A streamable HTTP server whose `flood` answer is a JSON body with no end."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *_: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # no stream of its own: the spec's 405
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in message:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        method, params = message["method"], message.get("params") or {}
        if method == "tools/call" and params.get("name") == "flood":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(b'{"jsonrpc": "2.0", "id": %d, "result": "' % message["id"])
                for _ in range(200):  # MB: past the bound, and no end
                    self.wfile.write(b"x" * (1024 * 1024))
            self.close_connection = True
            return
        if method == "initialize":
            result: Any = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "flooding", "version": "1"},
            }
        elif method == "tools/list":
            result = {
                "tools": [
                    {"name": name, "inputSchema": {"type": "object"}} for name in ("flood", "fine")
                ]
            }
        else:
            result = {"content": [{"type": "text", "text": params.get("name", "")}]}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "session")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.mark.timeout(300)
def test_an_http_answer_with_no_end_drops_its_server_not_the_gateway(tmp_path: Path) -> None:
    """As a stdio line: an HTTP server's answer past the bound fails its call at once and
    its session is started again, rather than the gateway reading it until out of memory."""
    http = ThreadingHTTPServer(("127.0.0.1", 0), _FloodingHTTP)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{http.server_address[1]}/mcp"
    try:
        _flood_drops_only_its_server(
            tmp_path, {"url": url}, "the server sent a message over 128 MB"
        )
    finally:
        http.shutdown()


class _ForwardProxy:
    """A forward HTTP proxy, as a corporate one is to the gateway: a request in absolute
    form (``POST http://host:port/mcp HTTP/1.1``) is sent on to its host in origin form,
    and the two connections are then piped both ways. ``forwarded``: connections relayed."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.forwarded = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        head = b""
        with contextlib.ExitStack() as stack:
            stack.enter_context(client)
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            line, _, rest = head.partition(b"\r\n")
            method, target, version = line.split(b" ", 2)
            url = urlsplit(target.decode())
            assert url.hostname is not None and url.port is not None, target
            origin = (url.path or "/") + (f"?{url.query}" if url.query else "")
            # every host it is asked for is this machine's server (the gateway reaches a
            # server on this machine directly, so the test names it otherwise)
            server = stack.enter_context(socket.create_connection(("127.0.0.1", url.port)))
            self.forwarded += 1
            server.sendall(b" ".join([method, origin.encode(), version]) + b"\r\n" + rest)
            back = threading.Thread(target=self._pipe, args=(server, client), daemon=True)
            back.start()
            self._pipe(client, server)
            back.join()

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        """Bytes from ``source`` to ``target`` until either ends; then both are shut."""
        with contextlib.suppress(OSError):
            while chunk := source.recv(1024 * 1024):
                target.sendall(chunk)
        for end in (source, target):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


@pytest.mark.timeout(300)
def test_an_http_answer_with_no_end_through_the_environments_proxy_is_bounded_too(
    tmp_path: Path,
) -> None:
    """A user behind a proxy (HTTP_PROXY, as the SDK's own client honours it) reaches an
    HTTP server through it, and an answer with no end relayed by the proxy drops its server
    as a direct one does, rather than growing the gateway until it runs out of memory."""
    http = ThreadingHTTPServer(("127.0.0.1", 0), _FloodingHTTP)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    proxy = _ForwardProxy()
    url = f"http://flood.example:{http.server_address[1]}/mcp"  # resolved by the proxy alone
    env = {"HTTP_PROXY": proxy.url, "http_proxy": proxy.url, "NO_PROXY": "", "no_proxy": ""}
    try:
        _flood_drops_only_its_server(
            tmp_path, {"url": url}, "the server sent a message over 128 MB", env=env
        )
        assert proxy.forwarded > 0  # the server was reached through the proxy
    finally:
        proxy.close()
        http.shutdown()
