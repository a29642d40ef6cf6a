"""``exec``: run a toolscript (inline, from stdin, or a file) in the Deno sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolscript.cli.options import CacheDirOption, ConfigOption
from toolscript.execution.command import EXEC_OPTIONS, run_exec

__all__ = ["exec_command"]


def exec_command(
    code: Annotated[
        str | None,
        typer.Argument(help="TypeScript to run; '-' reads it from stdin.", show_default=False),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(*EXEC_OPTIONS["file"].flags, help=EXEC_OPTIONS["file"].help),
    ] = EXEC_OPTIONS["file"].default,
    check: Annotated[
        bool, typer.Option("--check/--no-check", help="Type-check before running.")
    ] = True,
    timeout: Annotated[
        float,
        typer.Option(
            *EXEC_OPTIONS["timeout"].flags,
            help=EXEC_OPTIONS["timeout"].help,
            min=EXEC_OPTIONS["timeout"].minimum,
            max=EXEC_OPTIONS["timeout"].maximum,
        ),
    ] = EXEC_OPTIONS["timeout"].default,
    memory: Annotated[
        int,
        typer.Option(
            *EXEC_OPTIONS["memory"].flags,
            help=EXEC_OPTIONS["memory"].help,
            min=EXEC_OPTIONS["memory"].minimum,
            max=EXEC_OPTIONS["memory"].maximum,
        ),
    ] = EXEC_OPTIONS["memory"].default,
    max_output: Annotated[
        int,
        typer.Option(
            *EXEC_OPTIONS["max_output"].flags,
            help=EXEC_OPTIONS["max_output"].help,
            min=EXEC_OPTIONS["max_output"].minimum,
            max=EXEC_OPTIONS["max_output"].maximum,
        ),
    ] = EXEC_OPTIONS["max_output"].default,
    max_calls: Annotated[
        int,
        typer.Option(
            *EXEC_OPTIONS["max_calls"].flags,
            help=EXEC_OPTIONS["max_calls"].help,
            min=EXEC_OPTIONS["max_calls"].minimum,
        ),
    ] = EXEC_OPTIONS["max_calls"].default,
    resume: Annotated[
        str | None,
        typer.Option(
            *EXEC_OPTIONS["resume"].flags,
            help=EXEC_OPTIONS["resume"].help,
            metavar="RUN_ID",
            show_default=False,
        ),
    ] = EXEC_OPTIONS["resume"].default,
    trace: Annotated[
        bool,
        typer.Option("--trace", help="After the result, list the run's tool calls on stderr."),
    ] = False,
    config: ConfigOption = None,
    cache: CacheDirOption = None,
) -> None:
    """Run TypeScript that calls your tools, in a sandbox that reaches only the gateway.

    `import { tools } from "toolscript"` gives the typed client. A top-level
    `return VALUE` prints VALUE as JSON. Type errors are reported before anything
    runs. Exit codes: 0 success, 1 script error, 120 a call needs approval (the
    run stopped; see `toolscript approve`), 121 a resumed run called something
    else, 122 --max-calls reached, 123 output past --max-output (a preview is
    printed, the whole output kept in a file), 124 time limit, 125 memory limit.

    Examples:

    \b
        toolscript exec 'return {count: 42}' | jq .count
        toolscript exec 'import { tools } from "toolscript"; return await tools.time.getCurrentTime({timezone: "UTC"})'
        toolscript exec - <<'EOF'
        import { tools } from "toolscript";
        console.log(await tools.everything.echo({ message: "hi" }));
        EOF
        toolscript script.ts
        toolscript exec --trace script.ts          # and list its tool calls
        toolscript exec --resume 20261124-101500-3f9a1c   # after `toolscript approve`
    """
    raise typer.Exit(
        run_exec(
            code,
            file,
            check,
            timeout,
            memory,
            max_output,
            config,
            cache,
            max_calls=max_calls,
            resume=resume,
            trace=trace,
        )
    )
