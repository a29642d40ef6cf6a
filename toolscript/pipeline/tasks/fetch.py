"""``fetch:<server>``: each server's tool list, filtered and sorted by name (``listed_json``:
each tool's keys in the server's order).

What a server sends is data: any ``x-toolscript-*`` key of its own is dropped
(``without_own_keys``), and only then do tools without an outputSchema get the result type
the gateway learned, the one source of the inferred marker.

Up to date when the live list equals the file byte for byte, so a server whose tools
did not change leaves every later task up to date. An unreachable server keeps its file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from toolscript.codegen.shapes import without_own_keys
from toolscript.config import ServerConfig
from toolscript.pipeline.artifacts import listed_json, write_if_changed
from toolscript.pipeline.tasks.settings import SubtasksUpToDate, TaskSettings

__all__ = ["FetchTasks", "ToolSource"]


class ToolSource(Protocol):
    """Where fetching gets tool lists: the gateway's live sessions, or fresh connections."""

    def tools(self, server: str) -> list[dict[str, Any]] | None:
        """The server's tools, or None when it is unavailable (keep what is on disk)."""

    def inferred(self, server: str) -> dict[str, dict[str, Any]]:
        """The outputSchemas toolscript learned for the server's tools, by tool name."""


class FetchTasks:
    def __init__(self, settings: TaskSettings, source: ToolSource) -> None:
        self.settings, self.source = settings, source
        self._live: dict[str, list[dict[str, Any]] | None] = {}

    def tasks(self) -> Iterator[dict[str, Any]]:
        """Fetch each server's tool list (filtered)."""
        yield {
            "basename": "fetch",
            "name": None,
            "uptodate": [SubtasksUpToDate()],
            "doc": "fetch each server's tool schemas",
        }
        for server in self.settings.servers:
            yield {
                "basename": "fetch",
                "name": server.name,
                "actions": [(self.fetch, [server])],
                "targets": [self.settings.layout.server_tools(server.name)],
                "uptodate": [(self.up_to_date, [server])],
                "clean": True,
                "verbosity": 0,
            }

    def live(self, server: ServerConfig) -> list[dict[str, Any]] | None:
        """The server's tools that its config allows, asked once per run."""
        if server.name not in self._live:
            tools = self.source.tools(server.name)
            self._live[server.name] = (
                None
                if tools is None
                else sorted(
                    (
                        self._with_learned(server.name, without_own_keys(tool))
                        for tool in tools
                        if server.allows_tool(tool["name"])
                    ),
                    key=lambda tool: tool["name"],
                )
            )
        return self._live[server.name]

    def _with_learned(self, server: str, tool: dict[str, Any]) -> dict[str, Any]:
        if tool.get("outputSchema") is not None:
            return tool
        learned = self.source.inferred(server).get(tool["name"])
        return tool if learned is None else tool | {"outputSchema": learned}

    def up_to_date(self, server: ServerConfig) -> bool:
        target = self.settings.layout.server_tools(server.name)
        tools = self.live(server)
        if tools is None:
            return target.exists()
        try:
            return target.read_text(encoding="utf-8") == listed_json(tools)
        except (OSError, UnicodeDecodeError):  # missing or damaged: fetch again
            return False

    def fetch(self, server: ServerConfig) -> None:
        tools = self.live(server)
        target = self.settings.layout.server_tools(server.name)
        if tools is None and target.exists():
            return
        write_if_changed(target, listed_json(tools or []))
