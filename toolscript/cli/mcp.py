"""``mcp``: serve code mode to any MCP client (Claude Desktop, Cursor, VS Code, ...)."""

from __future__ import annotations

import sys
from typing import Annotated

from toolscript.cli.lazy import typer
from toolscript.cli.options import CacheDirOption, ConfigOption
from toolscript.mcpface.tools import YIELD_AFTER
from toolscript.plumbing.paths import find_config_path, project_cache_dir

__all__ = ["mcp_command"]


def mcp_command(
    http: Annotated[
        bool,
        typer.Option("--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio."),
    ] = False,
    port: Annotated[
        int,
        typer.Option("--port", "-p", min=0, max=65535, help="Port for --http; 0 picks a free one."),
    ] = 0,
    yield_after: Annotated[
        float,
        typer.Option(
            "--yield-after",
            min=0,
            help="Seconds before execute answers a script still running with its run id "
            "and its output so far (wait_run continues it); keep it under the client's "
            "tool-call timeout.",
        ),
    ] = YIELD_AFTER,
    config: ConfigOption = None,
    cache: CacheDirOption = None,
) -> None:
    """Serve MCP: eight tools (search_tools, get_types, execute, wait_run, run_script,
    save_script, read_resource, list_servers) that stand in for every tool, resource and
    prompt of every configured server.

    Uses the project's running gateway, or starts one and stops it (with every
    server) when the client disconnects. With --http, prints the URL to give the
    client (its secret path is kept in your own cache, so it stays the same).

    Examples:

    \b
        toolscript mcp                       # stdio: what an MCP client's config runs
        claude mcp add toolscript -- toolscript mcp
        toolscript mcp --http --port 8765    # prints http://127.0.0.1:8765/<secret>/mcp
        toolscript mcp --yield-after 25      # for a client that gives up after 30 s
    """
    if port and not http:
        raise typer.BadParameter("--port needs --http", param_hint="--port")
    from toolscript.execution.lifeline import Lifeline
    from toolscript.execution.locate import spawn_owned_gateway

    # Followed before the servers spawn: a face killed while it imports leaves none running.
    lifeline = Lifeline(catch_signals=False)
    lifeline.follow_tethered()
    # Its servers start while the face imports the MCP SDK (a second or more); the gateway
    # itself is served in a thread of this process once the face has imported.
    early = spawn_owned_gateway(config, cache)
    from toolscript.mcpface.server import serve

    if not http and sys.stdin.isatty():
        sys.stderr.write(
            "toolscript mcp speaks MCP on stdin and stdout: an MCP client runs it (see the "
            "client snippets in docs/mcp.md); Ctrl+C to stop, or use --http\n"
        )
    try:
        serve(
            config=config,
            cache=cache,
            # (the config itself is not read here: one that cannot be used is served all
            # the same, and each tool call says why)
            cache_dir=project_cache_dir(find_config_path(config).parent, cache),
            http=http,
            port=port,
            early=early,
            yield_after=yield_after,
            lifeline=lifeline,
        )
    finally:
        from toolscript.gateway.inprocess import InProcessGateway

        if isinstance(early, InProcessGateway):
            early.stop(20)  # (nothing left to do when the face stopped it)
        elif early is not None and early.poll() is None:  # the face failed before it took it
            from toolscript.plumbing.processes import stop_process

            stop_process(early, 20)
        lifeline.close()  # (serve ended it, unless it failed before)
