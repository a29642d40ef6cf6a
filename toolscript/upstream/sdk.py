"""Every private piece of the MCP SDK that toolscript relies on, in one place.

The SDK (``mcp`` 2.x) keeps these underscored; they may change in any release.
``tests/unit/test_sdk_contract.py`` pins the behaviour used here, so an SDK upgrade
that breaks one fails loudly in CI rather than in a user's gateway:

- ``TransportStreams``: the (read, write) pair every transport yields; the gateway
  wraps both (``server._WatchedStream``, ``server._RecordingWriter``) to repair
  results and to take raw tools/call replies off the read stream.
- the stdio transport's spawn and shutdown (process group, close stdin, TERM, KILL),
  reused by ``upstream/stdio.py`` around its own linear line reader.
- ``create_mcp_http_client``: the httpx client the SDK's HTTP transports expect, the SDK's
  own (its timeouts, the environment's proxies), its responses bounded (``bounded.py``;
  imported at the first HTTP server: httpx2 is 2 MB that a gateway of stdio servers never
  uses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.client._transport import TransportStreams
from mcp.client.stdio import (
    _create_platform_compatible_process as create_process,
)
from mcp.client.stdio import (
    _get_executable_command as executable_command,
)
from mcp.client.stdio import (
    _stop_server_process as stop_server_process,
)
from mcp.client.stdio import get_default_environment

if TYPE_CHECKING:
    import httpx2

__all__ = [
    "TransportStreams",
    "create_mcp_http_client",
    "create_process",
    "executable_command",
    "get_default_environment",
    "stop_server_process",
]


def create_mcp_http_client(
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: httpx2.Auth | None = None,
) -> httpx2.AsyncClient:
    """The client the SDK's ``create_mcp_http_client`` makes (its default timeouts, the
    environment's proxies as it honours them, but no proxy of the system's settings), every
    response of it read through ``bounded.BoundedTransport``, a proxy's too; the SDK's
    client factory's signature (``sse_client``'s ``httpx_client_factory``)."""
    import urllib.request

    from mcp.shared._httpx_utils import create_mcp_http_client as sdk_client

    from toolscript.upstream.bounded import bounded_client

    client = sdk_client(headers=headers, timeout=timeout, auth=auth)
    if not urllib.request.getproxies_environment():
        # With no proxy variable set, urllib (so httpx2) takes macOS's system settings' proxy
        # as well, without their exceptions: a server on localhost went through a
        # corporate proxy. The environment's proxies alone are honoured (unset: direct).
        client._mounts = {}
    else:
        # A server on this machine is reached directly, whatever HTTP_PROXY says (as the
        # CLI reaches the gateway): through the proxy, another machine was sent its headers
        # and tokens in the clear, and asked its own 127.0.0.1, not this one.
        from httpx2._utils import URLPattern

        direct = {URLPattern(pattern): None for pattern in LOOPBACK_PATTERNS}
        client._mounts = dict(sorted({**client._mounts, **direct}.items()))
    return bounded_client(client)


# This machine's addresses, as httpx2's mount patterns (most specific first when sorted).
LOOPBACK_PATTERNS = (
    "all://127.0.0.0/8",
    "all://[::1]",
    "all://0.0.0.0",
    "all://[::]",
    "all://localhost",
    "all://*.localhost",
)
