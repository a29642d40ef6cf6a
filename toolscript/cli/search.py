"""``search``: find tools by what they do."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from toolscript.cli.client import GatewayClient, find_gateway_url
from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import print_json, print_rows
from toolscript.cli.types import render_markdown
from toolscript.config import load_config

__all__ = ["search"]


class Output(StrEnum):
    table = "table"
    types = "types"


def search(
    query: Annotated[str, typer.Argument(help="What the tool should do, in your words.")],
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, max=100, help="Most hits to show (1-100).")
    ] = 10,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            "-t",
            min=0,
            max=1,
            help="Drop hits scoring below this (0-1).",
            show_default=False,
        ),
    ] = None,
    server: Annotated[
        str | None,
        typer.Option("--server", "-s", help="Only this server's tools.", show_default=False),
    ] = None,
    output: Annotated[
        Output, typer.Option("--output", "-o", help="table, or types: declarations and an example.")
    ] = Output.table,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Search every tool by meaning and keywords; best matches first.

    Examples:

    \b
        toolscript search "create a github issue"
        toolscript search "current time in tokyo" --limit 3 --output types
        toolscript search "screenshot" --server playwright --json
    """
    loaded = load_config(config)
    if server is not None:
        loaded.server(server)
    params: dict[str, Any] = {"q": query, "limit": limit}
    if threshold is not None:
        params["threshold"] = threshold
    if server is not None:
        params["server"] = server
    with GatewayClient(find_gateway_url(loaded)) as client:
        answer: dict[str, Any] = client.get_json("/search", **params)
        hits = answer["hits"]
        if output == Output.types and hits and not as_json:
            names = ",".join(hit["name"] for hit in hits)
            typer.echo(render_markdown(client.get_json("/types", names=names)), nl=False)
            _note_mode(answer)
            return
    if as_json:
        print_json(answer)
        return
    _note_mode(answer)
    if not hits:
        sys.stderr.write("no tool matches; try other words, a lower --threshold, or list-tools\n")
        raise typer.Exit(1)
    print_rows(
        ["server", "tool", "score", "description"],
        [[hit["server"], hit["tool"], f"{hit['score']:.2f}", hit["description"]] for hit in hits],
    )


def _note_mode(answer: dict[str, Any]) -> None:
    if answer.get("mode") == "keyword":
        reason = answer.get("search", {}).get("reason") or "semantic search is not ready"
        sys.stderr.write(f"note: keyword search only ({reason})\n")
