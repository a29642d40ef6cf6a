"""``catalogue``: catalogue.db, servers and tools with names, schemas and content hashes.

For people and their scripts: docs/types.md shows queries with ``sqlite-utils``.
Rewritten whole on each run: it is small and derived.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator
from typing import Any

from doit.tools import config_changed

from toolscript.pipeline.artifacts import content_hash
from toolscript.pipeline.tasks.settings import TaskSettings, read_json
from toolscript.plumbing.cachefiles import discard_if_damaged, looks_whole

__all__ = ["CATALOGUE_TABLES", "CatalogueTask"]

TOOL_COLUMNS = {
    "id": str,
    "server": str,
    "name": str,
    "function": str,
    "type_name": str,
    "title": str,
    "description": str,
    "input_schema": str,
    "output_schema": str,
    "annotations": str,
    "content_hash": str,
}
SERVER_COLUMNS = {
    "name": str,
    "namespace": str,
    "transport": str,
    "description": str,
    "tool_count": int,
    "content_hash": str,
}
# The tables the build makes and their columns: a catalogue holding any other is made anew
CATALOGUE_TABLES = {"servers": tuple(SERVER_COLUMNS), "tools": tuple(TOOL_COLUMNS)}


class CatalogueTask:
    def __init__(self, settings: TaskSettings) -> None:
        self.settings = settings

    def tasks(self) -> dict[str, Any]:
        """Build catalogue.db: servers and tools with content hashes, names and schemas."""
        layout, servers = self.settings.layout, self.settings.servers
        return {
            "actions": [self.catalogue],
            "file_dep": [layout.server_tools(s.name) for s in servers]
            + [layout.server_names(s.name) for s in servers],
            "targets": [layout.catalogue],
            "uptodate": [
                config_changed({"servers": [s.summary() for s in servers]}),
                functools.partial(looks_whole, layout.catalogue),  # not truncated, SQLite
            ],
            "clean": True,
            "verbosity": 0,
        }

    def server_rows(self) -> list[dict[str, Any]]:
        """The servers table's rows."""
        layout = self.settings.layout
        rows = []
        for server in self.settings.servers:
            tools = read_json(layout.server_tools(server.name))
            naming = read_json(layout.server_names(server.name))
            rows.append(
                {
                    "name": server.name,
                    "namespace": naming["namespace"],
                    "transport": server.transport,
                    "description": server.description,
                    "tool_count": len(tools),
                    "content_hash": content_hash(tools),
                }
            )
        return rows

    def tool_rows(self) -> Iterator[dict[str, Any]]:
        """The tools table's rows, one server's tools read at a time: the table's rows are
        written a batch at a time, not all of them held at once (12 MB at 1,600 tools, which
        the gateway's build then kept as freed memory it could not give back)."""
        layout = self.settings.layout
        for server in self.settings.servers:
            tools = read_json(layout.server_tools(server.name))
            naming = read_json(layout.server_names(server.name))
            for tool in tools:
                names = naming["tools"][tool["name"]]
                yield {
                    "id": f"{server.name}__{tool['name']}",
                    "server": server.name,
                    "name": tool["name"],
                    "function": names["function"],
                    "type_name": names["type"],
                    "title": tool.get("title"),
                    "description": tool.get("description", ""),
                    "input_schema": json.dumps(tool.get("inputSchema")),
                    "output_schema": json.dumps(tool.get("outputSchema")),
                    "annotations": json.dumps(tool.get("annotations")),
                    "content_hash": content_hash(tool),
                }

    def catalogue(self) -> None:
        from toolscript.plumbing.cachefiles import load_sqlite_utils

        load_sqlite_utils()
        import sqlite_utils

        # (truncated, not SQLite, or a repository's, tables or columns of its own)
        discard_if_damaged(self.settings.layout.catalogue, CATALOGUE_TABLES)
        server_rows = self.server_rows()
        tool_rows = self.tool_rows()
        first_tool = next(tool_rows, None)
        database = sqlite_utils.Database(self.settings.layout.catalogue)
        servers_table = database.table("servers")
        tools_table = database.table("tools")
        with database.conn:
            servers_table.delete_where()
            tools_table.delete_where()
            if server_rows:
                servers_table.insert_all(server_rows, pk="name")
            if first_tool is not None:
                tools_table.insert_all(
                    itertools.chain([first_tool], tool_rows),
                    pk="id",
                    foreign_keys=[("server", "servers", "name")],
                )
        if not tools_table.exists():
            tools_table.create(TOOL_COLUMNS, pk="id")
        if not servers_table.exists():
            servers_table.create(SERVER_COLUMNS, pk="name")
