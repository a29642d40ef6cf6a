"""``list-tools``: a server's tools, from the gateway."""

from __future__ import annotations

import sys
from typing import Annotated, Any

from toolscript.cli.client import (
    config_for_the_gateway,
    config_on_disk,
    gateway_client,
    last_listing_notes,
    served_note,
)
from toolscript.cli.lazy import typer
from toolscript.cli.options import ConfigOption, HeaderOption, JsonOption
from toolscript.cli.output import print_json, print_rows, shown_name, write_shown

__all__ = ["list_tools"]


def list_tools(
    server: Annotated[str, typer.Argument(help="Server name, as in list-servers.")],
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show each tool's description.")
    ] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    header: HeaderOption = False,
) -> None:
    """List the tools of one server.

    Examples:

    \b
        toolscript list-tools github --verbose
        toolscript list-tools github --json | jq -r '.[].name'

    The policy column says which tools ask for approval before each call
    (see `toolscript approve --help`).

    A config edited since `toolscript trust` (or one that does not load): the tools the
    gateway serves are listed, exit 0, a note on stderr, and each tool's `config_on_disk`
    in --json says `untrusted` (or `invalid`; else `trusted`).

    A server not connected now (failed, reconnecting): the tools it listed last, exit 0,
    and a note on stderr saying why it is not connected.
    """
    loaded, read = config_for_the_gateway(config)
    if read:
        loaded.server(server)  # a clear "server not found" even without a gateway
    with gateway_client(loaded, servers=[server]) as client:
        tools: list[dict[str, Any]] = client.get_json(f"/servers/{server}/tools", exact=as_json)
        last_listed = last_listing_notes(client, [server], "the tools listed are")
    on_disk, untrusted = config_on_disk(loaded, read=read)
    if untrusted:
        write_shown(served_note(untrusted), sys.stderr)  # a repository's file names: shown
    for note in last_listed:
        write_shown(note, sys.stderr)  # a server's error is what it sent: shown, not obeyed
    if as_json:
        print_json([{**tool, "config_on_disk": on_disk} for tool in tools])
        return
    if verbose:
        print_rows(
            ["tool", "policy", "description"],
            [
                [
                    tool["name"],
                    tool.get("policy", "allow"),
                    _first_line(tool.get("description", "")),
                ]
                for tool in tools
            ],
            header=header,
            names=("tool",),
        )
    else:
        for tool in tools:
            typer.echo(shown_name(tool["name"]))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
