"""``module``: every server's fragments merged into ``tools-only.ts``, with each server's
``resources`` and ``prompts`` typed by what it offers (``offered/<server>.json``); the
``scripts`` task adds the saved scripts to make ``tools.ts``, the module scripts import."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from doit.tools import config_changed

from toolscript.config import ServerConfig
from toolscript.pipeline.artifacts import read_offered, write_if_changed
from toolscript.pipeline.tasks.settings import (
    TaskSettings,
    read_json,
    runtime_template,
    target_digests,
    targets_as_built,
)

if TYPE_CHECKING:
    from toolscript.codegen.module import ToolFragment

__all__ = ["ModuleTask"]


class ModuleTask:
    def __init__(self, settings: TaskSettings) -> None:
        self.settings = settings

    def tasks(self) -> dict[str, Any]:
        """Merge every server's fragments into one module (tools-only.ts)."""
        layout = self.settings.layout
        return {
            "actions": [self.module],
            "file_dep": [layout.server_fragments(s.name) for s in self.settings.servers]
            + [layout.server_offered(s.name) for s in self._offering()]
            + [runtime_template()],
            "targets": [layout.tools_only],
            "uptodate": [
                config_changed(
                    {"servers": self.settings.server_names, "generator": self.settings.generator}
                ),
                targets_as_built,
            ],
            "clean": True,
            "verbosity": 0,
        }

    def module(self) -> dict[str, Any]:
        from toolscript.codegen.module import ToolFragment, render_module
        from toolscript.codegen.naming import assign_names

        fragments: list[ToolFragment] = []
        for server in self.settings.servers:
            fragments.extend(
                ToolFragment.from_dict(item)
                for item in read_json(self.settings.layout.server_fragments(server.name))
            )
        namespaces = assign_names(self.settings.server_names, what="server").names
        servers = self._offering()
        offering = [(server.name, namespaces[server.name]) for server in servers]
        offered = {
            server.name: read_offered(self.settings.layout, server.name) for server in servers
        }
        write_if_changed(
            self.settings.layout.tools_only,
            render_module(fragments, offering=offering, offered=offered),
        )
        return target_digests([self.settings.layout.tools_only])

    def _offering(self) -> list[ServerConfig]:
        """The servers that may offer resources and prompts (a tool file offers neither)."""
        return [server for server in self.settings.servers if server.transport != "local"]
