"""``list-servers``: the configured servers."""

from __future__ import annotations

import sys

from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import print_json, print_rows
from toolscript.config import load_config

__all__ = ["list_servers"]


def list_servers(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """List the configured MCP servers.

    Prints name, transport and description of each (live state too when a gateway runs).

    Examples:

        toolscript list-servers

        toolscript list-servers --json | jq '.[].name'
    """
    loaded = load_config(config)
    servers = [server.summary() for server in loaded.servers]
    if as_json:
        print_json(servers)
        return
    if not servers:
        where = loaded.path or loaded.project_dir / ".toolscript.json"
        sys.stderr.write(f"no servers configured (add them under mcpServers in {where})\n")
        return
    print_rows(
        ["server", "transport", "description"],
        [
            [
                server["name"],
                server["transport"] + (" (disabled)" if server["disabled"] else ""),
                server["description"],
            ]
            for server in servers
        ],
    )
