"""Choosing what serves a configured server, and listing every server's tools once."""

from __future__ import annotations

from typing import Any

import anyio

from toolscript.config import ServerConfig
from toolscript.upstream.base import (
    Elicit,
    ListedOfferings,
    ServerState,
    ToolHost,
    ToolsChanged,
    Upstream,
)
from toolscript.upstream.early import EarlyServer
from toolscript.upstream.local import LocalToolServer
from toolscript.upstream.server import UpstreamServer

__all__ = ["Listed", "fetch_lists_once", "fetch_tools_once", "upstream_for"]


def upstream_for(
    server: ServerConfig,
    gateway: ToolHost | None,
    *,
    connect_timeout: float = 30.0,
    on_tools_changed: ToolsChanged | None = None,
    on_elicit: Elicit | None = None,
    early: EarlyServer | None = None,
) -> Upstream:
    """What serves ``server``: its tool file (local), or an MCP session (stdio, http, sse);
    ``early``: its process, spawned ahead (``upstream/early.py``)."""
    if server.transport == "local":
        return LocalToolServer(server, gateway, on_tools_changed=on_tools_changed)
    return UpstreamServer(
        server,
        connect_timeout=connect_timeout,
        on_tools_changed=on_tools_changed,
        on_elicit=on_elicit,
        early=early,
    )


async def fetch_tools_once(
    servers: list[ServerConfig], *, connect_timeout: float = 30.0
) -> dict[str, list[dict[str, Any]] | None]:
    """Connect every server concurrently, list its tools, disconnect (None: it failed)."""
    found = await fetch_lists_once(servers, connect_timeout=connect_timeout)
    return {name: tools for name, (tools, _) in found.items()}


Listed = tuple[list[dict[str, Any]] | None, dict[str, list[dict[str, Any]]] | None]


async def fetch_lists_once(
    servers: list[ServerConfig],
    *,
    connect_timeout: float = 30.0,
    errors: dict[str, str] | None = None,
) -> dict[str, Listed]:
    """Connect every server concurrently, take its tools and what else it offers (prompts,
    resource templates: ``ListedOfferings.offered``), disconnect (None: it failed, and
    ``errors`` gets why, secrets redacted; a tool file offers tools only)."""
    upstreams = [upstream_for(server, None, connect_timeout=connect_timeout) for server in servers]
    async with anyio.create_task_group() as tasks:
        for upstream in upstreams:
            tasks.start_soon(upstream.run)
        for upstream in upstreams:
            await upstream.first_attempt_done.wait()
            if upstream.state == ServerState.CONNECTED and isinstance(upstream, ListedOfferings):
                await upstream.offered_listed.wait()  # its prompts and templates too
        found: dict[str, Listed] = {}
        for upstream in upstreams:
            if upstream.state != ServerState.CONNECTED:
                found[upstream.name] = (None, None)
                if errors is not None:
                    errors[upstream.name] = str(upstream.status().get("error") or upstream.state)
                continue
            offered = upstream.offered if isinstance(upstream, ListedOfferings) else {}
            found[upstream.name] = (list(upstream.tools.values()), dict(offered))
        for upstream in upstreams:
            await upstream.stop()
    return found
