"""A new user's first hour, the paths the first pass (test_first_hour.py) did not take: HTTP
and SSE servers configured a little wrong, and Python tool files written by hand.

Each test asserts what the user is told, as the CLI shows it, with real servers and a real
gateway process.
"""

from __future__ import annotations

import http.server
import json
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    FIXTURE_SERVER,
    GatewayProcess,
    background_server,
    free_port,
    toolscript_cli,
    wait_until,
)
from toolscript.upstream.limits import REQUEST_RATE

SECRET = "s3cret-token-value"


class Answering:
    """An HTTP server that answers every request alike: 401 Unauthorized, as an API refusing
    a key, or a web page."""

    def __init__(self, status: int, body: bytes = b"") -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(status)
                if status == 401:
                    self.send_header("WWW-Authenticate", "Bearer")
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return toolscript_cli(*args, cwd=project, env={"TOOLSCRIPT_HOME": str(project / "home")})


def listed(project: Path) -> dict[str, dict[str, Any]]:
    servers = json.loads(run(project, "list-servers", "--json").stdout)
    return {server["name"]: server for server in servers}


def every_server_tried(project: Path, count: int, timeout: float) -> None:
    """Wait until the project's ``count`` servers (its tool files among them) each connected
    or failed."""
    wait_until(
        lambda: listed(project),
        lambda servers: (
            len(servers) == count
            and all(s["state"] in ("connected", "failed") for s in servers.values())
        ),
        timeout,
        "every tool file tried",
    )


# -- HTTP and SSE servers -----------------------------------------------------------


@pytest.fixture(scope="module")
def url_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A gateway of URL servers each configured the way a user gets it wrong at first."""
    project = tmp_path_factory.mktemp("url-servers")
    http_port, sse_port = free_port(), free_port()
    refusing, page = Answering(401), Answering(200, b"<html><body>Welcome</body></html>")
    with ExitStack() as stack:
        stack.callback(refusing.close)
        stack.callback(page.close)
        for transport, port in (("streamable-http", http_port), ("sse", sse_port)):
            stack.enter_context(
                background_server([sys.executable, str(FIXTURE_SERVER), transport, str(port)], port)
            )
        http, sse, closed = (
            f"http://127.0.0.1:{http_port}",
            f"http://127.0.0.1:{sse_port}",
            f"http://127.0.0.1:{refusing.port}",
        )
        config = {
            "mcpServers": {
                "good": {"url": f"{http}/mcp"},
                "goodsse": {"type": "sse", "url": f"{sse}/sse"},
                "wrongpath": {"url": f"{http}/api/mcp?key={SECRET}"},
                "ssenottyped": {"url": f"{sse}/sse"},
                "httpassse": {"type": "sse", "url": f"{http}/mcp"},
                "keyed": {"url": f"{closed}/mcp", "headers": {"Authorization": f"Bearer {SECRET}"}},
                "keyedsse": {"type": "sse", "url": f"{closed}/sse", "headers": {"X-Api-Key": "k"}},
                "oauth": {"url": f"{closed}/mcp"},
                "webpage": {"url": f"http://127.0.0.1:{page.port}/"},
                "webpagesse": {"type": "sse", "url": f"http://127.0.0.1:{page.port}/"},
            },
            "search": {"semantic": False},
        }
        gateway = GatewayProcess(
            config, project, "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(project / "home")}
        )
        stack.callback(gateway.stop)
        wait_until(
            lambda: listed(project),
            lambda servers: all(s["state"] not in ("connecting", "") for s in servers.values()),
            60,
            "every server tried",
        )
        yield project


def test_a_url_that_is_not_the_endpoint_names_the_http_status(url_servers: Path) -> None:
    # It said "MCPError: Not Found": not which answer, nor what to check.
    error = listed(url_servers)["wrongpath"]["error"]
    assert "answered HTTP 404 Not Found" in error, error
    assert "is the URL its MCP endpoint?" in error
    assert SECRET not in error  # the path and query may hold a token: only the origin is named


def test_an_sse_server_without_its_type_is_told_to_say_sse(url_servers: Path) -> None:
    # It said "MCPError: Server returned an error response".
    error = listed(url_servers)["ssenottyped"]["error"]
    assert "answered HTTP 405" in error, error
    assert '"type": "sse"' in error


def test_a_streamable_server_typed_sse_is_told_to_drop_the_type(url_servers: Path) -> None:
    # It said httpx's "Client error '400 Bad Request' for url '...'", the whole URL included.
    error = listed(url_servers)["httpassse"]["error"]
    assert 'remove "type": "sse"' in error, error
    assert "/mcp" not in error


@pytest.mark.parametrize(
    ("name", "header"), [("keyed", "Authorization"), ("keyedsse", "X-Api-Key")]
)
def test_a_401_to_the_configured_headers_names_the_headers_not_a_sign_in(
    url_servers: Path, name: str, header: str
) -> None:
    # It said "needs a sign-in: run `toolscript auth keyed`", which then asked the user to
    # register an OAuth app with a server that only wanted the right key.
    server = listed(url_servers)[name]
    assert server["state"] == "failed", server
    assert f"headers.{header}" in server["error"]
    assert SECRET not in server["error"]


@pytest.mark.parametrize("name", ["webpage", "webpagesse"])
def test_a_url_that_answers_with_a_web_page_is_said_to(url_servers: Path, name: str) -> None:
    # It said "MCPError: Unexpected content type: text/html" (an SSEError for sse).
    error = listed(url_servers)[name]["error"]
    assert "the URL answers with a web page: is it the server's MCP endpoint?" in error, error


def test_a_401_with_no_headers_still_asks_for_a_sign_in(url_servers: Path) -> None:
    server = listed(url_servers)["oauth"]
    assert server["state"] == "needs_auth", server
    assert "toolscript auth oauth" in server["error"]


@pytest.mark.parametrize("name", ["good", "goodsse"])
def test_an_http_or_sse_servers_flood_of_requests_is_cut_and_said(
    url_servers: Path, name: str
) -> None:
    # A stdio server's own requests (pings, questions) past REQUEST_RATE a second were
    # dropped and said once; an HTTP or SSE server's were each answered, however many.
    script = f'import {{ tools }} from "toolscript";\nreturn await tools.{name}.pingStorm({{ count: 300 }});\n'
    ran = run(url_servers, "exec", script)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["result"] < 300
    status = run(url_servers, "gateway", "status").stdout
    assert f"warning: {name}: sent over {REQUEST_RATE} requests a second" in status, status


# -- Python tool files --------------------------------------------------------------

INTERNAL = '''
"""Text tools."""


def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def whisper(text):
    """Lower-case a text (its writer forgot the type hints)."""
    return text.lower()
'''

EXTERNAL = """# /// script
# dependencies = []
# ///


def count(text: str) -> int:
    \"\"\"Count the words.\"\"\"
    return len(text.split())


def loose(text):
    return text
"""


MISSING = "import a_module_nobody_installed\n\n\ndef f(x: int) -> int:\n    return x\n"


@pytest.fixture(scope="module")
def tool_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    project = tmp_path_factory.mktemp("tool-files")
    (project / "tools").mkdir()
    (project / "tools" / "text.py").write_text(INTERNAL)
    (project / "tools" / "words.py").write_text(EXTERNAL)
    (project / "tools" / "needsdep.py").write_text(MISSING)
    (project / "tools" / "undeclared.py").write_text(
        "# /// script\n# dependencies = []\n# ///\n" + MISSING
    )
    gateway = GatewayProcess(
        {"localTools": {"dir": "tools"}, "search": {"semantic": False}},
        project,
        "--no-warm-checker",
        env={"TOOLSCRIPT_HOME": str(project / "home")},
    )
    try:
        every_server_tried(project, 4, 120)
        yield project
    finally:
        gateway.stop()


@pytest.mark.parametrize(("server", "function"), [("text", "whisper"), ("words", "loose")])
def test_a_function_without_type_hints_is_said_not_to_be_a_tool(
    tool_files: Path, server: str, function: str
) -> None:
    # It was left out without a word: the user's tool was simply not there.
    status = run(tool_files, "gateway", "status")
    assert f"warning: {server}: {function}() is not a tool: it has no type hints" in status.stdout
    assert f"name it _{function}" in status.stdout
    asked = run(tool_files, "get-types", server, function)
    assert asked.returncode == 1
    assert f"{server}.{function}() is not a tool: it has no type hints" in asked.stderr
    assert "did you mean" not in asked.stderr


def test_the_annotated_functions_of_those_files_are_tools(tool_files: Path) -> None:
    tools = json.loads(run(tool_files, "list-tools", "text", "--json").stdout)
    assert [tool["name"] for tool in tools] == ["shout"]
    tools = json.loads(run(tool_files, "list-tools", "words", "--json").stdout)
    assert [tool["name"] for tool in tools] == ["count"]


def test_a_module_an_internal_file_cannot_import_says_where_it_may_come_from(
    tool_files: Path,
) -> None:
    # It said "ModuleNotFoundError: No module named ..." and no more.
    error = listed(tool_files)["needsdep"]["error"]
    assert error.startswith("ModuleNotFoundError: No module named 'a_module_nobody_installed'")
    assert "PEP 723 header" in error and '"dependencies"' in error


def test_a_module_a_worker_file_does_not_declare_is_named_without_its_traceback(
    tool_files: Path,
) -> None:
    # It said five lines of traceback joined by " / ", frozen importlib frames first.
    error = listed(tool_files)["undeclared"]["error"]
    assert "No module named 'a_module_nobody_installed'" in error
    assert '"dependencies" of the file\'s PEP 723 header' in error
    assert "frozen importlib" not in error


# -- trust --------------------------------------------------------------------------


def test_trust_of_a_config_naming_an_unset_variable_trusts_it_and_says_so(
    tmp_path: Path,
) -> None:
    # It refused (exit 2, "environment variable ... is not set"): the user who read the file
    # had to export a token before trust would record what the file says.
    config = {
        "mcpServers": {
            "api": {
                "url": "https://api.example.com/mcp",
                "headers": {"Authorization": "Bearer ${TOOLSCRIPT_TEST_UNSET_TOKEN}"},
            }
        }
    }
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    env = {
        "TOOLSCRIPT_HOME": str(tmp_path / "home"),
        "TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "trust"),
        "TOOLSCRIPT_TRUSTED_PATHS": "",
    }
    trusted = toolscript_cli("trust", cwd=tmp_path, env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert "api: https://api.example.com/mcp" in trusted.stdout
    assert "not set here: TOOLSCRIPT_TEST_UNSET_TOKEN" in trusted.stderr
    listed = toolscript_cli("trust", "--list", cwd=tmp_path, env=env)
    assert str(tmp_path / ".toolscript.json") in listed.stdout
    # what starts servers still names the variable: that server is not started (the rest
    # would be: test_first_hour5.py)
    checked = toolscript_cli("config", "check", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stderr
    assert (
        "mcpServers.api: not started: environment variable TOOLSCRIPT_TEST_UNSET_TOKEN is not set"
        in (checked.stderr)
    )
