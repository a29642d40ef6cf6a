"""An HTTP server's answers and events read through a bound (``upstream/bounded.py``): one
answer or one event past it fails as a broken connection does; a long stream of events
within it is read whole."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest

from toolscript.upstream.bounded import BoundedTransport


class _Chunks(httpx2.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


class _Answers(httpx2.AsyncBaseTransport):
    def __init__(self, chunks: list[bytes]) -> None:
        self.stream = _Chunks(chunks)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, stream=self.stream, request=request)


def _read(chunks: list[bytes], limit: int = 10) -> bytes:
    async def main() -> bytes:
        transport = BoundedTransport(_Answers(chunks), limit)
        async with httpx2.AsyncClient(transport=transport) as client:
            response = await client.get("http://server.invalid/mcp")
            return await response.aread()

    return anyio.run(main)


def test_an_answer_within_the_bound_is_read_whole() -> None:
    assert _read([b"0123", b"45678"]) == b"012345678"


def test_an_answer_past_the_bound_fails_as_a_broken_connection() -> None:
    with pytest.raises(httpx2.RemoteProtocolError, match="over"):
        _read([b"0123456", b"789ab"])


def test_events_each_within_the_bound_are_read_however_long_the_stream() -> None:
    events = [b"data: 1234\n\n"] * 50  # 600 bytes, each event 12 with its blank line
    assert _read(events, limit=12) == b"".join(events)


def test_a_boundary_split_across_two_chunks_still_ends_an_event() -> None:
    chunks = [b"data: 12345\n", b"\ndata: 6789", b"\n\n"]  # 12, then 11: 23 with no end
    assert _read(chunks, limit=14) == b"".join(chunks)


def test_one_event_past_the_bound_fails_even_after_short_ones() -> None:
    with pytest.raises(httpx2.RemoteProtocolError):
        _read([b"data: 1\n\n", b"data: 0123", b"456789ab"])


_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def test_the_environments_proxies_are_honoured_as_the_sdks_client_does_each_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A user behind a proxy reaches an HTTP server through it (as the SDK's own client
    would), and what the proxy relays is bounded as a direct answer is. httpx2 mounts a
    transport per proxy of the environment (``_mounts``; ``_transport`` otherwise): each
    one is read through the bound."""
    from mcp.shared._httpx_utils import create_mcp_http_client as sdk_client

    from toolscript.upstream.sdk import create_mcp_http_client

    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "inside.example")
    outside, inside = httpx2.URL("https://mcp.example/mcp"), httpx2.URL("https://inside.example/")

    theirs = sdk_client()
    assert theirs._transport_for_url(outside) is not theirs._transport  # the proxy's
    assert theirs._transport_for_url(inside) is theirs._transport

    ours = create_mcp_http_client()
    proxied, direct = ours._transport_for_url(outside), ours._transport_for_url(inside)
    assert isinstance(proxied, BoundedTransport) and isinstance(direct, BoundedTransport)
    assert proxied is not direct and direct is ours._transport
    assert all(isinstance(t, BoundedTransport) for t in ours._mounts.values() if t is not None)


def test_a_proxy_of_the_systems_settings_alone_is_not_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no proxy variable set, urllib reads macOS's system settings' proxy too (without
    their exceptions), and httpx2 with it: a server on localhost would be sent to a
    corporate proxy. Only the environment's proxies are honoured."""
    import httpx2._utils

    from toolscript.upstream.sdk import create_mcp_http_client

    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    system = {"http": "http://corp.invalid:8080", "https": "http://corp.invalid:8080"}
    monkeypatch.setattr(httpx2._utils, "getproxies", lambda: system)  # as on macOS
    local = httpx2.URL("http://127.0.0.1:8765/mcp")

    ours = create_mcp_http_client()
    assert ours._transport_for_url(local) is ours._transport
    assert isinstance(ours._transport, BoundedTransport)
    assert ours._mounts == {}


def test_a_socks_proxy_of_the_environment_is_reached_bounded_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ALL_PROXY=socks5://…`` (what many proxy tools set, on macOS too): httpx2 builds a
    SOCKS proxy's transport only with ``socksio``, which its ``socks`` extra brings. Without
    it every HTTP server failed to connect ("ImportError: … pip install httpx[socks]"),
    where it connected before the environment's proxies were honoured."""
    import tomllib

    from tests.helpers import ROOT
    from toolscript.upstream.sdk import create_mcp_http_client

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dep.replace(" ", "").startswith("httpx2[socks]") for dep in project["dependencies"])
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:7890")
    client = create_mcp_http_client()
    proxied = client._transport_for_url(httpx2.URL("https://mcp.example/mcp"))
    assert isinstance(proxied, BoundedTransport) and proxied is not client._transport
