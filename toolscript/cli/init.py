"""``init``: a ``.toolscript.json`` that imports the MCP servers other clients define."""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from toolscript.cli.options import JsonOption
from toolscript.cli.output import print_json, write_shown
from toolscript.config import CONFIG_FILENAME
from toolscript.errors import UsageError
from toolscript.otherclients import MAX_CONFIG_BYTES, Discovery, discover, home_dir
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.jsonpos import json_syntax_error

__all__ = ["init_command"]

GITIGNORED = ".toolscript/"


def init_command(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write without asking.")] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Set the import key of an existing .toolscript.json (its other keys are kept).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Import the MCP servers your other clients already define.

    Looks for the configs of Claude Code (.mcp.json, ~/.claude.json), Claude Desktop,
    Codex (~/.codex/config.toml), Cursor (.cursor/mcp.json, ~/.cursor/mcp.json), Gemini
    CLI (.gemini/settings.json, ~/.gemini/settings.json), VS Code (.vscode/mcp.json) and
    Windsurf (~/.codeium/windsurf/mcp_config.json), shows the servers it found, and asks
    before writing a .toolscript.json here whose "import" key reads them live (an edit
    there reaches the gateway). It adds .toolscript/ to .gitignore. With --json and no
    --yes it only reports what it found.

    Examples:

    \b
        toolscript init
        toolscript init --yes && toolscript trust
        toolscript init --json | jq '.found[].client'
        toolscript init --force --yes     # add import to an existing .toolscript.json
    """
    project_dir = Path.cwd().resolve()
    path = project_dir / CONFIG_FILENAME
    if path.is_symlink():  # a cloned repository's may name any file of the user's
        raise UsageError(
            f"{path} is a symbolic link (to {os.readlink(path)}): not written through",
            hint='add "import": [...] to the file it names by hand, or remove the link '
            "and run `toolscript init` again",
        )
    exists = path.exists() and not force
    existing = _existing_config(path) if path.exists() and force else {}
    found = discover(project_dir)
    importable = [item for item in found if item.imports.servers]
    clients = [item.client for item in importable]
    report: dict[str, Any] = {
        "path": str(path),
        "import": clients,
        "found": [_found(item, project_dir) for item in found],
        "written": False,
        "gitignore": False,
        "exists": path.exists(),
    }
    if not as_json:
        _show(found, project_dir)
    if not clients:
        if found:  # their files define servers, each skipped: the warnings above say why
            nothing = UsageError(
                "found no MCP server toolscript can run as written in "
                + ", ".join(item.title for item in found)
                + (" (each warning says why)" if as_json else " (each warning above says why)"),
                hint="do as each warning says (fix the entry, or export the variable it "
                "names) and run `toolscript init` again, or define servers under mcpServers in "
                f"{CONFIG_FILENAME} yourself",
            )
        else:
            nothing = UsageError(
                "found no MCP servers in the configs of Claude Code, Claude Desktop, Codex, "
                "Cursor, Gemini CLI, VS Code or Windsurf",
                hint=f"define servers under mcpServers in {CONFIG_FILENAME} yourself",
            )
        if as_json:  # the report is the one object: it says the error as every command's do
            print_json(nothing.to_dict() | report)
        raise nothing
    if exists:
        if as_json and not yes:  # --json alone only reports, as it says
            print_json(report)
            return
        raise UsageError(
            f"{path} exists already",
            hint=f'add "import": {json.dumps(clients)} to it by hand, or run `toolscript init '
            "--force` to set its import key (its other keys are kept)",
        )
    if not yes:
        if as_json:
            print_json(report)
            return
        question = f"Write {CONFIG_FILENAME} importing {', '.join(clients)}?"
        try:
            # asked on stderr: the terminal, even when stdout is piped
            agreed = typer.confirm(question, default=True, err=True)
        except typer.Abort:
            if sys.stdin.isatty():
                raise  # Ctrl+C
            sys.stderr.write("\n")
            raise UsageError(  # an agent's shell, a pipe: no one answered
                f"no answer on stdin (not a terminal): {CONFIG_FILENAME} not written",
                hint="run `toolscript init --yes` to write it (`--json` reports what it found)",
            ) from None
        if not agreed:
            sys.stderr.write("nothing written\n")
            raise typer.Exit(1)
    _write_config(path, existing, clients)
    report["written"] = True
    report["gitignore"] = _ignore_cache(project_dir)
    servers = sum(len(item.imports.servers) for item in importable)
    from toolscript.store.trust import needs_trust

    report["needs_trust"] = needs_trust(path)
    if as_json:
        print_json(report)
        return
    plural = "" if servers == 1 else "s"
    sys.stdout.write(f"wrote {path} (import: {', '.join(clients)}; {servers} server{plural})\n")
    if report["gitignore"]:
        sys.stdout.write(f"added {GITIGNORED} to .gitignore\n")
    if report["needs_trust"]:
        sys.stdout.write(
            "next: read it and the project files it imports, then run `toolscript trust`\n"
        )


def _shown(path: Path, project_dir: Path) -> str:
    for base, prefix in ((project_dir, ""), (home_dir(), "~/")):
        if path.is_relative_to(base):
            return prefix + str(path.relative_to(base))
    return str(path)


def _found(item: Discovery, project_dir: Path) -> dict[str, Any]:
    by_file: dict[Path, list[dict[str, str]]] = {}
    for server in item.imports.servers:
        by_file.setdefault(server.source, []).append({"name": server.name, "target": server.target})
    return {
        "client": item.client,
        "title": item.title,
        "files": [
            {"file": str(file), "shown": _shown(file, project_dir), "servers": servers}
            for file, servers in by_file.items()
        ],
        "warnings": list(item.imports.warnings),
        "error": item.error,
    }


def _show(found: tuple[Discovery, ...], project_dir: Path) -> None:
    """What was found, before the question: shown, never obeyed (a repository's
    ``.mcp.json`` can hold a ``\\r`` and an erased line in a command's args)."""
    if not found:
        return
    write_shown("Found MCP servers in:\n")
    for item in found:
        if item.error is not None and not item.imports.servers:
            write_shown(f"  {item.title}: not readable, skipped: {item.error}\n")
            continue
        write_shown(f"  {item.title} ({item.client})\n")
        if not item.imports.servers:
            write_shown("    no server toolscript can run as written:\n")
        for entry in _found(item, project_dir)["files"]:
            write_shown(f"    {entry['shown']}\n")
            for server in entry["servers"]:
                write_shown(f"      {server['name']}: {server['target']}\n")
        for warning in item.imports.warnings:
            write_shown(f"    warning: {warning}\n")


def _existing_config(path: Path) -> dict[str, Any]:
    """The ``.toolscript.json`` that ``--force`` changes: one it cannot read as a JSON
    object is refused, never replaced (its servers would be lost)."""
    try:
        document = json.loads(read_regular_file(path, MAX_CONFIG_BYTES))  # never a FIFO
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}:{json_syntax_error(exc)}; not changed",
            hint='fix it first (`toolscript config check`), or add "import" to it by hand',
        ) from exc
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        raise UsageError(f"{path}: cannot read it: {exc}; not changed") from exc
    if not isinstance(document, dict):
        raise UsageError(f"{path}: not a JSON object; not changed")
    return document


def _write_config(path: Path, existing: dict[str, Any], clients: list[str]) -> None:
    document = {**existing, "import": clients}
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def _ignore_cache(project_dir: Path) -> bool:
    """Add ``.toolscript/`` to the project's ``.gitignore``; False when it is there (or the
    file cannot be written: said on stderr, the config is written already)."""
    ignore = project_dir / ".gitignore"
    try:
        if ignore.is_symlink():  # a cloned repository's may name any file of the user's
            raise OSError(errno.ELOOP, f"a symbolic link (to {os.readlink(ignore)})")
        try:
            # any encoding: only ASCII lines are compared; never a FIFO
            data = read_regular_file(ignore, MAX_CONFIG_BYTES)
        except FileNotFoundError:
            data = b""
        lines = {line.strip() for line in data.splitlines()}
        if lines & {b".toolscript", b".toolscript/", b"/.toolscript", b"/.toolscript/"}:
            return False
        separator = b"" if not data or data.endswith(b"\n") else b"\n"
        with ignore.open("ab") as file:
            file.write(separator + GITIGNORED.encode() + b"\n")
    except OSError as exc:
        sys.stderr.write(
            f"warning: could not add {GITIGNORED} to {ignore} ({exc.strerror or exc}); "
            "add it yourself: it holds the project's cache\n"
        )
        return False
    return True
