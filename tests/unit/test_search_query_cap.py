"""The gateway's cap on a search request's length, said where a request is made: the MCP
face's search_tools declares it in its input schema, and `toolscript search` refuses a
longer request before it asks (or starts) a gateway."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.errors import UsageError
from toolscript.mcpface.server import build_server
from toolscript.mcpface.tools import TOOLS
from toolscript.search.parameters import MAX_QUERY, check_query_length

TOO_LONG = "find the open issues " * (MAX_QUERY // 21 + 1)


def test_the_cap_is_checked_in_one_place() -> None:
    assert len(TOO_LONG) > MAX_QUERY
    check_query_length("a" * MAX_QUERY)
    with pytest.raises(UsageError, match=f"at most {MAX_QUERY}"):
        check_query_length(TOO_LONG)


def test_the_faces_search_tools_declares_the_cap() -> None:
    search = next(tool for tool in TOOLS if tool["name"] == "search_tools")
    assert search["inputSchema"]["properties"]["query"]["maxLength"] == MAX_QUERY


class _NoSearch:
    """A backend whose search must not be reached."""

    searched = False

    async def search_tools(self, *args: Any) -> Any:
        self.searched = True
        raise AssertionError("a query over the cap reached the backend")


def test_the_face_refuses_a_longer_query_saying_the_cap() -> None:
    backend = _NoSearch()
    server = build_server(backend)  # type: ignore[arg-type]

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("search_tools", {"query": TOO_LONG})

    result = anyio.run(main)
    assert result.is_error and not backend.searched
    text = result.content[0].text
    assert f"at most {MAX_QUERY} characters" in text and f"got {len(TOO_LONG)}" in text
    assert TOO_LONG not in text


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_the_cli_refuses_a_longer_query_before_it_asks_a_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    config = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    # a gateway nobody answers at: asking it would be a different error
    monkeypatch.setenv("TOOLSCRIPT_GATEWAY_URL", f"http://127.0.0.1:{_closed_port()}/token")
    result = CliRunner().invoke(app, ["search", TOO_LONG])
    assert isinstance(result.exception, UsageError)
    assert result.exception.exit_code == 2
    assert f"at most {MAX_QUERY}" in result.exception.message
