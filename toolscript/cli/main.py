"""The ``toolscript`` command: wires the command modules into one typer app."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from toolscript import __version__
from toolscript.errors import ToolscriptError

__all__ = ["app", "main"]

HELP = """MCP code mode: call your MCP servers' tools from one short TypeScript program.

Examples:

  toolscript gateway start &            # connect the servers in .toolscript.json

  toolscript list-servers

  toolscript list-tools github --verbose

  toolscript get-types github create_issue

  toolscript gateway status --json | jq .servers
"""

app = typer.Typer(
    name="toolscript",
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["--help", "-h"]},
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"toolscript {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="Show Python tracebacks for errors.", envvar="TOOLSCRIPT_DEBUG"
        ),
    ] = False,
) -> None:
    """Global options."""


def _register() -> None:
    from toolscript.cli import gateway, servers, tools, types

    app.command("list-servers")(servers.list_servers)
    app.command("list-tools")(tools.list_tools)
    app.command("get-types")(types.get_types)
    app.add_typer(gateway.app, name="gateway")


_register()


def main() -> None:
    """Entry point: run the app and turn toolscript errors into a message and exit code."""
    debug = "--debug" in sys.argv[1:] or os.environ.get("TOOLSCRIPT_DEBUG", "") not in ("", "0")
    try:
        app()
    except ToolscriptError as exc:
        if debug:
            raise
        sys.stderr.write(f"toolscript: error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"hint: {exc.hint}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
