"""``save``, ``list-scripts`` and ``run``: saved scripts, kept in the project's toolscripts/."""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from toolscript.cli.client import for_terminal, gateway_client
from toolscript.cli.exec import TRACE_HELP
from toolscript.cli.options import (
    CacheDirOption,
    ConfigOption,
    HeaderOption,
    JsonOption,
    MaxCallsOption,
    MaxOutputOption,
    MemoryOption,
    TimeoutOption,
)
from toolscript.cli.output import print_json, print_rows
from toolscript.config import load_config
from toolscript.errors import GatewayResponseError, UsageError
from toolscript.execution.command import run_exec, saved_script_call
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.store.savedscripts import (
    MAX_RUN_SCRIPT_BYTES,
    MAX_SCRIPT_BYTES,
    check_name,
    takes_no_input,
)

__all__ = ["list_scripts", "run_command", "save_command"]

SAVE_TIMEOUT = 240.0  # seconds: saving type-checks every saved script (cold: several seconds)


def save_command(
    name: Annotated[str, typer.Argument(help="The script's name: an identifier (weeklyReport).")],
    file: Annotated[Path, typer.Argument(help="The .ts file to save.", show_default=False)],
    description: Annotated[
        str | None,
        typer.Option(
            "--description",
            "-d",
            help="What it does (search finds it by this); kept as the doc comment of its "
            "default export. Default: the doc comment it has.",
            show_default=False,
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a saved script.")] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Save a script in the project's toolscripts/ folder, for every later run and session.

    The file is a module whose default export is an async function of one object argument
    (its inputs). Saving type-checks it against the current tools and refuses it, naming
    the errors, when it does not check. Other scripts call it as `scripts.NAME(...)`.

    Examples:

    \b
        toolscript save weeklyReport report.ts --description "Open PRs of a team, summed up"
        toolscript run weeklyReport --input '{"team": "infra"}'
        toolscript exec 'import { scripts } from "toolscript"; return await scripts.weeklyReport({ team: "infra" })'

    A script file looks like:

    \b
        import { tools } from "toolscript";
        /** Open PRs of a team, summed up. */
        export default async function weeklyReport(input: { team: string }) {
          return await tools.github.searchPullRequests({ query: `team:${input.team}` });
        }
    """
    check_name(name)
    loaded = load_config(config)
    if file.suffix not in (".ts", ".mts"):
        raise UsageError(f"not a TypeScript file: {file}", hint="saved scripts are .ts files")
    try:
        # a regular file only, as exec reads one: a FIFO named x.ts waited for a writer for
        # ever, a link to /dev/zero was read until memory ran out
        code = read_regular_file(file, MAX_SCRIPT_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise UsageError(
            f"file not found: {file}",
            hint="check the path (relative to the current directory); "
            "`toolscript save NAME FILE.ts` saves a script file that exists",
        ) from None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise UsageError(
                f"{name} was not saved: {file} is over {MAX_SCRIPT_BYTES // 1024} KB, more "
                "than the gateway loads of a saved script",
                hint="keep data out of the script: read it from a file or a tool",
            ) from None
        raise UsageError(f"cannot read {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read {file}: {exc}") from exc
    request = {"name": name, "code": code, "description": description, "force": force}
    with gateway_client(loaded, timeout=SAVE_TIMEOUT) as client:
        try:
            saved: dict[str, Any] = client.request("POST", "/scripts", json=request).json()
        except GatewayResponseError as exc:
            if exc.body.get("errors") and not as_json:
                errors = [str(error) for error in exc.body["errors"]]
                if description is None:  # the lines are the file's own: name the file
                    errors = [_in_file(error, name, file) for error in errors]
                errors = for_terminal(errors)
                sys.stderr.write("".join(f"{error}\n" for error in errors))
            if as_json:
                print_json(exc.body)
            raise
    if as_json:
        print_json(saved)
        return
    saved = for_terminal(saved)  # other saved scripts' errors quote a repository's files
    verb = "replaced" if saved["replaced"] else "saved"
    typer.echo(f"{verb} {saved['name']}: {saved['path']}")
    typer.echo(f"  {saved['signature']}")
    given = "" if takes_no_input(str(saved.get("signature") or "")) else " --input '{...}'"
    typer.echo(f"  call it: toolscript run {saved['name']}{given}")
    if not saved.get("description"):
        typer.echo(
            "  no description: search finds it by its name alone (--description, or a "
            "/** doc */ above the function)"
        )
    for other, errors in saved["broken"].items():
        typer.echo(f"warning: {other} no longer type-checks: {errors[0]}", err=True)


def _in_file(error: str, name: str, file: Path) -> str:
    """``error`` about the script saved as ``name`` (``toolscripts/NAME.ts:4:31: ...``),
    naming the user's ``file`` instead: nothing was written at the path the gateway names."""
    saved = f"toolscripts/{name}.ts:"
    return f"{file}:{error[len(saved) :]}" if error.startswith(saved) else error


def list_scripts(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show signatures and every error.")
    ] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
    header: HeaderOption = False,
) -> None:
    """List the project's saved scripts, and the errors of any that no longer type-check.

    Examples:

    \b
        toolscript list-scripts
        toolscript list-scripts --json | jq -r '.scripts[] | select(.status == "broken") | .name'
    """
    loaded = load_config(config)
    with gateway_client(loaded) as client:
        listing: dict[str, Any] = client.get_json("/scripts", exact=as_json)
    if as_json:
        print_json(listing)
        return
    for warning in listing["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
    scripts = listing["scripts"]
    if not scripts:
        typer.echo(
            f"no saved scripts in {listing['directory']} "
            "(save one with `toolscript save NAME FILE.ts`)",
            err=True,
        )
        return
    rows = []
    for script in scripts:
        about = script["description"]
        if script["status"] == "broken":
            shown = script["errors"] if verbose else script["errors"][:1]
            about = "broken: " + "; ".join(shown)
        rows.append(
            [script["name"], script["status"], *([script["signature"]] if verbose else []), about]
        )
    print_rows(
        ["script", "status", *(["signature"] if verbose else []), "description"],
        rows,
        header=header,
    )


def run_command(
    name: Annotated[str, typer.Argument(help="The saved script's name (see list-scripts).")],
    input_text: Annotated[
        str | None,
        typer.Option("--input", "-i", help="Its input: a JSON object.", show_default=False),
    ] = None,
    input_file: Annotated[
        Path | None,
        typer.Option(
            "--input-file", help="Read its input (a JSON object) from this file; '-': stdin."
        ),
    ] = None,
    timeout: TimeoutOption = None,
    memory: MemoryOption = None,
    max_output: MaxOutputOption = None,
    max_calls: MaxCallsOption = None,
    trace: Annotated[bool, typer.Option("--trace", help=TRACE_HELP)] = False,
    config: ConfigOption = None,
    cache: CacheDirOption = None,
) -> None:
    """Run a saved script with its input; prints what it returns (as JSON).

    It runs as any toolscript does: in the sandbox, with the same limits and policy. The
    input is type-checked against the script's argument before anything runs.

    Examples:

    \b
        toolscript run weeklyReport --input '{"team": "infra"}'
        toolscript run weeklyReport --input-file input.json --timeout 60
    """
    if input_text is not None and input_file is not None:
        raise UsageError("give --input or --input-file, not both")
    if input_file is not None:
        try:  # read to just past what a run may hold (a pipe, <(...), may be given)
            if str(input_file) == "-":
                read = sys.stdin.buffer.read(MAX_RUN_SCRIPT_BYTES + 1)
            else:
                with input_file.open("rb") as handle:
                    read = handle.read(MAX_RUN_SCRIPT_BYTES + 1)
            input_text = read.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {input_file}: {exc}") from exc
        if len(read) > MAX_RUN_SCRIPT_BYTES:
            raise UsageError(
                f"the input is too large: {input_file} is over the {MAX_RUN_SCRIPT_BYTES:,} "
                f"bytes a run may be; {name} was not run",
                hint="give the script where the data is (a path, an id) and read it through "
                "a tool (a file server's read)",
            )
    code = saved_script_call(
        name, input_text if input_text is not None else "{}", _signature(name, config)
    )
    raise typer.Exit(
        run_exec(
            code,
            None,
            True,
            timeout,
            memory,
            max_output,
            config,
            cache,
            max_calls=max_calls,
            trace=trace,
            saved=name,
        )
    )


def _signature(name: str, config: str | None) -> str | None:
    """The declaration of saved script ``name``'s default export as its file has it (None
    when it cannot be read: the run then says what is wrong)."""
    from toolscript.config import find_config_path
    from toolscript.store.savedscripts import scripts_dir, signature_of

    try:
        check_name(name)
        path = scripts_dir(find_config_path(config).parent) / f"{name}.ts"
        source = read_regular_file(path, MAX_SCRIPT_BYTES, links=False).decode("utf-8")
    except (OSError, UnicodeDecodeError, UsageError):
        return None
    return signature_of(source, name) or None
