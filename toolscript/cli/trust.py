"""``trust``: let toolscript start this project's servers."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from toolscript.cli.options import ConfigOption, JsonOption
from toolscript.cli.output import non_ascii_spelling, print_json, shown_name, write_shown
from toolscript.config import (
    Config,
    config_text,
    find_config_path,
    parse_config,
    read_config_file,
    unencrypted,
)
from toolscript.errors import UsageError

__all__ = ["seen_of", "shown_servers", "trust_command", "write_changes"]

_NAMED = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)")
# the variables of other clients' files: ${VAR}, ${env:VAR}, and Gemini CLI's $VAR
_IMPORTED_NAMED = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)|\$([A-Za-z_][A-Za-z0-9_]*)")
# a ${VAR} of the config with no default (``${VAR:-default}`` starts its server unset)
_NEEDED = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")


class _UnsetAsEmpty(Mapping[str, str]):
    """The environment, with a variable the config names and it lacks read as empty (and
    noted): trust is about what the file says, and a token exported later changes none of
    it. Any other name reads as the environment has it."""

    def __init__(self, environ: Mapping[str, str], named: set[str]) -> None:
        self.environ, self.named = environ, named
        self.unset: list[str] = []

    def __getitem__(self, name: str) -> str:
        return self.environ[name]

    def get(self, name: str, default: object = None) -> Any:
        if name in self.environ or name not in self.named:
            return self.environ.get(name, default)
        if name not in self.unset:
            self.unset.append(name)
        return ""

    def __iter__(self) -> Iterator[str]:
        return iter(self.environ)

    def __len__(self) -> int:
        return len(self.environ)


def trust_command(
    revoke: Annotated[
        bool, typer.Option("--revoke", help="Stop trusting this project's config (every version).")
    ] = False,
    show: Annotated[bool, typer.Option("--list", help="List the trusted configs.")] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full", help="Show every server, not only what changed since you last trusted it."
        ),
    ] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Trust this project's .toolscript.json to start its servers.

    A repository's config names programs to run and where to send the values of
    ${VAR}. Nothing starts from a project config (`gateway start`, `exec`, `run`,
    `mcp`, the Claude Code plugin, `doit`) until you have read it and trusted it
    here; editing the file makes it untrusted again (a version trusted before,
    a branch switched back to, stays trusted). The project files of other
    clients it imports (.mcp.json, .cursor/mcp.json, .vscode/mcp.json,
    .gemini/settings.json) are trusted with it, and editing one does the same. `config check` reads it
    without trusting it. A config named by TOOLSCRIPT_CONFIG is your own setting,
    and so is one under a folder of TOOLSCRIPT_TRUSTED_PATHS.

    Trusting it again (after a `git pull`) shows what changed since you last
    trusted it: servers added, removed and changed (with the fields), tool files
    and saved scripts added, changed and removed; `--full` shows every server.

    Examples:

    \b
        toolscript trust              # after reading .toolscript.json
        toolscript trust --full       # every server, not only what changed
        toolscript trust --list
        toolscript trust --revoke
    """
    from toolscript.store import trust

    if show:
        records = trust.trusted()
        if as_json:
            print_json(records)
        else:
            for recorded in records:
                sys.stdout.write(f"{recorded}\n")
        return
    path = find_config_path(config)
    if revoke:
        if not trust.forget(path):
            raise UsageError(f"{path} was not trusted")
        sys.stdout.write(f"no longer trusted: {path}\n")
        return
    if not path.exists():
        raise UsageError(f"{path}: no config file to trust", hint="create .toolscript.json first")
    # What is shown is what is trusted: the bytes parsed, the config's and the imported
    # files'. Reading the files anew to trust them trusted whatever was written there
    # meanwhile (a shell swapping the config as this ran).
    content = read_config_file(path)
    text = config_text(content, path)
    named = set(_NAMED.findall(text))
    needed = set(_NEEDED.findall(text))
    environ = _UnsetAsEmpty(os.environ, named)
    loaded = parse_config(text, path, environ)  # an invalid file is reported, not trusted
    # The files it imports name variables too: one not set here skipped its server, which
    # then was not shown, yet started once the variable was exported. Read as empty, each
    # such server is shown with what it is sent (files read again: the last read is trusted).
    for _ in range(3):
        more = {
            name
            for data in loaded.imported_contents.values()
            if data
            for name in _IMPORTED_NAMED.findall(data.decode("utf-8", "replace"))
            if any(name)
        }
        more = {first or second for first, second in more} - named
        needed |= more  # (read as each client reads them: not judged here)
        if not more:
            break
        named |= more
        environ = _UnsetAsEmpty(os.environ, named)
        loaded = parse_config(text, path, environ)
    folder = path.parent.resolve()
    servers = shown_servers(loaded, folder)
    # the repository's files of other clients it imports: trusted with it, as they are now
    imported = [str(file) for file in trust.imported_project_files(path) if file.is_file()]
    seen = seen_of(loaded, servers, [Path(file) for file in imported])
    before, since = trust.last_seen(path)  # what the last trust showed, read before this one
    trust.trust(path, trust.fingerprint(path, content, loaded.imported_contents), seen)
    changed = trust.changes(before, seen) if before is not None else None
    if as_json:
        print_json(
            {
                "trusted": str(path),
                "imported": imported,
                "servers": servers,
                "unset": environ.unset,
                # since the last trust (null: none recorded to compare with, every server new)
                "changes": None if changed is None else {"since": since, **changed},
            }
        )
        return
    write_shown(f"trusted: {path}\n")
    for file in imported:
        write_shown(f"  with the file it imports: {file}\n")
    if changed is None or full:
        for server in servers:
            _write_server(server)
    if changed is not None:
        write_changes(changed, since, servers, listed=full)
    missing = [name for name in environ.unset if name in needed]
    if missing:
        sys.stderr.write(
            f"note: not set here: {', '.join(missing)}; export each before its servers start "
            "(until then, starting them names what is missing)\n"
        )
    defaulted = [name for name in environ.unset if name not in needed]
    if defaulted:
        sys.stderr.write(f"note: not set here, their defaults used: {', '.join(defaulted)}\n")


def _write_server(
    server: Mapping[str, Any], indent: str = "  ", what: str = "", stream: TextIO | None = None
) -> None:
    """One server as trust shows it: its target, and what of the user's it reaches."""
    say = functools.partial(write_shown, stream=stream)
    say(f"{indent}{what}{shown_name(server['name'])}: {server['target']}\n")
    spelled = non_ascii_spelling(server["name"])
    if spelled:
        say(f"{indent}  its name is not ASCII: {spelled} (not the server it may read as)\n")
    reached = _host_reached(server) if server["transport"] in ("http", "sse") else None
    if reached:
        say(f"{indent}  reaches the host {reached} (its name as written is not ASCII)\n")
    if server["sends"]:
        sent = ", ".join(f"${{{s['variable']}}} in {s['in']}" for s in server["sends"])
        say(f"{indent}  is sent your {sent}\n")
    if server["outside"]:
        say(f"{indent}  runs in {server['cwd']}, outside the project's folder\n")
    if server.get("unencrypted"):
        say(f"{indent}  is sent {server['unencrypted']}\n")


def shown_servers(loaded: Config, folder: Path) -> list[dict[str, Any]]:
    """Each server as trust shows it: its summary, what of the user's environment it is
    sent (a header's ${GITHUB_TOKEN} shows nowhere in its target), where it runs when that
    is outside the project (``folder``), and the host a URL not in ASCII reaches."""
    return [
        server.summary()
        | {
            "sends": [{"variable": name, "in": where} for name, where in server.variables],
            "cwd": str(server.cwd) if server.cwd and server.transport == "stdio" else None,
            "host": _host_reached(server.summary()),
            "unencrypted": unencrypted(server),
            "outside": bool(
                server.cwd and server.transport == "stdio" and not server.cwd.is_relative_to(folder)
            ),
        }
        for server in loaded.servers
    ]


def seen_of(loaded: Config, servers: list[dict[str, Any]], imported: list[Path]) -> dict[str, Any]:
    """What this trust shows, kept with it: each server's fields as shown, and the hashes of
    the tool files, saved scripts and imported files (code trust does not cover, but a
    pull that changes it is worth saying)."""
    from toolscript.store.savedscripts import scripts_dir
    from toolscript.store.trust import file_digests

    folder = loaded.project_dir
    scripts = scripts_dir(folder)
    saved = [] if scripts.is_symlink() else sorted(scripts.glob("*.ts"))
    tool_files = [Path(s.command) for s in loaded.servers if s.transport == "local" and s.command]
    return {
        "servers": {
            server["name"]: {field: server.get(field) for field in _SEEN_FIELDS}
            | {"sends": [f"${{{s['variable']}}} in {s['in']}" for s in server["sends"]]}
            for server in servers
        },
        "tool_files": file_digests(folder, tool_files),
        "saved_scripts": file_digests(folder, saved),
        "imported": file_digests(folder, imported),
    }


# a server's fields a trust keeps, to say which changed at the next (and "sends")
_SEEN_FIELDS = ("transport", "target", "description", "disabled", "source", "cwd")

_FILE_KINDS = {
    "tool_files": "tool file",
    "saved_scripts": "saved script",
    "imported": "imported file",
}


def write_changes(
    changed: Mapping[str, Any],
    since: float | None,
    servers: list[dict[str, Any]],
    *,
    listed: bool,
    stream: TextIO | None = None,
    whole: str = "`toolscript trust --full` lists every server",
) -> None:
    """What changed since the last trust, each added or changed server with what it reaches,
    and how to see the whole config (``whole``; ``listed``: it was just shown), on
    ``stream`` (stdout)."""
    import time

    say = functools.partial(write_shown, stream=stream)

    when = f" ({time.strftime('%Y-%m-%d %H:%M', time.localtime(since))})" if since else ""
    full = "" if listed or not whole else f"; {whole}"
    if not changed:
        count = len(servers)
        say(
            f"nothing changed since you last trusted it{when}: {count} "
            f"server{'' if count == 1 else 's'}{full}\n"
        )
        return
    say(f"changed since you last trusted it{when}:\n")
    by_name = {server["name"]: server for server in servers}
    kinds = changed.get("servers") or {}
    for name in kinds.get("added", []):
        _write_server(by_name[name], what="server added: ", stream=stream)
    for name, fields in (kinds.get("changed") or {}).items():
        _write_server(by_name[name], what="server changed: ", stream=stream)
        for field, (was, _) in fields.items():
            say(f"    {field} was: {_shown_value(was)}\n")
    for name in kinds.get("removed", []):
        say(f"  server removed: {shown_name(name)}\n")
    for kind, what in _FILE_KINDS.items():
        for how, names in (changed.get(kind) or {}).items():
            if kind == "tool_files" and how != "changed":
                continue  # a tool file added or removed is its server's, said above
            for name in names:
                say(f"  {what} {how}: {name}\n")
    touched = {*kinds.get("added", []), *(kinds.get("changed") or {})}
    same = len([server for server in servers if server["name"] not in touched])
    if same:
        say(
            f"the other {same} server{' is' if same == 1 else 's are'} as you trusted "
            f"{'it' if same == 1 else 'them'}{full}\n"
        )


def _shown_value(value: object) -> str:
    """A field's earlier value on one line: a list joined, none said, long text cut."""
    if value is None or value == [] or value == "":
        return "none"
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= 160 else text[:159] + "…"


def _host_reached(server: Mapping[str, Any]) -> str | None:
    """The host a URL server's connection reaches when its name as written is not ASCII
    (``api.githu\u042c.com``, a Cyrillic letter, is ``api.xn--githu-10e.com``, not GitHub's):
    the letters of another script read as the name of a host the person knows. None for
    an ASCII host, a command, or a URL that names none yet (``https://${HOST}/mcp``)."""
    if server.get("transport") not in ("http", "sse"):
        return None
    target = str(server.get("target") or "")
    if target.isascii():
        return None
    from urllib.parse import urlsplit

    import httpx

    try:
        if (urlsplit(target).hostname or "").isascii():
            return None
        return httpx.URL(target).raw_host.decode("ascii")
    except (httpx.InvalidURL, UnicodeError, ValueError):
        return "none (its name cannot be encoded as a host's)"
