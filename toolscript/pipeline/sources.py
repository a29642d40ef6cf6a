"""Tool sources for the pipeline: a snapshot of the gateway's sessions, or fresh connections."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from toolscript.config import Config

__all__ = ["ConnectingSource", "SnapshotSource"]

log = logging.getLogger("toolscript.pipeline")


class SnapshotSource:
    """Tool lists captured from live sessions (None for a server that is not connected),
    and the result types the gateway learned (``inferred``: server -> tool -> outputSchema)."""

    def __init__(
        self,
        tools: Mapping[str, list[dict[str, Any]] | None],
        inferred: Mapping[str, dict[str, dict[str, Any]]] | None = None,
    ) -> None:
        self._tools = dict(tools)
        self._inferred = dict(inferred or {})

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        return self._tools.get(server)

    def inferred(self, server: str) -> dict[str, dict[str, Any]]:
        return self._inferred.get(server, {})


class ConnectingSource:
    """Connects to every server once, on first use, for standalone ``doit``."""

    def __init__(self, config: Config, *, connect_timeout: float = 30.0) -> None:
        self._config = config
        self._connect_timeout = connect_timeout
        self._tools: dict[str, list[dict[str, Any]] | None] | None = None

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        if self._tools is None:
            import anyio

            from toolscript.upstream.connect import fetch_tools_once

            self._tools = anyio.run(
                lambda: fetch_tools_once(
                    list(self._config.enabled_servers), connect_timeout=self._connect_timeout
                )
            )
            for name, tools in self._tools.items():
                if tools is None:
                    log.warning("%s: not reachable; keeping its previous artifacts", name)
        return self._tools.get(server)

    def inferred(self, server: str) -> dict[str, dict[str, Any]]:
        return {}  # nothing is learned without a gateway
