"""The faces of the upstream package: what the gateway needs of a server (MCP or local
tool file), and what internal local tools may use of the gateway.

The gateway implements ``ToolHost`` without importing anything here but these
protocols, so the upstream package never imports the gateway.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

import anyio

from toolscript.config import Config, ServerConfig

__all__ = [
    "CALL_PROGRESS",
    "CALL_RECEIVED",
    "Elicit",
    "ListedOfferings",
    "Offerings",
    "ProgressReport",
    "ServerState",
    "ToolHost",
    "ToolSearch",
    "ToolsChanged",
    "Upstream",
]


class ServerState(StrEnum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    NEEDS_AUTH = "needs_auth"  # an OAuth server with no usable sign-in: `toolscript auth NAME`
    DISABLED = "disabled"
    STOPPED = "stopped"


ToolsChanged = Callable[[Any], Awaitable[None]]  # called with the upstream whose tools changed
# A server's question to the user during a call (MCP elicitation): (server, message, requested
# schema, what its calls under way sent: ``sent_text``) -> {"action": "accept" | "decline" |
# "cancel", "content"?}; raises where nobody can answer.
Elicit = Callable[[str, str, Any, str], Awaitable[dict[str, Any]]]

# A server's ``notifications/progress`` during a call: (progress, total, message).
ProgressReport = Callable[[float, float | None, str | None], None]
# Where the progress of the call being made goes (the gateway sets it around a run's call);
# a server asked with a progress token only when one is set.
CALL_PROGRESS: ContextVar[ProgressReport | None] = ContextVar("CALL_PROGRESS", default=None)
# The secrets the run making the call was handed (the gateway's ``Run.received``): their runs
# are masked even as the call sent them (in its progress, the recent call the gateway keeps).
CALL_RECEIVED: ContextVar[set[str] | None] = ContextVar("CALL_RECEIVED", default=None)


class Upstream(Protocol):
    """One configured server as the gateway sees it."""

    name: str
    config: ServerConfig
    state: ServerState
    error: str | None
    # What to do about its error when its entry is not to blame (a proxy that refused), for
    # the hint of a call it cannot take; None: fix its entry (or its tool file)
    remedy: str | None
    tools: dict[str, dict[str, Any]]
    first_attempt_done: anyio.Event

    @property
    def secrets(self) -> tuple[str, ...]:
        """What its status, errors and every log must mask: its entry's secrets
        (``ServerConfig.secrets``) and, for a server signed in to, the OAuth tokens sent."""

    async def run(self) -> None:
        """Connect (or load) and keep it so until ``stop``."""

    async def stop(self, *, hurry: bool = False) -> None:
        """Ask ``run`` to end, stopping every process it started (``hurry``: with the short
        graces of a program leaving, ``upstream/early.py``'s ``HURRIED``)."""

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The CallToolResult as JSON."""

    def status(self) -> dict[str, Any]:
        """State, error, tool count and warnings, safe to show."""


@runtime_checkable
class Offerings(Protocol):
    """A server that may offer more than tools (an MCP server; a tool file offers tools only)."""

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """``resources/list``, ``resources/read``, ``prompts/get``, ...: the result as JSON."""


@runtime_checkable
class ListedOfferings(Protocol):
    """A server whose prompts and resource templates toolscript keeps for their types."""

    # kind ("prompts", "resourceTemplates") -> the listed items; none yet: not connected
    offered: dict[str, list[dict[str, Any]]]
    # set once the first listing after connecting is done (listed after "connected")
    offered_listed: anyio.Event

    async def note_offered(self, kind: str, items: list[dict[str, Any]]) -> None:
        """A listing made meanwhile: kept, and the artifacts rebuilt when it changed."""


class ToolSearch(Protocol):
    def search(self, query: str, *, limit: int = ...) -> tuple[list[Any], Any]:
        """Ranked hits (each with ``to_dict()``) and what the search did."""


class ToolHost(Protocol):
    """What internal local tools may use of the gateway (``context.gateway``)."""

    @property
    def config(self) -> Config: ...

    @property
    def upstreams(self) -> Mapping[str, Upstream]: ...

    @property
    def search(self) -> ToolSearch: ...

    def all_tools(self) -> list[tuple[str, dict[str, Any]]]: ...
