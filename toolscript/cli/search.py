"""``search``: find tools by what they do."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

from toolscript.cli.client import (
    GatewayClient,
    config_for_the_gateway,
    gateway_client,
    last_listing_notes,
)
from toolscript.cli.lazy import typer
from toolscript.cli.options import ConfigOption, HeaderOption, JsonOption
from toolscript.cli.output import print_json, print_rows, write_shown
from toolscript.cli.types import render_markdown
from toolscript.errors import ToolscriptError
from toolscript.search.parameters import check_query_length

__all__ = ["search"]


class Output(StrEnum):
    table = "table"
    types = "types"


class Kind(StrEnum):
    tool = "tool"
    resource = "resource"
    prompt = "prompt"
    all = "all"


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
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            "-e",
            help="Show each hit's keyword and semantic parts, the semantic weight of the "
            "blend and, for a request split into needs, the need it answers; and what the "
            "model and keyword search read of the request where that differs from it.",
        ),
    ] = False,
    kind: Annotated[
        Kind,
        typer.Option(
            "--kind",
            "-k",
            help="What to search: tools, the servers' resources or prompts, or all of them.",
        ),
    ] = Kind.tool,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    header: HeaderOption = False,
) -> None:
    """Search every tool by meaning and keywords; best matches first.

    A request that asks for several things ("find the open PRs about auth and post a
    summary to Slack") is split into its needs: the whole request's best tool comes
    first, then each need's best, then the rest by score. A file the request asks to
    write ("... save it to ~/notes.md") is a need of its own (a file writer), and so is
    a geocoder when the tools found take coordinates and the request names a place.

    Examples:

    \b
        toolscript search "create a github issue"
        toolscript search "current time in tokyo" --limit 3 --output types
        toolscript search "screenshot" --server playwright --json
        toolscript search "list open PRs and post a summary to slack" --explain
        toolscript search "architecture notes" --kind resource
    """
    check_query_length(query)  # before a gateway is started for it
    if not query.strip():  # nothing to rank by: said before a gateway is started for it
        from toolscript.errors import UsageError

        raise UsageError(
            "the search query is empty",
            hint='say what the tool should do (toolscript search "create a github issue"); '
            "`toolscript list-tools SERVER` lists a server's tools",
        )
    loaded, read = config_for_the_gateway(config)
    if server is not None and read:
        loaded.server(server)
    params: dict[str, Any] = {"q": query, "limit": limit}
    if threshold is not None:
        params["threshold"] = threshold
    if server is not None:
        params["server"] = server
    if explain:
        params["explain"] = "true"
    if kind != Kind.tool:
        params["kind"] = kind.value
    with gateway_client(loaded, servers=None if server is None else [server]) as client:
        answer: dict[str, Any] = client.get_json("/search", exact=as_json, **params)
        hits = answer["hits"]
        absent = None  # why a server's search is empty, asked only to print it
        if server is not None and not hits and not as_json:
            absent = _unconnected(client, server)
        if output == Output.types and hits and not as_json:
            names = ",".join(hit["name"] for hit in hits if hit.get("kind", "tool") == "tool")
            if names:
                write_shown(render_markdown(client.get_json("/types", names=names)))
            _print_script_hits(hits)
            _note_mode(answer, client.ephemeral and loaded.search.semantic)
            _note_unbuilt(answer)
            return
        ephemeral = client.ephemeral and loaded.search.semantic
        unconnected = (
            []
            if as_json or not hits
            else last_listing_notes(
                client, {hit.get("server") for hit in hits if hit.get("kind", "tool") == "tool"}
            )
        )
    if as_json:
        print_json(answer)
        return
    _note_mode(answer, ephemeral)
    _note_unbuilt(answer)
    if not hits:
        if not loaded.servers:
            where = loaded.config_file
            absent = (
                f"no {_NO_MATCH[kind.value][0]} matches: no servers are configured (add them "
                f"under mcpServers in {where})\n"
            )
        what, listing = _NO_MATCH[kind.value]
        sys.stderr.write(
            absent or f"no {what} matches; try other words, a lower --threshold, or {listing}\n"
        )
        raise typer.Exit(1)
    if explain:
        _print_explained(answer, header)
        return
    if kind != Kind.tool:  # resources and prompts: what each hit is, and how to reach it
        print_rows(
            ["kind", "server", "name", "score", "call"],
            [
                [
                    hit.get("kind", "tool"),
                    _server(hit),
                    hit["tool"],
                    f"{hit['score']:.2f}",
                    hit.get("call") or "",
                ]
                for hit in hits
            ],
            header=header,
            names=("server", "name"),
        )
        return
    print_rows(
        ["server", "tool", "score", "description"],
        [[_server(hit), hit["tool"], f"{hit['score']:.2f}", hit["description"]] for hit in hits],
        header=header,
        names=("server", "tool"),
    )
    for note in unconnected:
        write_shown(note, sys.stderr)  # a server's error is what it sent: shown, not obeyed


def _note_unbuilt(answer: dict[str, Any]) -> None:
    """Why the answer may miss tools (a changed tool list not built yet: its build waits for
    another's, or its tools are being embedded; servers still connecting), on stderr
    whatever the output form."""
    if answer.get("unbuilt"):  # the gateway's own sentence
        sys.stderr.write(f"note: {answer['unbuilt']}\n")
    if answer.get("unsearched"):  # servers still connecting: their tools not searched yet
        write_shown(_unsearched_note(answer["unsearched"]), sys.stderr)


def _unconnected(client: GatewayClient, server: str) -> str | None:
    """Why ``server`` has no tools to search when it is not connected, else None."""
    status = client.get_json("/health").get("servers", {}).get(server) or {}
    state = status.get("state")
    if state in (None, "connected"):
        return None
    why = f" ({status['error']})" if status.get("error") else ""
    then = (
        f"`toolscript auth {server}` signs in"
        if state == "needs_auth"
        else "`toolscript gateway status` shows why"
    )
    return f"no tool matches: server {server!r} is {state}{why}; {then}\n"


def _server(hit: dict[str, Any]) -> str:
    """A hit's server column: a saved script has none."""
    return "(script)" if hit.get("kind") == "script" else str(hit["server"])


def _print_script_hits(hits: list[dict[str, Any]]) -> None:
    """Saved scripts among the hits, as they are called (types come from list-scripts)."""
    scripts = [hit for hit in hits if hit.get("kind") == "script"]
    if not scripts:
        return
    typer.echo('\nSaved scripts (`import { scripts } from "toolscript"`):\n')
    for hit in scripts:
        write_shown(f"- {hit['description']}\n  `{hit['call']}`\n")


def _print_explained(answer: dict[str, Any], header: bool = False) -> None:
    """Hits with the parts of their scores; a split request's needs, numbered, first, each
    with what keyword search and the model read of it where that is not its text."""
    needs = answer.get("needs") or [answer["query"]]
    implied = set(answer.get("implied") or [])
    readings = answer.get("readings") or []
    split = len(needs) > 1
    if split:
        asked = len(needs) - len(implied)
        typer.echo(
            (f"split into {asked} needs" if asked > 1 else "one need")
            + (f" and {len(implied)} implied" if implied else "")
            + ", ranked whole and need by need:"
        )
        for number, need in enumerate(needs, 1):
            typer.echo(f"  {number}. {need}" + (" (implied)" if number - 1 in implied else ""))
            _print_reading(readings[number] if number < len(readings) else None, "     ")
    else:
        typer.echo("one need: ranked whole")
        _print_reading(readings[0] if readings else None, "  ")

    def part(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    columns = ["server", "tool", "score", "keyword", "semantic", "weight"]
    rows = []
    for hit in answer["hits"]:
        why = hit.get("explain") or {}
        placed = why.get("placed")
        row = [
            _server(hit),
            hit["tool"],
            f"{hit['score']:.2f}" + ("*" if placed else ""),
            part(why.get("keyword")),
            part(why.get("semantic")),
            part(why.get("semantic_weight")),
        ]
        if split:  # the need the hit answers, or "whole": it ranked best for the whole request
            index = why.get("need_index")
            row.append("whole" if index is None else str(index + 1))
        rows.append(row)
    print_rows(
        [*columns, "need"] if split else columns, rows, header=header, names=("server", "tool")
    )
    typer.echo(
        "score = weight x semantic + (1 - weight) x keyword, at most the score above it (its own "
        "is explain.blended in --json); semantic: the cosine scaled from the median tool (0) to "
        "the best (1); weight: the semantic share, per query"
    )
    if any((hit.get("explain") or {}).get("placed") for hit in answer["hits"]):
        typer.echo(
            "*: the keyword or the semantic ranking's best tool (thinly described), kept in "
            "its ranking's first five although the blend scored it lower"
        )


def _print_reading(reading: dict[str, Any] | None, indent: str) -> None:
    """What each half read of a text, where that is not the text: "the model read: leave a
    comment on issue 17" (the message it dictates left out)."""
    if not reading:
        return
    text = " ".join(reading["text"].split())
    for half, label in (("model", "the model read"), ("keywords", "keywords read")):
        read = None if reading.get(half) is None else " ".join(reading[half].split())
        if read is not None and read != text:
            typer.echo(f"{indent}{label}: {read or '(nothing)'}")


# What a search of each kind found none of, and the command that lists them all.
_NO_MATCH = {
    "tool": ("tool", "list-tools"),
    "resource": ("resource", "list-resources"),
    "prompt": ("prompt", "list-prompts"),
    "all": ("tool, resource or prompt", "list-tools"),
}


def _first_time(note: str) -> bool:
    """Whether ``note`` is said for the first time for this user (it is remembered as a file
    in the user's state folder; one that cannot be written says it every time)."""
    import os

    from toolscript.plumbing.paths import user_state_dir

    try:
        folder = user_state_dir() / "notes"
        folder.mkdir(exist_ok=True, mode=0o700)
        os.close(os.open(folder / note, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except (OSError, ToolscriptError):
        return True
    return True


# Keywords alone cannot tell a request no tool fits ("convert this PDF to text" shares
# "convert" with a clock's convert_time): bench/NOTES.md, "A keyword-only weak flag".
UNFLAGGED = (
    "a first hit may share only a word with the request: only semantic search flags a "
    'request no tool fits (--json: "weak": null)'
)


def _note_mode(answer: dict[str, Any], ephemeral: bool = False) -> None:
    """Say on stderr what a keyword-only search or a weak match means; ``ephemeral``: the
    gateway was started for this command only, and such a gateway loads no model."""
    search = answer.get("search") or {}
    # Resources and prompts are searched by keywords alone: no note when that is the reason.
    if answer.get("mode") == "keyword" and search.get("mode") != "hybrid":
        from toolscript.search.semantic import NEEDS_EXTRA, semantic_installed

        reason = search.get("reason") or "semantic search is not ready"
        if ephemeral:
            reason = (
                "a gateway started for one command loads no embedding model; a running "
                "one searches by meaning too"
                if semantic_installed()
                else NEEDS_EXTRA  # no running one would: it is the install that says so
            )
        if reason != NEEDS_EXTRA:
            sys.stderr.write(f"note: keyword search only ({reason}); {UNFLAGGED}\n")
        elif _first_time("semantic-extra"):  # an install's choice: said once, not every search
            sys.stderr.write(
                f"note: keyword search only ({reason}); {UNFLAGGED}; said once: "
                "`toolscript gateway status` shows the search mode\n"
            )
    if answer.get("hits") and answer.get("weak"):
        likely = (
            "of the servers searched"
            if answer.get("unsearched")
            else "so likely no configured server does it"
        )
        sys.stderr.write(
            "nothing matched well: no tool is close to the request in meaning (a word of it "
            f"in a tool's text is not enough), {likely}; the nearest tools follow. Try other "
            "words, or `toolscript list-servers` for what they offer\n"
        )


def _unsearched_note(servers: list[dict[str, Any]]) -> str:
    """The servers whose tools the answer could not hold (none listed yet: still connecting
    after the gateway served the others)."""
    named = ", ".join(f"{one['name']} ({one['state']})" for one in servers)
    return (
        f"note: not searched, no tools listed yet: {named}; search again once "
        "`toolscript list-servers` shows them connected\n"
    )
