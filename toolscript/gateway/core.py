"""The gateway's state: every upstream server, tool lookup, validation and calls."""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import jsonschema
from jsonschema.protocols import Validator

from toolscript.config import Config
from toolscript.errors import (
    ArgumentValidationError,
    ServerNotFoundError,
    ServerUnavailableError,
    ToolNotFoundError,
)
from toolscript.gateway.results import tool_result
from toolscript.upstream.server import ServerState, UpstreamServer

__all__ = ["Gateway", "split_tool_name"]

log = logging.getLogger("toolscript.gateway")

SEPARATOR = "__"


def split_tool_name(qualified: str) -> tuple[str, str]:
    """``github__create_issue`` -> ``("github", "create_issue")`` (server names hold no ``__``)."""
    server, sep, tool = qualified.partition(SEPARATOR)
    if not sep or not server or not tool:
        raise ToolNotFoundError(
            f"not a tool name: {qualified!r}; expected SERVER__TOOL, for example github__create_issue"
        )
    return server, tool


class Gateway:
    """Owns the upstream servers for the gateway's lifetime."""

    def __init__(self, config: Config, *, connect_timeout: float = 30.0) -> None:
        self.config = config
        self.started_at = time.time()
        self.upstreams: dict[str, UpstreamServer] = {
            server.name: UpstreamServer(
                server, connect_timeout=connect_timeout, on_tools_changed=self._tools_changed
            )
            for server in config.servers
        }
        self._validators: dict[tuple[str, str], tuple[dict[str, Any], Validator]] = {}
        self.search_status: dict[str, Any] = {
            "ready": False,
            "mode": "none",
            "reason": "search is not built yet",
        }

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Connect every server concurrently; ready once each connected or failed."""
        async with anyio.create_task_group() as tasks:
            for upstream in self.upstreams.values():
                tasks.start_soon(upstream.run, name=f"upstream {upstream.name}")
            for upstream in self.upstreams.values():
                await upstream.first_attempt_done.wait()
            log.info(
                "ready: %d/%d servers connected, %d tools",
                sum(u.state == ServerState.CONNECTED for u in self.upstreams.values()),
                len(self.upstreams),
                sum(len(u.tools) for u in self.upstreams.values()),
            )
            try:
                yield self
            finally:
                for upstream in self.upstreams.values():
                    await upstream.stop()

    async def _tools_changed(self, upstream: UpstreamServer) -> None:
        for key in [key for key in self._validators if key[0] == upstream.name]:
            del self._validators[key]

    # -- lookup --------------------------------------------------------------

    def upstream(self, server: str) -> UpstreamServer:
        try:
            return self.upstreams[server]
        except KeyError:
            names = list(self.upstreams)
            raise ServerNotFoundError(
                f"server not found: {server!r}"
                + (f" (configured: {', '.join(names)})" if names else " (zero servers configured)"),
                suggestions=difflib.get_close_matches(server, names, n=3, cutoff=0.5),
            ) from None

    def tool(self, server: str, tool: str) -> tuple[UpstreamServer, dict[str, Any]]:
        upstream = self.upstream(server)
        found = upstream.tools.get(tool)
        if found is not None:
            return upstream, found
        if upstream.state != ServerState.CONNECTED and not upstream.tools:
            raise ServerUnavailableError(
                f"server {server!r} is not connected ({upstream.state}): {upstream.error}",
                hint="see `toolscript gateway status`",
            )
        names = list(upstream.tools)
        raise ToolNotFoundError(
            f"tool not found: {server}{SEPARATOR}{tool}",
            suggestions=[
                f"{server}{SEPARATOR}{name}"
                for name in difflib.get_close_matches(tool, names, n=3, cutoff=0.5)
            ],
            hint=None if names else f"server {server!r} has no tools",
        )

    def all_tools(self) -> list[tuple[str, dict[str, Any]]]:
        return [(name, tool) for name, up in self.upstreams.items() for tool in up.tools.values()]

    # -- calls ---------------------------------------------------------------

    def validate(self, server: str, tool: dict[str, Any], arguments: Any) -> None:
        schema = tool.get("inputSchema") or {"type": "object"}
        key = (server, tool["name"])
        cached = self._validators.get(key)
        if cached is None or cached[0] is not schema:
            cls = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
            cached = (schema, cls(schema))
            self._validators[key] = cached
        errors = sorted(cached[1].iter_errors(arguments), key=lambda e: list(e.absolute_path))
        if errors:
            details = [
                {
                    "path": "/" + "/".join(str(p) for p in error.absolute_path),
                    "message": error.message,
                }
                for error in errors
            ]
            summary = "; ".join(f"{d['path']}: {d['message']}" for d in details)
            raise ArgumentValidationError(
                f"invalid arguments for {server}{SEPARATOR}{tool['name']}: {summary}",
                errors=details,
            )

    async def call(self, qualified: str, arguments: Any) -> tuple[str, Any]:
        """Validate and forward one call; ``(shape, value)`` per the result contract."""
        server, tool_name = split_tool_name(qualified)
        upstream, tool = self.tool(server, tool_name)
        self.validate(server, tool, arguments)
        result = await upstream.call_tool(tool_name, arguments)
        return tool_result(qualified, result)

    # -- reporting -----------------------------------------------------------

    def health(self) -> dict[str, Any]:
        servers = {name: up.status() for name, up in self.upstreams.items()}
        enabled = [s for s in servers.values() if s["state"] != ServerState.DISABLED]
        healthy = all(s["state"] == ServerState.CONNECTED for s in enabled)
        return {
            "status": "ok" if healthy else "degraded",
            "uptime": round(time.time() - self.started_at, 3),
            "servers": servers,
            "tools": sum(s["tools"] for s in servers.values()),
            "search": self.search_status,
        }
