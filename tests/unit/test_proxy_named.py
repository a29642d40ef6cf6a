"""Which proxy of the environment a connection to an HTTP server goes through, as the
server's reason names it when the connection fails."""

from __future__ import annotations

import pytest

from toolscript.upstream.server import _proxy_for


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_the_proxy_of_the_scheme_else_all_else_none(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _proxy_for("http://127.0.0.1:8000/mcp") is None
    monkeypatch.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    assert _proxy_for("https://api.example.com/mcp") == "socks5://127.0.0.1:1080"
    monkeypatch.setenv("http_proxy", "http://proxy:3128")
    assert _proxy_for("http://mcp.example.com:8000/mcp") == "http://proxy:3128"
    # a server on this machine is reached directly, whatever the variables say
    assert _proxy_for("http://127.0.0.1:8000/mcp") is None


@pytest.mark.parametrize(
    ("url", "proxied"),
    [
        ("http://localhost:8000/mcp", False),
        ("http://127.0.0.1:8000/mcp", False),
        ("http://[::1]:8000/mcp", False),
        ("http://mcp.corp.example/mcp", False),
        ("http://corp.example/mcp", False),
        ("http://notcorp.example/mcp", True),
        ("http://api.example.com/mcp", True),
    ],
)
def test_no_proxy_leaves_its_hosts_out(
    monkeypatch: pytest.MonkeyPatch, url: str, proxied: bool
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    monkeypatch.setenv("NO_PROXY", "localhost, 127.0.0.1,[::1],.corp.example")
    assert (_proxy_for(url) is not None) is proxied
