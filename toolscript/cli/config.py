"""``config``: the configuration file's JSON Schema, and checking a file against it."""

from __future__ import annotations

import sys
from importlib import resources

import typer

from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import print_json
from toolscript.config import load_config

__all__ = ["app"]

app = typer.Typer(
    help="The configuration file: its JSON Schema, and checking it.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema of .toolscript.json (point "$schema" at a saved copy for editors).

    Examples:

    \b
        toolscript config schema > .toolscript.schema.json
        toolscript config schema | jq '.properties | keys'
    """
    text = resources.files("toolscript.schemas").joinpath("toolscript.schema.json").read_text()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


@app.command("check")
def check(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Check the config file: exit 0 when valid, 2 with file:line:col of the first problem.

    Examples:

    \b
        toolscript config check
        toolscript config check --config other.json --json
    """
    loaded = load_config(config)
    where = str(loaded.path) if loaded.path else "(no config file: zero servers)"
    if as_json:
        print_json({"path": where, "servers": [server.name for server in loaded.servers]})
        return
    typer.echo(f"{where}: valid, {len(loaded.servers)} servers")
