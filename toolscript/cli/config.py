"""``config``: the configuration file's JSON Schema, and checking a file against it."""

from __future__ import annotations

import os
import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import typer

from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import non_ascii_spelling, print_json, shown_name, write_shown
from toolscript.config import Config, find_config_path, load_config
from toolscript.errors import ConfigError
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.processes import missing_program_hint, program_on_path

__all__ = ["app"]

app = typer.Typer(
    help="The configuration file: its JSON Schema, and checking it.\n\n"
    "Examples:\n\n\b\n"
    "    toolscript config check              # exit 0 valid, 2 with file:line:col of a problem\n"
    "    toolscript config schema > toolscript.schema.json",
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
    try:
        loaded = load_config(config)
    except ConfigError as exc:
        if not as_json:
            raise
        path = find_config_path(config)
        problems = [_problem(line, path) for line in exc.message.splitlines() if line.strip()]
        first = problems[0] if problems else _problem(exc.message, path)
        first["hint"] = exc.hint
        print_json({"valid": False, "path": str(path), "error": first, "errors": problems})
        raise typer.Exit(exc.exit_code) from None
    missing = [*_programs_not_found(loaded), *_tool_files_ending_the_gateway(loaded)]
    from toolscript.store.trust import needs_trust

    untrusted = loaded.path is not None and needs_trust(loaded.path)
    if as_json:
        print_json(
            {
                "valid": True,
                "path": str(loaded.path) if loaded.path else None,
                "trusted": not untrusted,
                "servers": [server.name for server in loaded.servers],
                "warnings": [*loaded.warnings, *missing, *loaded.import_warnings],
            }
        )
        return
    if loaded.path is None:
        sys.stderr.write(
            "no .toolscript.json here or in a folder above: zero servers (write one with "
            "`mcpServers`, or `toolscript init` to import your other clients' servers)\n"
        )
        return
    for warning in [*loaded.warnings, *missing]:
        write_shown(f"warning: {warning}\n", sys.stderr)
    for warning in loaded.import_warnings:  # they quote other clients' files
        write_shown(f"warning: import: {warning}\n", sys.stderr)
    count = len(loaded.servers)
    write_shown(f"{loaded.path}: valid, {count} server{'' if count == 1 else 's'}\n")
    if untrusted:
        _write_untrusted(loaded)


def _write_untrusted(loaded: Config) -> None:
    """On stderr, what a config not trusted yet would start: what changed since the user
    last trusted it (a `git pull`'s edit), else every server it starts."""
    from toolscript.cli.trust import seen_of, shown_servers, write_changes
    from toolscript.store.trust import changes, imported_project_files, last_seen

    assert loaded.path is not None
    before, since = last_seen(loaded.path)
    if before is None:
        write_shown(_untrusted_note(loaded), sys.stderr)  # a repository's names: shown
        return
    folder = loaded.path.parent.resolve()
    servers = shown_servers(loaded, folder)
    imported = [file for file in imported_project_files(loaded.path) if file.is_file()]
    changed = changes(before, seen_of(loaded, servers, imported))
    sys.stderr.write("note: not trusted as it is now, so nothing it names starts; ")
    write_changes(changed, since, servers, listed=False, stream=sys.stderr, whole="")
    write_shown(
        f"read them (and the files they run), then `toolscript trust` in {folder}\n", sys.stderr
    )


def _untrusted_note(loaded: Config) -> str:
    """What a config not trusted yet would start, each server with what of the user's
    environment it is sent: what to read before `toolscript trust` (a cloned repository's,
    or one a `git pull` changed)."""
    lines = [
        "note: not trusted yet, so nothing it names starts; once trusted it starts:\n",
    ]
    for server in loaded.servers:
        if server.disabled:
            continue
        sent = ", ".join(f"${{{name}}} in {where}" for name, where in server.variables)
        lines.append(
            f"  {shown_name(server.name)}: {server.target}"
            + (f" (sent your {sent})" if sent else "")
            + "\n"
        )
        spelled = non_ascii_spelling(server.name)
        if spelled:
            lines.append(f"    its name is not ASCII: {spelled} (not the server it may read as)\n")
    folder = loaded.path.parent if loaded.path else loaded.project_dir
    lines.append(f"read them (and the files they run), then `toolscript trust` in {folder}\n")
    return "".join(lines)


def _programs_not_found(loaded: Config) -> list[str]:
    """Each stdio server whose program the gateway would not find (on PATH's absolute
    folders, or from its folder), with what to check: looked up, never run."""
    found = []
    for server in loaded.servers:
        command = server.command or ""
        if server.transport != "stdio" or server.disabled or server.unset or not command:
            continue
        folder = server.cwd or loaded.project_dir
        env = {**os.environ, **server.env}
        if program_on_path(command, cwd=folder, env=env):
            continue
        hint = missing_program_hint(command, cwd=folder, env=env)
        own = server.source in (None, loaded.path)  # (an imported one: another's format)
        field = f"mcpServers.{server.name}.command" if own else server.name
        found.append(
            f"{server.source or loaded.path}: {field}: command not found: {command}{hint}; "
            "the gateway cannot start it as it is"
        )
    return found


def _tool_files_ending_the_gateway(loaded: Config) -> list[str]:
    """Each internal tool file whose source ends its process (``os._exit``...): it runs in
    the gateway. Read, never imported."""
    from toolscript.upstream.local import (
        MAX_TOOL_FILE_BYTES,
        parse_script_metadata,
        process_ender_warning,
    )

    found = []
    for server in loaded.servers:
        if server.transport != "local" or server.disabled or not server.command:
            continue
        path = Path(server.command)
        try:
            text = read_regular_file(path, MAX_TOOL_FILE_BYTES).decode("utf-8")
        except (OSError, UnicodeDecodeError):  # the gateway says why it cannot load it
            continue
        if parse_script_metadata(path, text) is None:
            warning = process_ender_warning(path, text)
            if warning is not None:
                found.append(f"{path.parent}/{warning}")
    return found


# "FILE:LINE:COL: FIELD: MESSAGE", FIELD left out where the problem is not one key's
_PROBLEM = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<column>\d+): (?:(?P<field>[^\s:]+): )?(?P<message>.*)$"
)


def _problem(text: str, path: Path) -> dict[str, Any]:
    """One problem of a config error as fields (file, line, column, field, message)."""
    found = _PROBLEM.match(text)
    if found is None:
        message = text.removeprefix(f"{path}: ")
        return {"file": str(path), "line": None, "column": None, "field": None, "message": message}
    return {
        "file": found["file"],
        "line": int(found["line"]),
        "column": int(found["column"]),
        "field": found["field"],
        "message": found["message"],
    }
