"""``list-servers``: the configured servers."""

from __future__ import annotations

import sys
from typing import Any

from toolscript.cli.client import GatewayClient, find_gateway_url
from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import print_json, print_rows
from toolscript.config import Config, load_config
from toolscript.errors import GatewayError

__all__ = ["list_servers"]


def list_servers(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """List the configured MCP servers.

    Prints name, transport and description of each (live state too when a gateway runs).

    Examples:

    \b
        toolscript list-servers
        toolscript list-servers --json | jq '.[].name'
    """
    loaded = load_config(config)
    servers = [server.summary() for server in loaded.servers]
    live = _live_states(loaded)
    for server in servers:
        if server["name"] in live:
            server["state"] = live[server["name"]]["state"]
            server["tools"] = live[server["name"]]["tools"]
            server["error"] = live[server["name"]].get("error")
    if as_json:
        print_json(servers)
        return
    if not servers:
        where = loaded.path or loaded.project_dir / ".toolscript.json"
        sys.stderr.write(f"no servers configured (add them under mcpServers in {where})\n")
        return
    reasons = any(server.get("error") for server in servers)
    print_rows(
        ["server", "transport", "state", "tools", *(["reason"] if reasons else []), "description"]
        if live
        else ["server", "transport", "description"],
        [
            [
                server["name"],
                server["transport"] + (" (disabled)" if server["disabled"] else ""),
                *(
                    [
                        server.get("state", "unknown"),
                        str(server.get("tools", "")),
                        *([_short(server.get("error"))] if reasons else []),
                    ]
                    if live
                    else []
                ),
                server["description"],
            ]
            for server in servers
        ],
    )
    if reasons:
        sys.stderr.write("the whole reason: `toolscript list-servers --json` or `gateway status`\n")


def _short(error: str | None, width: int = 48) -> str:
    """The first line of an error, cut to fit a table column."""
    text = (error or "").strip().splitlines()[0] if (error or "").strip() else ""
    return text if len(text) <= width else text[: width - 1] + "…"


def _live_states(config: Config) -> dict[str, dict[str, Any]]:
    """Per-server state from a running gateway; empty when none answers."""
    try:
        url = find_gateway_url(config)  # a gateway still starting is waited for
        if not url:
            return {}
        with GatewayClient(url, timeout=2) as client:
            return {server["name"]: server for server in client.get_json("/servers")}
    except GatewayError:
        return {}
