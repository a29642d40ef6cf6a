"""The MCP servers other clients define (Claude Code, Claude Desktop, Codex, Cursor, Gemini
CLI, VS Code, Windsurf), read as ``.toolscript.json`` entries: what its ``import`` key brings.

Pure reading: which files each client keeps (``client_files``), and each file's servers in
toolscript's own entry shape with the client's variables expanded (``read_imports``). What a
format has that toolscript cannot honour (VS Code's prompted ``inputs``, Claude Code's
``headersHelper``, ...) skips the server or the key with a warning that names file, line and
field; a file that is not JSON (TOML) at all raises ConfigError with its position.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolscript.errors import ConfigError
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.jsonpos import JsonLocator, JsonPath, deepest_at, format_path

__all__ = [
    "CLIENTS",
    "MAX_CONFIG_BYTES",
    "ClientFile",
    "Discovery",
    "ImportedServer",
    "Imports",
    "client_files",
    "discover",
    "home_dir",
    "imported_clients",
    "is_toolscript_itself",
    "project_files",
    "read_imports",
    "strip_json_comments",
]

# The names the `import` key takes, each a client whose MCP servers toolscript can read.
CLIENTS = ("claude-code", "claude-desktop", "codex", "cursor", "gemini", "vscode", "windsurf")
CLIENT_TITLES = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    "codex": "Codex",
    "cursor": "Cursor",
    "gemini": "Gemini CLI",
    "vscode": "VS Code",
    "windsurf": "Windsurf",
}

Scope = Literal["project", "user"]
# How a client writes variables in its config (what each documents):
#   claude:   ${VAR} and ${VAR:-default}               (Claude Code's .mcp.json)
#   editor:   ${env:VAR}, ${workspaceFolder}, ${userHome}, ... (Cursor; VS Code adds ${input:ID})
#   windsurf: ${env:VAR} and ${file:/path}
#   gemini:   $VAR and ${VAR}
#   literal:  none (Claude Desktop, Codex: Codex names variables in env_vars and *_env_var keys)
Dialect = Literal["claude", "editor", "vscode", "windsurf", "gemini", "literal"]

# A server's own name must fit toolscript's (the schema's propertyNames).
_NAME = re.compile(r"^(?!.*__)[^/]+$")  # and no "_" at its end (gateway/core.split_tool_name)


@dataclass(frozen=True)
class ClientFile:
    """One place a client keeps servers: a file, and where in it (``section``, a JSON path)."""

    client: str
    path: Path
    scope: Scope  # project: the repository's (trust covers it); user: the user's own
    section: JsonPath = ("mcpServers",)
    dialect: Dialect = "literal"


@dataclass(frozen=True)
class ImportedServer:
    """A server another client defines, as a ``.toolscript.json`` entry (values expanded)."""

    name: str
    entry: Mapping[str, Any]
    target: str  # its URL, or command and args, as the client's file writes them
    source: Path
    client: str
    substituted: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # (variable, value)
    # the entry as the client's file writes it (converted, not expanded): what the server is
    written: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # each variable of the user's environment the entry is given, with the setting that
    # holds it ("headers.Authorization", "url"): what `toolscript trust` says it is sent
    variables: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Imports:
    """What the imported clients define: their servers (first definition of a name wins),
    the warnings of what was skipped, the files read and every file watched for changes."""

    servers: tuple[ImportedServer, ...] = ()
    warnings: tuple[str, ...] = ()
    files: tuple[Path, ...] = ()  # files that exist and were read
    watched: tuple[Path, ...] = ()  # every candidate file, present or not, and env files
    itself: tuple[str, ...] = ()  # entries skipped as toolscript's own MCP face
    broken: tuple[str, ...] = ()  # files that could not be read or parsed (in warnings too)
    # the bytes of each file read (None: absent), for trust to judge what was read, not the
    # file read again (``store/trust.py``)
    contents: Mapping[Path, bytes | None] = field(default_factory=dict)


def home_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's home folder: ``HOME`` of ``environ`` (tests point it elsewhere)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get("HOME") or environ.get("USERPROFILE")
    return Path(chosen) if chosen else Path.home()


def _claude_desktop_file(home: Path, environ: Mapping[str, str], platform: str) -> Path:
    """Where Claude Desktop keeps its config on this operating system."""
    if platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if platform.startswith("win"):
        base = Path(environ["APPDATA"]) if environ.get("APPDATA") else home / "AppData" / "Roaming"
        return base / "Claude" / "claude_desktop_config.json"
    base = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "Claude" / "claude_desktop_config.json"


def client_files(
    client: str,
    project_dir: Path,
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> tuple[ClientFile, ...]:
    """The places ``client`` keeps servers for ``project_dir``, the one that wins first."""
    environ = os.environ if environ is None else environ
    home = home_dir(environ)
    platform = platform or sys.platform
    if client == "claude-code":
        claude_dir = environ.get("CLAUDE_CONFIG_DIR")
        user = Path(claude_dir) / ".claude.json" if claude_dir else home / ".claude.json"
        # Claude Code's scopes: local (this project's entry in ~/.claude.json), project, user.
        local = [
            ClientFile(client, user, "user", ("projects", str(key), "mcpServers"), "claude")
            for key in dict.fromkeys([project_dir, project_dir.resolve()])
        ]
        return (
            *local,
            ClientFile(client, project_dir / ".mcp.json", "project", dialect="claude"),
            ClientFile(client, user, "user", dialect="claude"),
        )
    if client == "claude-desktop":
        return (ClientFile(client, _claude_desktop_file(home, environ, platform), "user"),)
    if client == "codex":
        codex_home = Path(environ.get("CODEX_HOME") or home / ".codex")
        return (ClientFile(client, codex_home / "config.toml", "user", ("mcp_servers",)),)
    if client == "cursor":
        return (
            ClientFile(client, project_dir / ".cursor" / "mcp.json", "project", dialect="editor"),
            ClientFile(client, home / ".cursor" / "mcp.json", "user", dialect="editor"),
        )
    if client == "gemini":
        return (
            ClientFile(
                client, project_dir / ".gemini" / "settings.json", "project", dialect="gemini"
            ),
            ClientFile(client, home / ".gemini" / "settings.json", "user", dialect="gemini"),
        )
    if client == "vscode":
        path = project_dir / ".vscode" / "mcp.json"
        return (ClientFile(client, path, "project", ("servers",), "vscode"),)
    if client == "windsurf":
        path = home / ".codeium" / "windsurf" / "mcp_config.json"
        return (ClientFile(client, path, "user", dialect="windsurf"),)
    raise ConfigError(f"unknown client {client!r}; known: {', '.join(CLIENTS)}")


def project_files(clients: Iterable[str], project_dir: Path) -> tuple[Path, ...]:
    """The files of ``clients`` that belong to the project (the repository's, not the
    user's), and the ``envFile`` files inside the project that their entries (or the
    user's) read: what trusting its ``.toolscript.json`` covers. An env file sets a
    trusted command's environment (``NODE_OPTIONS``, ``LD_PRELOAD``): it is config too."""
    found: list[Path] = []
    for client in clients:
        if client not in CLIENTS:
            continue
        for place in client_files(client, project_dir):
            if place.scope == "project":
                found.append(place.path)
            if place.dialect in ("editor", "vscode"):
                found.extend(_env_files_inside(place, project_dir))
    return tuple(dict.fromkeys(found))


def _env_files_inside(place: ClientFile, project_dir: Path) -> list[Path]:
    """The ``envFile`` paths of ``place``'s entries that lie in the project (read
    leniently: a file that does not parse names none; loading it says why)."""
    try:
        text = _read(place.path)
    except ConfigError:
        return []
    if not text or "envFile" not in text:
        return []
    try:
        document = json.loads(strip_json_comments(text))
    except (ValueError, RecursionError):
        return []
    section: Any = document
    for key in place.section:
        section = section.get(key) if isinstance(section, dict) else None
    if not isinstance(section, dict):
        return []
    found = []
    for entry in section.values():
        written = entry.get("envFile") if isinstance(entry, dict) else None
        path = _env_file_inside(written, project_dir) if isinstance(written, str) else None
        if path is not None:
            found.append(path)
    return found


def _editor_predefined(project_dir: Path, home: Path) -> dict[str, str]:
    """The variables Cursor and VS Code define themselves (no environment's)."""
    return {
        "workspaceFolder": str(project_dir),
        "workspaceRoot": str(project_dir),
        "workspaceFolderBasename": project_dir.name,
        "userHome": str(home),
        "pathSeparator": os.sep,
        "/": os.sep,
        "cwd": str(project_dir),
    }


def _env_file_inside(written: str, project_dir: Path) -> Path | None:
    """The file an ``envFile`` names when it lies in the project, its editor variables
    expanded in one pass (a folder named ``${userHome}`` stays itself); None outside. A
    ``${env:...}`` is left as written: such a file is not covered, and not read either."""
    predefined = _editor_predefined(project_dir, home_dir())

    def substitute(match: re.Match[str]) -> str:
        return predefined.get(match.group(1), match.group(0))

    expanded = _BRACED.sub(substitute, written)
    path = Path(os.path.normpath(project_dir / Path(expanded).expanduser()))
    return path if _inside(path, project_dir) else None


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` also where file names ignore case and Unicode
    normalization (macOS): there ``../REPO/x.env`` is the project's own file. Read so
    everywhere: a case-sensitive system only has trust hash a file more."""
    return Path(_folded(path)).is_relative_to(_folded(folder))


def _folded(path: Path) -> str:
    import unicodedata

    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", str(path)).casefold())


def imported_clients(config_text: bytes | str) -> tuple[str, ...]:
    """The clients a ``.toolscript.json`` imports, read leniently (an invalid file: none;
    loading it reports why)."""
    try:
        value = json.loads(config_text)
    except (ValueError, RecursionError):
        return ()
    imports = value.get("import") if isinstance(value, dict) else None
    if not isinstance(imports, list):
        return ()
    return tuple(dict.fromkeys(name for name in imports if name in CLIENTS))


# -- reading ------------------------------------------------------------------------------


def read_imports(
    clients: Iterable[str],
    project_dir: Path,
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> Imports:
    """Every server ``clients`` define for ``project_dir``; a name's first definition wins
    (the clients in the order given, each client's own precedence within it), even one
    skipped with a warning: a project's entry that cannot run does not let the user's
    entry of that name take its place unseen. A file that cannot be read or parsed is a
    warning naming file:line:col (in ``broken`` too): the other files' servers stay."""
    environ = os.environ if environ is None else environ
    servers: dict[str, ImportedServer] = {}
    claimed: set[str] = set()
    warnings: list[str] = []
    files: list[Path] = []
    watched: list[Path] = []
    itself: list[str] = []
    broken: list[str] = []
    contents: dict[Path, bytes | None] = {}
    for client in dict.fromkeys(clients):
        places = client_files(client, project_dir, environ, platform)
        texts: dict[Path, str | None] = {}
        # ~/.claude.json, large, holds two places: parsed once (and whether it has comments)
        documents: dict[Path, tuple[Any, bool]] = {}
        for place in places:
            try:
                if place.path not in texts:
                    watched.append(place.path)
                    texts[place.path] = None  # a broken file is reported once
                    texts[place.path] = _read(place.path, contents)
                    if texts[place.path] is not None:
                        files.append(place.path)
                text = texts[place.path]
                if text is None:
                    continue
                reader = _Reader(place, text, project_dir, environ, *documents.get(place.path, ()))
            except (ConfigError, RecursionError) as exc:
                if isinstance(exc, ConfigError):
                    problem = exc.message + (f" ({exc.hint})" if exc.hint else "")
                else:  # [[[[...]]]] thousands deep
                    line, col = deepest_at(texts.get(place.path) or "")
                    problem = f"{place.path}:{line}:{col}: nested too deeply to read"
                texts[place.path] = None  # its other places (~/.claude.json's) are skipped too
                broken.append(problem)
                warnings.append(f"{problem}; its servers were skipped")
                continue
            documents[place.path] = (reader.document, reader.plain)
            for server in reader.servers():
                if server.name not in claimed:
                    servers[server.name] = server
                    continue
                first = servers.get(server.name)
                if first is not None and first.client != client and first.entry != server.entry:
                    # another client's own precedence is its business; across clients, say so
                    at = reader.where((*place.section, server.name), key=True)
                    reader.warnings.append(
                        f"{at}: {CLIENT_TITLES[first.client]} defines {server.name!r} too "
                        f"({first.source}), first in import; this one is not used"
                    )
            claimed.update(reader.names)
            warnings.extend(reader.warnings)
            itself.extend(reader.itself)
            watched.extend(reader.env_files)
            contents.update(reader.env_contents)
    return Imports(
        servers=tuple(servers.values()),
        warnings=tuple(dict.fromkeys(warnings)),
        files=tuple(files),
        watched=tuple(dict.fromkeys(watched)),
        itself=tuple(dict.fromkeys(itself)),
        broken=tuple(broken),
        contents=contents,
    )


# The largest client config read (Claude Code's ~/.claude.json keeps history and grows) and
# the largest env file or ${file:...}: a repository's symlink to a huge file is refused.
MAX_CONFIG_BYTES = 64_000_000
MAX_VALUE_FILE_BYTES = 1_000_000


def _read(path: Path, contents: dict[Path, bytes | None] | None = None) -> str | None:
    """The text of a client's config; None when absent. A device, FIFO, huge file or one
    not UTF-8 raises ConfigError naming the file (and the line of a bad byte). ``contents``
    gets the bytes read (None: absent)."""
    try:
        data = read_regular_file(path, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        if contents is not None:
            contents[path] = None
        return None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read an imported client config: {exc.strerror or exc}"
        ) from exc
    if contents is not None:
        contents[path] = data
    return _decode(path, data)


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped, as editors on Windows write one)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        raise ConfigError(
            f"{path}:{line}:{col}: not UTF-8 text (byte 0x{data[exc.start]:02x})",
            hint="save the file as UTF-8",
        ) from exc


_TOOLSCRIPT = re.compile(r"^toolscript(?:[=@<>~!].*)?$")


def is_toolscript_itself(command: str, args: Iterable[str]) -> bool:
    """Whether a stdio entry runs ``toolscript mcp`` (directly, or through uvx, pipx, npx,
    ``python -m``, a shell's ``-c`` line): importing it would make the gateway a server of
    itself."""
    words = [command]
    for arg in args:  # a shell's -c string (what Claude Desktop needs for a login PATH)
        words.extend(_shell_words(arg) if any(c.isspace() for c in arg) else [arg])
    for i, word in enumerate(words):
        name = Path(word).name if "/" in word or "\\" in word else word
        if name.endswith(".exe"):
            name = name[:-4]
        if not _TOOLSCRIPT.match(name):
            continue
        rest = words[i + 1 :]
        ends = [at for at, later in enumerate(rest) if later in _SHELL_SEPARATORS]
        if "mcp" in rest[: ends[0] if ends else None]:  # in the same shell command
            return True
    return False


_SHELL_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "(", ")"})


def _shell_words(text: str) -> list[str]:
    """The words of a shell command line, its separators (``&&``, ``;``) their own."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote
        return text.split()


class _Reader:
    """The servers of one place in one client's file."""

    def __init__(
        self,
        place: ClientFile,
        text: str,
        project_dir: Path,
        environ: Mapping[str, str],
        document: Any = None,
        plain: bool = True,
    ) -> None:
        self.place = place
        self.text = text
        self.project_dir = project_dir
        self.environ = environ
        self.warnings: list[str] = []
        self.itself: list[str] = []
        self.env_files: list[Path] = []  # the envFile files its entries read (watched too)
        self.read_at: list[tuple[str, JsonPath]] = []  # each variable read, and where
        self.env_contents: dict[Path, bytes] = {}  # and their bytes as read
        self.names: list[str] = []  # every name its place defines, skipped ones too
        self._positions: Callable[[JsonPath, bool], tuple[int, int]] | None = None
        self._locator: JsonLocator | None = None
        self.plain = plain  # JSON without comments: positions are found in the text as it is
        self.document = self._parse() if document is None else document

    # -- the file as a whole

    def _parse(self) -> Any:
        path = self.place.path
        if self.place.client == "codex":
            try:
                return tomllib.loads(self.text)
            except tomllib.TOMLDecodeError as exc:
                where = re.search(r"at line (\d+), column (\d+)", str(exc))
                if where:
                    at = f"{where.group(1)}:{where.group(2)}:"
                else:  # "at end of document"
                    last = self.text.rsplit("\n", 1)[-1]
                    at = f"{self.text.count(chr(10)) + 1}:{len(last) + 1}:"
                raise ConfigError(
                    f"{path}:{at} invalid TOML: {str(exc).split(' (at line')[0]}",
                    hint='fix the file (Codex reads it too), or drop "codex" from import',
                ) from exc
        if not self.text.strip():
            return {}  # an empty file defines no servers (an editor's save passes through one)
        try:
            return json.loads(self.text)
        except json.JSONDecodeError:
            self.plain = False
            pass  # perhaps JSON with comments (JSONC), which VS Code and Gemini CLI read
        try:
            return json.loads(strip_json_comments(self.text))
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}",
                hint=f"fix the JSON syntax at that position, or drop "
                f"{json.dumps(self.place.client)} from import",
            ) from exc

    def where(self, at: JsonPath, *, key: bool = False) -> str:
        """``file:line:col: field`` of ``at`` (a path inside the file's document; ``key``:
        the position of its key rather than its value)."""
        line, col = self._line_col(at, key)
        return f"{self.place.path}:{line}:{col}: {format_path(at)}"

    def _line_col(self, at: JsonPath, key: bool) -> tuple[int, int]:
        if self._positions is None:
            if self.place.client == "codex":
                self._positions = self._toml_position
            else:  # positions only when a warning needs them, and only along its path:
                # ~/.claude.json can be megabytes (parsing it for positions took seconds)
                self._positions = self._json_position
        return self._positions(at, key)

    def _json_position(self, at: JsonPath, key: bool = False) -> tuple[int, int]:
        if self._locator is None:  # JSONC: located with its comments blanked
            text = self.text if self.plain else strip_json_comments(self.text)
            self._locator = JsonLocator(text)
        return self._locator.line_col(at, key=key)

    def _toml_position(self, at: JsonPath, key: bool = False) -> tuple[int, int]:
        """The line of a server's table (``[mcp_servers.NAME]``) or of one of its keys."""
        lines = self.text.splitlines()
        name = str(at[1]) if len(at) > 1 else ""
        header = re.compile(
            r"^\s*\[\s*mcp_servers\s*\.\s*(?:\"|')?" + re.escape(name) + r"(?:\"|')?\s*\]"
        )
        for number, line in enumerate(lines, 1):
            if not header.match(line):
                continue
            if len(at) > 2:
                assignment = re.compile(r"^\s*" + re.escape(str(at[2])) + r"\s*=")
                for offset, below in enumerate(lines[number:], 1):
                    if below.lstrip().startswith("["):
                        break
                    if assignment.match(below):
                        return number + offset, len(below) - len(below.lstrip()) + 1
            return number, 1
        return 1, 1

    # -- the servers

    def servers(self) -> list[ImportedServer]:
        section: Any = self.document
        for key in self.place.section:
            section = section.get(key) if isinstance(section, dict) else None
        if section is None:
            return []
        if not isinstance(section, dict):
            self.warnings.append(
                f"{self.where(self.place.section)}: expected an object of servers; "
                f"{CLIENT_TITLES[self.place.client]}'s servers there were skipped"
            )
            return []
        found = []
        self.names = list(section)
        for name, raw in section.items():
            at = (*self.place.section, name)
            if not isinstance(raw, dict):
                self.warnings.append(f"{self.where(at)}: expected an object; skipped")
                continue
            if not _NAME.match(name) or name.endswith("_"):
                what = "has '/' or '__'" if not _NAME.match(name) else "ends in '_'"
                self.warnings.append(
                    f"{self.where(at, key=True)}: the name {name!r} {what}, which toolscript "
                    "server names cannot; skipped (define it in .toolscript.json under another name)"
                )
                continue
            try:
                server = self._server(name, raw, at)
            except _Skip as skip:
                self.warnings.append(f"{self.where(skip.at)}: {skip.reason}; {name!r} skipped")
                continue
            if server is not None:
                found.append(server)
        return found

    def _server(self, name: str, raw: dict[str, Any], at: JsonPath) -> ImportedServer | None:
        client = self.place.client
        convert = _CONVERTERS[client]
        entry, target = convert(self, raw, at)
        if entry.get("command") is not None and is_toolscript_itself(
            str(entry["command"]), [str(a) for a in entry.get("args", ())]
        ):
            self.itself.append(f"{self.place.path}: {name}")
            return None
        substituted: list[tuple[str, str]] = []
        self.read_at = []
        expanded = self._expand(entry, at, substituted)
        variables = tuple(
            (variable, ".".join(str(part) for part in where[len(at) :] if isinstance(part, str)))
            for variable, where in self.read_at
        )
        return ImportedServer(
            name=name,
            entry=expanded,
            target=target,
            source=self.place.path,
            client=client,
            substituted=tuple(substituted),
            written=entry,
            variables=tuple((variable, where or "value") for variable, where in variables),
        )

    # -- values

    def string(self, raw: Mapping[str, Any], key: str, at: JsonPath) -> str | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise _Skip((*at, key), f"expected a string, got {_json_type(value)}")
        return value

    def strings(self, raw: Mapping[str, Any], key: str, at: JsonPath) -> list[str]:
        value = raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise _Skip((*at, key), f"expected an array of strings, got {_json_type(value)}")
        out = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise _Skip((*at, key, i), f"expected a string, got {_json_type(item)}")
            out.append(str(item))
        return out

    def mapping(self, raw: Mapping[str, Any], key: str, at: JsonPath) -> dict[str, str]:
        value = raw.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise _Skip((*at, key), f"expected an object, got {_json_type(value)}")
        out = {}
        for name, item in value.items():
            if isinstance(item, bool):
                item = "true" if item else "false"
            if not isinstance(item, str | int | float):
                raise _Skip((*at, key, name), f"expected a string, got {_json_type(item)}")
            out[str(name)] = str(item)
        return out

    def unsupported(self, raw: Mapping[str, Any], at: JsonPath, known: Iterable[str]) -> None:
        """Warn of each key toolscript does not read (the server is kept without it)."""
        known = set(known)
        for key in raw:
            if key not in known:
                self.warnings.append(
                    f"{self.where((*at, key), key=True)}: not supported by toolscript; ignored"
                )

    def env_file(self, raw: Mapping[str, Any], at: JsonPath) -> dict[str, str]:
        """The variables of ``envFile`` (Cursor, VS Code): KEY=VALUE lines."""
        written = self.string(raw, "envFile", at)
        if not written:
            return {}
        expanded = self._expand_string(written, (*at, "envFile"), [])
        path = Path(expanded).expanduser()
        # ".." taken away as trust takes it away: the OS would resolve a symlinked folder
        # first (.cursor/../x is beside .cursor's target), a file trust does not hash
        path = Path(os.path.normpath(path if path.is_absolute() else self.project_dir / path))
        inside = _inside(path, self.project_dir)
        if inside and _env_file_inside(written, self.project_dir) != path:
            # Trust hashes the project's env files it can name without the environment:
            # one found through ${env:...} could change after `toolscript trust` unseen.
            raise _Skip(
                (*at, "envFile"),
                f"{written} names a file of the project through an environment variable, "
                "which `toolscript trust` cannot cover; write it with ${workspaceFolder}",
            )
        self.env_files.append(path)
        try:
            data = read_regular_file(path, MAX_VALUE_FILE_BYTES)
        except OSError as exc:
            raise _Skip((*at, "envFile"), f"cannot read {path}: {exc.strerror or exc}") from exc
        self.env_contents[path] = data
        text = data.decode("utf-8", "replace")
        found = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, _, value = line.removeprefix("export ").partition("=")
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            found[key.strip()] = value
        return found

    def _expand(self, value: Any, at: JsonPath, substituted: list[tuple[str, str]]) -> Any:
        if isinstance(value, str):
            return self._expand_string(value, at, substituted)
        if isinstance(value, dict):
            return {k: self._expand(v, (*at, k), substituted) for k, v in value.items()}
        if isinstance(value, list):
            return [self._expand(v, (*at, i), substituted) for i, v in enumerate(value)]
        return value

    def _expand_string(self, value: str, at: JsonPath, substituted: list[tuple[str, str]]) -> str:
        dialect = self.place.dialect
        if dialect == "literal" or "$" not in value:
            return value
        pattern = _GEMINI_VARIABLE if dialect == "gemini" else _BRACED

        def substitute(match: re.Match[str]) -> str:
            return self._variable(match, dialect, at, substituted)

        return pattern.sub(substitute, value)

    def _variable(
        self,
        match: re.Match[str],
        dialect: Dialect,
        at: JsonPath,
        substituted: list[tuple[str, str]],
    ) -> str:
        written = match.group(0)
        body = match.group(1) or match.group(2) or ""
        if dialect in ("claude", "gemini"):
            name, _, default = body.partition(":-")
            has_default = ":-" in body and dialect == "claude"
            if dialect == "claude" and not _IDENTIFIER.match(name):
                raise _Skip(at, f"{written}: not a variable Claude Code expands")
            if dialect == "gemini" and not _IDENTIFIER.match(body):
                return written  # Gemini CLI leaves what is no variable name as written
            found = self.environ.get(name)
            if found is None or (found == "" and has_default):
                if has_default:
                    return default
                raise _Skip(
                    at,
                    f"environment variable {name} is not set "
                    f"(export it before starting toolscript)",
                )
            substituted.append((name, found))
            self.read_at.append((name, at))
            return found
        kind, colon, argument = body.partition(":")
        if colon and kind == "env":
            found = self.environ.get(argument)
            if found is None:
                raise _Skip(
                    at,
                    f"environment variable {argument} is not set "
                    f"(export it before starting toolscript)",
                )
            substituted.append((argument, found))
            self.read_at.append((argument, at))
            return found
        if colon and kind == "input" and dialect == "vscode":
            raise _Skip(
                at,
                f"{written} is an input VS Code prompts for, which toolscript cannot ask; "
                "define the server in .toolscript.json with ${VAR} instead",
            )
        if colon and kind == "file" and dialect == "windsurf":
            try:
                file = Path(argument)
                if argument.startswith("~/"):
                    file = home_dir(self.environ) / argument[2:]
                data = read_regular_file(file, MAX_VALUE_FILE_BYTES)
                return data.decode("utf-8", "replace").strip()
            except OSError as exc:
                raise _Skip(at, f"{written}: cannot read the file ({exc.strerror or exc})") from exc
        if not colon and dialect in ("editor", "vscode"):
            predefined = _editor_predefined(self.project_dir, home_dir(self.environ))
            if body in predefined:
                return predefined[body]
        raise _Skip(at, f"{written}: a variable toolscript does not expand")


_BRACED = re.compile(r"\$\{([^}]*)\}()")
_GEMINI_VARIABLE = re.compile(r"\$\{([^}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Skip(Exception):
    """A server toolscript cannot run as its client wrote it: where, and why."""

    def __init__(self, at: JsonPath, reason: str) -> None:
        super().__init__(reason)
        self.at = at
        self.reason = reason


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "number"


def _target(entry: Mapping[str, Any]) -> str:
    if entry.get("url"):
        return str(entry["url"])
    return " ".join([str(entry.get("command") or ""), *map(str, entry.get("args", ()))])


def _url(reader: _Reader, raw: Mapping[str, Any], key: str, at: JsonPath) -> str | None:
    url = reader.string(raw, key, at)
    if url is not None and not re.match(r"^(https?://|\$\{)", url):
        raise _Skip((*at, key), f"expected an http:// or https:// URL, got {json.dumps(url)}")
    return url


def _transport(reader: _Reader, raw: Mapping[str, Any], at: JsonPath, default: str) -> str:
    kind = reader.string(raw, "type", at) or default
    aliases = {"streamable-http": "http", "streamableHttp": "http", "local": "stdio"}
    kind = aliases.get(kind, kind)
    if kind not in ("stdio", "http", "sse"):
        raise _Skip(
            (*at, "type"),
            f"transport {kind!r} is not one toolscript connects to (stdio, http, sse)",
        )
    return kind


def _stdio_or_remote(
    reader: _Reader,
    raw: Mapping[str, Any],
    at: JsonPath,
    *,
    url_key: str = "url",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The keys most clients share: command/args/env/cwd, or type/url/headers."""
    if raw.get("type") is not None:
        _transport(reader, raw, at, "http")  # one it cannot connect to is said first
    url = _url(reader, raw, url_key, at)
    command = reader.string(raw, "command", at)
    if command is None and url is None:
        raise _Skip(at, f"a server needs either 'command' or '{url_key}'")
    if command is not None:
        # a type that is no stdio's is the entry's intent: never run its command silently
        kind = _transport(reader, raw, at, "stdio")
        if kind != "stdio":
            raise _Skip((*at, "type"), f"an {kind} server needs '{url_key}'")
        entry: dict[str, Any] = {"type": "stdio", "command": command}
        args = reader.strings(raw, "args", at)
        if args:
            entry["args"] = args
        variables = {**(env or {}), **reader.mapping(raw, "env", at)}
        if variables:
            entry["env"] = variables
        cwd = reader.string(raw, "cwd", at)
        if cwd:
            entry["cwd"] = cwd
        return entry
    entry = {"type": _transport(reader, raw, at, "http"), "url": url}
    if entry["type"] == "stdio":
        raise _Skip((*at, "type"), "a stdio server needs 'command'")
    headers = reader.mapping(raw, "headers", at)
    if headers:
        entry["headers"] = headers
    return entry


_SHARED = ("type", "command", "args", "env", "cwd", "url", "headers")


def _claude_entry(reader: _Reader, raw: dict[str, Any], at: JsonPath) -> tuple[dict[str, Any], str]:
    """Claude Code (``.mcp.json``, ``~/.claude.json``) and Claude Desktop."""
    if "headersHelper" in raw:
        raise _Skip(
            (*at, "headersHelper"),
            "headers made by a command (headersHelper) are not supported by toolscript; "
            "define the server in .toolscript.json with its headers as ${VAR}",
        )
    entry = _stdio_or_remote(reader, raw, at)
    oauth = raw.get("oauth")
    if isinstance(oauth, dict):
        mapped = {"clientId": oauth.get("clientId"), "callbackPort": oauth.get("callbackPort")}
        entry["oauth"] = {key: value for key, value in mapped.items() if value is not None}
    reader.unsupported(raw, at, (*_SHARED, "oauth"))
    return entry, _target(raw)


def _editor_entry(reader: _Reader, raw: dict[str, Any], at: JsonPath) -> tuple[dict[str, Any], str]:
    """Cursor and VS Code: ``envFile`` beside ``env``; VS Code's ``dev`` is for debugging."""
    entry = _stdio_or_remote(reader, raw, at, env=reader.env_file(raw, at))
    reader.unsupported(raw, at, (*_SHARED, "envFile", "dev", "description"))
    return entry, _target(raw)


def _gemini_entry(reader: _Reader, raw: dict[str, Any], at: JsonPath) -> tuple[dict[str, Any], str]:
    """Gemini CLI: ``httpUrl`` (streamable HTTP) or ``url`` (SSE); ``timeout`` in ms."""
    http = _url(reader, raw, "httpUrl", at)
    if http is not None:
        entry: dict[str, Any] = {"type": "http", "url": http}
        headers = reader.mapping(raw, "headers", at)
        if headers:
            entry["headers"] = headers
    else:
        shaped = {**raw, "type": raw.get("type") or ("sse" if raw.get("url") else None)}
        entry = _stdio_or_remote(reader, {k: v for k, v in shaped.items() if v is not None}, at)
    timeout = raw.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        entry["timeout"] = timeout / 1000
    for key in ("includeTools", "excludeTools"):
        tools = reader.strings(raw, key, at)
        if tools:
            entry[key] = tools
    if raw.get("authProviderType") or raw.get("oauth"):
        raise _Skip(
            (*at, "authProviderType" if raw.get("authProviderType") else "oauth"),
            "Gemini CLI's sign-in settings are not supported by toolscript; define the server "
            "in .toolscript.json (its oauth key) and run `toolscript auth`",
        )
    quiet = ("httpUrl", "timeout", "includeTools", "excludeTools", "trust", "description")
    reader.unsupported(raw, at, (*_SHARED, *quiet))
    return entry, str(http) if http else _target(raw)


def _windsurf_entry(
    reader: _Reader, raw: dict[str, Any], at: JsonPath
) -> tuple[dict[str, Any], str]:
    """Windsurf: ``serverUrl`` (or ``url``) for remote servers; ``disabled``,
    ``disabledTools``."""
    key = "serverUrl" if "serverUrl" in raw else "url"
    entry = _stdio_or_remote(reader, raw, at, url_key=key)
    if raw.get("disabled") is True:
        entry["disabled"] = True
    tools = reader.strings(raw, "disabledTools", at)
    if tools:
        entry["excludeTools"] = tools
    reader.unsupported(raw, at, (*_SHARED, "serverUrl", "disabled", "disabledTools"))
    return entry, str(raw.get(key) or "") or _target(raw)


def _codex_entry(reader: _Reader, raw: dict[str, Any], at: JsonPath) -> tuple[dict[str, Any], str]:
    """Codex's ``[mcp_servers.NAME]``: variables named in ``env_vars``,
    ``bearer_token_env_var`` and ``env_http_headers``; ``enabled``; tool filters."""
    environ = reader.environ
    forwarded = {}
    for i, name in enumerate(reader.strings(raw, "env_vars", at)):
        if name not in environ:
            raise _Skip((*at, "env_vars", i), f"environment variable {name} is not set")
        forwarded[name] = environ[name]
    entry = _stdio_or_remote(reader, raw, at, env=forwarded)
    if entry["type"] != "stdio":
        headers = {**entry.get("headers", {}), **reader.mapping(raw, "http_headers", at)}
        for header, variable in reader.mapping(raw, "env_http_headers", at).items():
            if variable in environ:
                headers[header] = environ[variable]
        token_variable = reader.string(raw, "bearer_token_env_var", at)
        if token_variable:
            if token_variable not in environ:
                raise _Skip(
                    (*at, "bearer_token_env_var"),
                    f"environment variable {token_variable} is not set",
                )
            headers["Authorization"] = f"Bearer {environ[token_variable]}"
        if headers:
            entry["headers"] = headers
    if raw.get("enabled") is False:
        entry["disabled"] = True
    for key, ours in (("enabled_tools", "includeTools"), ("disabled_tools", "excludeTools")):
        tools = reader.strings(raw, key, at)
        if tools:
            entry[ours] = tools
    seconds = raw.get("tool_timeout_sec")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
        entry["timeout"] = float(seconds)
    known = (
        "command", "args", "env", "cwd", "url", "env_vars", "http_headers", "env_http_headers",
        "bearer_token_env_var", "enabled", "enabled_tools", "disabled_tools", "tool_timeout_sec",
        "startup_timeout_sec", "startup_timeout_ms",
    )  # fmt: skip
    reader.unsupported(raw, at, known)
    return entry, _target(raw)


_CONVERTERS: dict[
    str, Callable[[_Reader, dict[str, Any], JsonPath], tuple[dict[str, Any], str]]
] = {
    "claude-code": _claude_entry,
    "claude-desktop": _claude_entry,
    "codex": _codex_entry,
    "cursor": _editor_entry,
    "gemini": _gemini_entry,
    "vscode": _editor_entry,
    "windsurf": _windsurf_entry,
}


def strip_json_comments(text: str) -> str:
    """JSON with comments and trailing commas (VS Code's and Gemini CLI's JSONC) as plain
    JSON, each removed character a space so that lines and columns stay where they were."""
    if "/" not in text and "," not in text:
        return text
    out = list(text)
    i, n = 0, len(text)
    last_comma = -1
    while i < n:
        char = text[i]
        if char == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            last_comma = -1
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if out[j] != "\n":
                    out[j] = " "
            i = end
            continue
        if char == ",":
            last_comma = i
        elif char in "}]":
            if last_comma >= 0:
                out[last_comma] = " "
            last_comma = -1
        elif not char.isspace():
            last_comma = -1
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Discovery:
    """A client whose configs define servers for a project (what ``toolscript init`` shows),
    or whose file could not be read (``error``)."""

    client: str
    imports: Imports
    error: str | None = None

    @property
    def title(self) -> str:
        return CLIENT_TITLES[self.client]


def discover(
    project_dir: Path, environ: Mapping[str, str] | None = None, platform: str | None = None
) -> tuple[Discovery, ...]:
    """The clients that define at least one server for ``project_dir`` (toolscript's own
    entry aside), those whose file is broken, and those whose every entry was skipped
    (with the warnings that say why: a user who has servers there is told why none came)."""
    found = []
    for client in CLIENTS:
        imports = read_imports([client], project_dir, environ, platform)
        if imports.broken:
            found.append(Discovery(client, imports, imports.broken[0]))
        elif imports.servers or imports.warnings:
            found.append(Discovery(client, imports))
    return tuple(found)
