"""The ``toolscript`` command: wires the command modules into one typer app."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from toolscript import __version__
from toolscript.cli.lazy import real_app, resolved
from toolscript.cli.options import CacheDirOption, ConfigOption

__all__ = ["app"]

HELP = """MCP code mode: call your MCP servers' tools from one short TypeScript program.

Examples:

\b
  toolscript init                       # import the servers Claude Code, Cursor, ... define
  toolscript trust                      # you read .toolscript.json: its servers may start
  toolscript gateway start &            # connect the servers in .toolscript.json
  toolscript list-servers
  toolscript list-tools github --verbose
  toolscript search "open a github issue" --output types
  toolscript get-types github create_issue
  toolscript list-resources docs; toolscript read-resource docs file:///README.md
  toolscript exec 'import { tools } from "toolscript"; return await tools.github.listIssues({})'
  toolscript script.ts                  # run a file
  toolscript save weeklyReport report.ts   # keep it as a saved script (toolscripts/)
  toolscript run weeklyReport --input '{"team": "infra"}'
  toolscript gateway status --json | jq .servers
  toolscript mcp                        # serve code mode to any MCP client over stdio
  toolscript auth sentry                # sign in to a server that uses OAuth
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
    config: ConfigOption = None,
    cache: CacheDirOption = None,
) -> None:
    """Global options (``--config`` and ``--cache-dir`` work after the command too)."""
    # What the entry point does for the real command line, for callers of the app itself.
    if config:
        os.environ["TOOLSCRIPT_CONFIG"] = config
    if cache:
        os.environ["TOOLSCRIPT_CACHE_DIR"] = cache


def _register() -> None:
    from toolscript.cli import (
        auth,
        cache,
        config,
        exec,
        gateway,
        history,
        init,
        mcp,
        offerings,
        scripts,
        search,
        servers,
        tools,
        trust,
        types,
    )

    app.command("list-servers")(servers.list_servers)
    app.command("list-tools")(tools.list_tools)
    app.command("get-types")(types.get_types)
    app.command("list-resources")(offerings.list_resources)
    app.command("read-resource")(offerings.read_resource)
    app.command("list-prompts")(offerings.list_prompts)
    app.command("get-prompt")(offerings.get_prompt)
    app.command("search")(search.search)
    app.command("exec")(exec.exec_command)
    app.command("save")(scripts.save_command)
    app.command("list-scripts")(scripts.list_scripts)
    app.command("run")(scripts.run_command)
    app.command("trust")(trust.trust_command)
    app.command("init")(init.init_command)
    app.command("mcp")(mcp.mcp_command)
    app.command("auth")(auth.auth_command)
    app.command("approve")(history.approve_command)
    app.add_typer(real_app(history.app), name="runs")
    app.add_typer(real_app(gateway.app), name="gateway")
    app.add_typer(real_app(config.app), name="config")
    app.add_typer(real_app(cache.app), name="cache")
    app.add_typer(real_app(gateway.hook_app), name="hook", hidden=True)
    _resolve(app)


def _resolve(group: typer.Typer) -> None:
    """Every command's options made typer's own (cli/lazy.py: the commands that start
    without typer record theirs)."""
    if group.registered_callback and group.registered_callback.callback:
        resolved(group.registered_callback.callback)
    for command in group.registered_commands:
        if command.callback:
            resolved(command.callback)
    for sub in group.registered_groups:
        if sub.typer_instance:
            _resolve(sub.typer_instance)


_register()
