"""``names``: server and tool names to TypeScript identifiers, with no collisions.

One task for all servers, since a type name must be unique across the whole module.
Writes ``names/<server>.json`` for each server and ``names.json`` with every warning.
"""

from __future__ import annotations

import logging
from typing import Any

from doit.tools import config_changed

from toolscript.codegen.naming import IMPLICIT_MEMBERS, assign_names, first_free, to_pascal_case
from toolscript.pipeline.artifacts import canonical_json, write_if_changed
from toolscript.pipeline.tasks.settings import (
    TaskSettings,
    read_json,
    target_digests,
    targets_as_built,
)

__all__ = ["NamesTask"]

log = logging.getLogger("toolscript.pipeline")


class NamesTask:
    def __init__(self, settings: TaskSettings) -> None:
        self.settings = settings

    def tasks(self) -> dict[str, Any]:
        """Normalize server and tool names to TypeScript identifiers (no collisions)."""
        layout, servers = self.settings.layout, self.settings.servers
        return {
            "actions": [self.names],
            "file_dep": [layout.server_tools(s.name) for s in servers],
            "targets": [layout.names, *(layout.server_names(s.name) for s in servers)],
            "uptodate": [
                config_changed(
                    {"servers": self.settings.server_names, "generator": self.settings.generator}
                ),
                targets_as_built,  # the types task renders the identifiers as code
            ],
            "clean": True,
            "verbosity": 0,
        }

    def names(self) -> dict[str, Any]:
        from toolscript.codegen.module import type_names

        layout = self.settings.layout
        layout.drop_other_servers(self.settings.server_names)
        namespaces = assign_names(self.settings.server_names, what="server")
        warnings = list(namespaces.warnings)
        whole: dict[str, Any] = {}
        type_bases: set[str] = set()
        typed: list[tuple[str, dict[str, Any]]] = []  # (type base, tool), every server's
        entries: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
        for server in self.settings.servers:
            tools = {tool["name"]: tool for tool in read_json(layout.server_tools(server.name))}
            functions = assign_names(
                list(tools), what=f"tool of {server.name!r}", reserved=IMPLICIT_MEMBERS
            )
            warnings.extend(functions.warnings)
            namespace = namespaces.names[server.name]
            entry: dict[str, Any] = {"namespace": namespace, "tools": {}}
            named: list[dict[str, Any]] = []
            for original, function in sorted(functions.names.items()):
                base = to_pascal_case(namespace) + function[0].upper() + function[1:]
                type_name = first_free(base, type_bases)
                if type_name != base:
                    warnings.append(
                        f"type name {base!r} taken; {server.name}.{original} uses {type_name!r}"
                    )
                type_bases.add(type_name)
                entry["tools"][original] = {"function": function, "type": type_name}
                named.append(entry["tools"][original])
                typed.append((type_name, tools[original]))
            entries.append((server.name, entry, named))
        # Type names are unique across the whole module, $ref aliases included, whatever
        # the servers send (one server's names never break another's types).
        assigned = iter(type_names(typed))
        for server_name, entry, named in entries:
            for item in named:
                item["names"] = next(assigned).to_dict()
            write_if_changed(layout.server_names(server_name), canonical_json(entry))
            whole[server_name] = entry
        for warning in warnings:
            log.warning("naming: %s", warning)
        write_if_changed(layout.names, canonical_json({"servers": whole, "warnings": warnings}))
        return target_digests(
            [layout.names, *(layout.server_names(s.name) for s in self.settings.servers)]
        )
