"""A URL server's failed connection told by the HTTP error that refused it (upstream/server.py
``refused_message``), and only by one that did."""

from __future__ import annotations

import anyio
import httpx
import pytest

from toolscript.config import ServerConfig
from toolscript.upstream.server import TIMED_OUT, UpstreamServer

URL = "http://127.0.0.1:9/mcp"


def _answered(server: UpstreamServer, method: str, status: int) -> None:
    response = httpx.Response(status, request=httpx.Request(method, URL))
    anyio.run(server._note_response, response)


def test_a_streamable_server_s_405_to_its_get_stream_is_not_the_failure() -> None:
    """The SDK opens a GET stream once initialized; a server without one answers 405, as the
    spec says, and the connection goes on: a tools/list timing out after it was said to be
    'answered HTTP 405 ...: if it is an SSE server, give its entry "type": "sse"'."""
    server = UpstreamServer(ServerConfig(name="remote", transport="http", url=URL))
    _answered(server, "GET", 405)
    _answered(server, "DELETE", 405)
    server._fail(TimeoutError())
    assert server.error is not None and server.error.startswith(TIMED_OUT), server.error
    assert "405" not in server.error


def test_a_refused_post_is_the_failure_told() -> None:
    server = UpstreamServer(ServerConfig(name="remote", transport="http", url=URL + "?k=s3cret"))
    _answered(server, "POST", 404)
    server._fail(RuntimeError("Client error '404 Not Found' for url '" + URL + "?k=s3cret'"))
    assert server.error is not None
    assert server.error.startswith(
        "http://127.0.0.1:9 answered HTTP 404 Not Found while connecting"
    )
    assert "s3cret" not in server.error
    sse = UpstreamServer(ServerConfig(name="events", transport="sse", url="http://127.0.0.1:9/x"))
    _answered(sse, "GET", 404)
    sse._fail(RuntimeError("refused"))
    assert sse.error is not None and "answered HTTP 404" in sse.error


def test_a_server_error_is_not_told_as_a_wrong_url() -> None:
    """A 500 (the server reached, and failing: a database down behind it) was told "is the
    URL its MCP endpoint?", sending the user to check a URL that was right."""
    server = UpstreamServer(ServerConfig(name="remote", transport="http", url=URL))
    _answered(server, "POST", 500)
    server._fail(RuntimeError("Server returned an error response"))
    assert server.error is not None
    assert server.error.startswith("http://127.0.0.1:9 answered HTTP 500 Internal Server Error")
    assert "failed on its side (its own log says why)" in server.error
    assert "MCP endpoint" not in server.error


def test_a_server_nothing_answers_for_asks_whether_it_runs() -> None:
    """httpx's "All connection attempts failed", after the address, was all the user read."""
    server = UpstreamServer(ServerConfig(name="remote", transport="http", url=URL))
    server._fail(httpx.ConnectError("All connection attempts failed"))
    assert server.error == (
        "cannot connect to http://127.0.0.1:9: ConnectError: All connection attempts failed "
        "(is the server running, at that address? it is tried again)"
    )


def test_a_403_points_at_the_credentials_not_the_url() -> None:
    """403 Forbidden (a token without the scope, or none) was told "is the URL its MCP
    endpoint?"."""
    keyed = UpstreamServer(
        ServerConfig(name="remote", transport="http", url=URL, headers={"X-Key": "k"})
    )
    _answered(keyed, "POST", 403)
    keyed._fail(RuntimeError("Server returned an error response"))
    assert keyed.error == (
        "http://127.0.0.1:9 answered HTTP 403 Forbidden while connecting: it refuses this "
        "client: check the token its entry's headers send (its scopes, its account's access)"
    )
    bare = UpstreamServer(ServerConfig(name="remote", transport="http", url=URL))
    _answered(bare, "POST", 403)
    bare._fail(RuntimeError("Server returned an error response"))
    assert bare.error is not None and "MCP endpoint" not in bare.error
    assert "`toolscript auth remote`" in bare.error


def test_what_moves_a_server_its_entry_is_not_to_blame_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call to a server behind a refusing proxy, or awaiting a sign-in, was hinted "fix its
    entry in .toolscript.json": its entry holds nothing to fix (gateway/core.py reads
    ``remedy`` for that hint); an error its entry causes leaves it unset."""
    from toolscript.upstream.oauth import SignInNeeded

    for variable in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", "http://someone:hunter2@127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://someone:hunter2@127.0.0.1:9")
    # (a server on this machine is reached directly, never through the proxy: one elsewhere)
    elsewhere = "http://mcp.internal.example:9/mcp"
    server = UpstreamServer(ServerConfig(name="remote", transport="http", url=elsewhere))
    server._fail(httpx.ConnectError("All connection attempts failed"))
    assert server.remedy == (
        "start the proxy http://127.0.0.1:9, or add mcp.internal.example to NO_PROXY where "
        "the gateway starts (it reads its environment then)"
    )
    server._fail(SignInNeeded("sign in"))
    assert server.remedy is not None and server.remedy.startswith("run `toolscript auth ")
    server._fail(TimeoutError())  # its own: its entry (or --connect-timeout) moves it
    assert server.remedy is None
