"""``list-servers``: the configured servers."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from toolscript.cli.client import (
    URL_VARIABLE,
    GatewayClient,
    config_for_the_gateway,
    config_on_disk,
    enclosing_gateways,
    enclosing_note,
    find_gateway_url,
    served_note,
)
from toolscript.cli.options import ConfigOption, HeaderOption, JsonOption
from toolscript.cli.output import (
    print_json,
    print_rows,
    shown_name,
    stdout_is_terminal,
    tools_cell,
    write_shown,
)
from toolscript.config import Config
from toolscript.errors import GatewayError, GatewayUnreachableError
from toolscript.otherclients import home_dir

__all__ = ["list_servers"]


def list_servers(
    config: ConfigOption = None, as_json: JsonOption = False, header: HeaderOption = False
) -> None:
    """List the configured MCP servers.

    Prints name, transport, live state, tools, reason, description and source (the file
    that defines it: .toolscript.json, or another client's config it imports) of each,
    always these columns (state, tools and reason empty when no gateway runs for the
    project). What an imported config has that toolscript skips is named on stderr.

    A config edited since `toolscript trust` (or one that does not load) while the
    gateway runs: what the gateway serves is listed, exit 0, a note on stderr, and each
    server's `config_on_disk` says `untrusted` (or `invalid`; else `trusted`).

    Examples:

    \b
        toolscript list-servers
        toolscript list-servers --header | cut -f1,3
        toolscript list-servers --json | jq '.[].name'
    """
    loaded, read = config_for_the_gateway(config)  # a broken edit: the gateway's servers
    on_disk, untrusted = config_on_disk(loaded, read=read)
    for warning in loaded.warnings:
        write_shown(f"warning: {warning}\n", sys.stderr)
    for warning in loaded.import_warnings:
        write_shown(f"warning: import: {warning}\n", sys.stderr)  # quoting other clients' files
    servers = [server.summary() for server in loaded.servers]
    answered, config_error, elsewhere = _live_states(loaded, exact=as_json)
    live = answered or {}
    if not read:  # the file did not load: the servers the gateway serves are all there is
        servers = [_served_summary(server) for server in live.values()]
    for server in servers:
        server["config_on_disk"] = on_disk
    for server in servers:
        if server["name"] in live:
            server["state"] = live[server["name"]]["state"]
            server["tools"] = live[server["name"]]["tools"]
            if live[server["name"]].get("last_known_tools"):  # what list-tools shows of it
                server["last_known_tools"] = live[server["name"]]["last_known_tools"]
            server["error"] = live[server["name"]].get("error")
            server["description"] = server["description"] or live[server["name"]].get(
                "description", ""
            )
    if as_json:
        print_json(servers)
        return
    if not servers:
        where = loaded.config_file
        sys.stderr.write(f"no servers configured (add them under mcpServers in {where})\n")
        return
    on_terminal = stdout_is_terminal()
    print_rows(
        ["server", "transport", "state", "tools", "reason", "description", "source"],
        [
            [
                server["name"],
                server["transport"] + (" (disabled)" if server["disabled"] else ""),
                str(server.get("state") or ("unknown" if answered is not None else "")),
                tools_cell(server.get("tools", ""), server.get("last_known_tools")),
                _reason(
                    server.get("error")
                    or (_not_loaded(server) if live and "state" not in server else None),
                    whole=not on_terminal,
                ),
                server["description"],
                _shown_path(server["source"], loaded.project_dir),
            ]
            for server in servers
        ],
        header=header,
        names=("server",),
    )
    reasons = [(server["name"], _reason(server.get("error"))) for server in servers]
    cut = [(name, reason) for name, reason in reasons if len(reason) > REASON_WIDTH]
    if on_terminal and cut:
        # The end of a reason says what to do (the variable to export, the file to fix): a
        # cell of a table 80 columns wide shows its start, so each cut one follows whole.
        write_shown("\n" + "".join(f"{shown_name(name)}: {reason}\n" for name, reason in cut))
    if elsewhere:
        write_shown(
            f"note: the gateway {URL_VARIABLE} names serves {elsewhere}, not this project's "
            "config, so state and tools are empty (unset it to ask this project's own "
            "gateway)\n",
            sys.stderr,
        )
    elif answered is None:
        write_shown(
            f"note: no gateway runs for this project: {untrusted}\n"
            if untrusted
            else "note: no gateway runs for this project, so state and tools are empty: "
            "`toolscript gateway start &` connects the servers\n"
            + enclosing_note(enclosing_gateways(loaded)),
            sys.stderr,
        )
    elif config_error:
        write_shown(
            "note: the config's last edit did not load, so the gateway serves the previous "
            f"one (state unknown: not started): {config_error}\n",
            sys.stderr,
        )
    elif untrusted:  # an edit of a server's entry, the gateway still serving the entry as was
        write_shown(served_note(untrusted), sys.stderr)  # a repository's file names: shown


def _served_summary(server: dict[str, Any]) -> dict[str, Any]:
    """A server the gateway serves, as the config's ``summary`` shows one (its target and
    source unknown: the file that named it does not load now)."""
    return {
        "name": server["name"],
        "transport": server.get("transport", ""),
        "target": "",
        "description": server.get("description", ""),
        "disabled": server.get("state") == "disabled",
        "source": "",
    }


# A server in the file that the running gateway does not have (an edit not trusted yet, or
# one it could not load): it keeps its previous configuration.
_NOT_LOADED = "not loaded: see `toolscript gateway status`"


def _not_loaded(server: dict[str, Any]) -> str:
    """Why the running gateway does not have ``server``: gateway status names only the
    servers it has, so an untrusted or broken edit's server is said here (the note says more)."""
    on_disk = server.get("config_on_disk")
    if on_disk == "untrusted":
        return "not started: the edit is not trusted (see note)"
    if on_disk == "invalid":
        return "not loaded: the edit does not load (see note)"
    return _NOT_LOADED


def _shown_path(source: str, project_dir: Path) -> str:
    """A source file as a person reads it: relative to the project, else under ``~``."""
    if not source:
        return ""
    path = Path(source)
    for base, prefix in ((project_dir, ""), (home_dir(), "~/")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return source


REASON_WIDTH = 32  # a reason's cell on a terminal, the whole reason following the table


def _reason(error: str | None, *, whole: bool = True) -> str:
    """An error on one line: whole (a pipe's cell, or below a terminal's table), else cut to
    fit a terminal's table column."""
    text = " ".join((error or "").split())
    return text if whole or len(text) <= REASON_WIDTH else text[: REASON_WIDTH - 1] + "…"


def _live_states(
    config: Config, *, exact: bool
) -> tuple[dict[str, dict[str, Any]] | None, str | None, str | None]:
    """Per-server state from a running gateway (``exact``: as it came, for --json; None
    when none answers, empty when it serves no server), why it serves an older
    configuration than the file's when a server of the file is not among them, and the
    config it serves when that is another project's (``TOOLSCRIPT_GATEWAY_URL`` set in one
    project, the command run in another: its servers' states are not this project's)."""
    named = bool(os.environ.get(URL_VARIABLE, "").strip())
    try:
        url = find_gateway_url(config)  # a gateway still starting is waited for
        if not url:
            return None, None, None
        with GatewayClient(url, timeout=2) as client:
            if named:
                served = (client.get_json("/health").get("config") or {}).get("path")
                own = config.config_file
                if served and Path(served) != own:
                    return None, None, str(served)
            live = {server["name"]: server for server in client.get_json("/servers", exact=exact)}
            if all(server.name in live for server in config.servers):
                return live, None, None
            health = client.get_json("/health")
            return live, (health.get("config") or {}).get("error"), None
    except GatewayError as exc:
        if named:  # named on purpose: not "no gateway"
            raise GatewayUnreachableError(
                f"{exc.message}; {URL_VARIABLE} names it",
                hint=f"unset {URL_VARIABLE} (the project's own gateway is then used), "
                "or point it at a gateway that runs",
            ) from exc
        return None, None, None
