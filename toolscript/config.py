"""Load ``.toolscript.json``: find it, parse it, expand ``${VAR}``, validate, freeze."""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from toolscript.errors import ConfigError, ServerNotFoundError, ToolscriptError
from toolscript.otherclients import CLIENT_TITLES, MAX_CONFIG_BYTES, Imports, read_imports
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.redact import embedded_secrets, secret_setting
from toolscript.policy import Asking, Decision, decide, matching, timeout_for

if TYPE_CHECKING:
    from jsonschema import ValidationError
from toolscript.plumbing.jsonpos import (
    JsonPath,
    PositionedJson,
    deepest_at,
    format_path,
    json_syntax_error,
    parse_with_positions,
)
from toolscript.plumbing.paths import (
    CONFIG_FILENAME,
    find_config_path,
    project_cache_dir,
    user_cache_dir,
)

__all__ = [
    "CONFIG_FILENAME",
    "DEFAULT_TIMEOUT",
    "IDENTITY_PARTS",
    "Config",
    "RunsConfig",
    "SearchConfig",
    "ServerConfig",
    "check_syntax",
    "cleartext_host",
    "config_schema",
    "config_text",
    "find_config_path",
    "load_config",
    "parse_config",
    "read_config_file",
    "this_machine",
    "unencrypted",
]

DEFAULT_TIMEOUT = 60.0
Transport = Literal["stdio", "http", "sse", "local"]
DEFAULT_IDLE_TIMEOUT = 600.0

# ${VAR}, ${VAR:-default}, and ${env:VAR} as VS Code, Cursor and pctx write it
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=", re.MULTILINE)


def _env_file_note(source: Path | None, names: list[str]) -> str:
    """A word on the ``.env`` beside the config when it sets one of ``names``: other tools
    read such a file, toolscript does not (only the names in it are looked at, never a
    value, and it is never run: a cloned repository's file may hold anything)."""
    if source is None:
        return ""
    try:
        with (source.parent / ".env").open("rb") as file:
            text = file.read(65536).decode("utf-8", "replace")
    except (OSError, ValueError):
        return ""
    found = [name for name in names if name in set(_ENV_LINE.findall(text))]
    if not found:
        return ""
    return (
        f" (the .env beside it sets {', '.join(found)}, but toolscript reads no env file: "
        "export the variable in the shell that starts the gateway)"
    )


def _empty_mapping() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class OAuthConfig:
    """An http/sse server's ``oauth`` settings, for servers that do not let clients register
    themselves: the app registered by hand, and the loopback port its redirect URI names."""

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    callback_port: int = 0  # 0: any free port (with dynamic registration)


# What a server's identity (``ServerConfig.identity``) is made of, as messages name it: a
# change of any of them makes the approvals given for the server ask again.
IDENTITY_PARTS = "its command, args, cwd, env, URL or headers"


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server of the configuration, with variables expanded."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=_empty_mapping, repr=False)
    cwd: Path | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=_empty_mapping, repr=False)
    description: str = ""
    timeout: float = DEFAULT_TIMEOUT
    disabled: bool = False
    include_tools: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=_empty_mapping)  # local tools: config
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT  # local tools: worker idle timeout
    oauth: OAuthConfig = field(default_factory=OAuthConfig)  # http/sse: OAuth sign-in
    policy: Mapping[str, Decision] = field(default_factory=_empty_mapping)  # tool pattern -> rule
    tool_timeouts: Mapping[str, float] = field(default_factory=_empty_mapping)
    # secret values that ${VAR} expansion put anywhere in this server's entry (args, url, ...)
    expanded: tuple[str, ...] = field(default=(), repr=False)
    # what the server is as the config writes it, before ${VAR} expansion: its URL, or its
    # command and args (what lists and status show: an expanded value may be a secret)
    target: str = ""
    # what makes it this server, as JSON: its command, args (a list), cwd, env, URL and
    # headers as the config (or the client file it imports) writes them, ${VAR} unexpanded;
    # ``identity`` digests it
    identity_parts: str = field(default="", repr=False)
    # the file that defines it: .toolscript.json, or another client's config it imports
    source: Path | None = None
    # each ${VAR} its entry names, with where (``headers.Authorization``, ``url``, ``env.KEY``):
    # what of the user's environment the server is sent (``trust`` says so)
    variables: tuple[tuple[str, str], ...] = ()
    # each ${VAR} of its entry that is not set (and has no default), with where: the server
    # is not started (``unset_error`` says why), the rest of the project is
    unset: tuple[tuple[str, str], ...] = ()

    def unset_error(self, rerun: str | None = None) -> str | None:
        """Why the server is not started when its entry names variables that are not set,
        with what to do; None when every one is set. The advice is the gateway's (start it
        again), or with ``rerun`` that command's (standalone ``doit``: run it again)."""
        if not self.unset:
            return None
        names = list(dict.fromkeys(name for name, _ in self.unset))
        them = "it" if len(names) == 1 else "them"
        default = f"${{{names[0]}:-default}}"
        if rerun is None:
            advice = (
                f"export {them}, then start the gateway again (`toolscript gateway stop`, "
                f"`toolscript gateway start &`), or write {default} in the config"
            )
        else:
            advice = (
                f"export {them} (or write {default} in the config) and run {rerun} again: "
                f"it fetches {self.name} then"
            )
        return f"not started: {self.unset_variables()}; {advice}" + _env_file_note(
            self.source, names
        )

    def unset_variables(self) -> str:
        """Which of the entry's variables are not set, and where it names them."""
        names = list(dict.fromkeys(name for name, _ in self.unset))
        where = ", ".join(f"${{{name}}} in {at}" for name, at in self.unset)
        return (
            f"environment variable{'s' if len(names) > 1 else ''} "
            f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} not set ({where})"
        )

    def allows_tool(self, tool_name: str) -> bool:
        """Whether the include/exclude filters and the policy let ``tool_name`` through (a
        denied tool is absent from types, search and lists, like an excluded one)."""
        if self.denies(tool_name):
            return False
        if self.include_tools and not any(
            fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.include_tools
        ):
            return False
        return not any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.exclude_tools)

    def denies(self, tool_name: str) -> bool:
        """Whether the server's ``policy`` denies ``tool_name``."""
        return bool(self.policy) and matching(self.policy, tool_name) == "deny"

    @property
    def identity(self) -> str:
        """What the server is, as a digest: its transport, command, args, cwd, env, URL and
        headers as the config writes them (``identity_parts``). An approval holds the
        identity it was given for (a repointed entry asks again: other args, even one split
        in two, another cwd or env, another URL or header); a digest, for they may hold a
        path."""
        import hashlib

        written: list[Any] = [self.transport, self.identity_parts]
        if self.transport == "local":  # a tool file: its path (its secrets are no program)
            written = [self.transport, self.command or self.target]
        elif not self.identity_parts:  # a config built in code
            written = [self.transport, self.url or self.command or self.target, *self.args]
            if self.cwd is not None and self.transport == "stdio":
                written.append(str(self.cwd))
            written += [sorted(self.env.items()), sorted(self.headers.items())]
        return hashlib.sha256(json.dumps(written).encode()).hexdigest()[:32]

    def timeout_for(self, tool_name: str) -> float:
        """Seconds a call of ``tool_name`` may take (``toolTimeouts``, else ``timeout``)."""
        if not self.tool_timeouts:
            return self.timeout
        return timeout_for(self.tool_timeouts, tool_name, self.timeout)

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never appear in logs, status or errors: header values, a local
        tool's ``secrets``, env entries named or shaped like credentials, secrets written
        inside a URL, and what ``${VAR}`` brought in from a variable named so.

        Not every env value: a path or a mode is no secret, and hiding it would hide what
        a person approves (``MEMORY_FILE_PATH`` would mask every path sharing its start)."""
        env = (
            self.env.values()
            if self.transport == "local"  # its `secrets` section: secrets by declaration
            else [value for name, value in self.env.items() if secret_setting(name, value)]
        )
        written = [self.url or "", *self.args, *self.env.values(), *self.headers.values()]
        values = (
            *env,
            *self.headers.values(),
            *self.expanded,
            *(secret for value in written for secret in embedded_secrets(value)),
            self.oauth.client_secret or "",
        )
        return tuple(dict.fromkeys(value for value in values if value))

    def summary(self) -> dict[str, Any]:
        """A description safe to print: the target as written (``${VAR}`` unexpanded), no env
        values, no header values."""
        return {
            "name": self.name,
            "transport": self.transport,
            "target": self.target,
            "description": self.description,
            "disabled": self.disabled,
            "source": str(self.source) if self.source else "",
        }


@dataclass(frozen=True)
class SearchConfig:
    """The ``search`` section: defaults for the gateway's --search-* options."""

    alpha: float = 0.5
    threshold: float = 0.3
    model: str | None = None
    device: str = "cpu"
    cache: bool = True
    semantic: bool = True


@dataclass(frozen=True)
class RunsConfig:
    """The ``runs`` section: how much of the run log is kept."""

    keep: int = 1000
    max_megabytes: float = 50.0


@dataclass(frozen=True)
class Config:
    """The whole configuration; ``path`` is None when no file exists."""

    path: Path | None
    project_dir: Path
    servers: tuple[ServerConfig, ...] = ()
    search: SearchConfig = field(default_factory=SearchConfig)
    asking: Asking = "destructive"  # policy.ask: which tools no rule names ask first
    runs: RunsConfig = field(default_factory=RunsConfig)
    infer_results: bool = True  # types.inferResults: result types learned from real calls
    packages: tuple[str, ...] = ()  # "npm:csv-parse@^5": what scripts may import (offline)
    # `import`: what the other clients' configs made toolscript skip, and every file of
    # theirs it reads (present or not: the gateway watches them as it watches this file)
    import_warnings: tuple[str, ...] = ()
    # what this file says that toolscript ignores (a key of another kind of server), warned
    warnings: tuple[str, ...] = ()
    import_errors: tuple[str, ...] = ()  # imported files that could not be read (warned too)
    # tool files of ``localTools.dir`` not loaded (named like an MCP server, ...), with why;
    # in ``warnings`` too: the rest of the project serves
    left_out: tuple[str, ...] = ()
    imported_files: tuple[Path, ...] = ()
    # ``localTools.dir`` resolved: the gateway watches it for tool files added or removed
    local_tools_dir: Path | None = None
    # the bytes of the imported files as they were read (None: absent), for trust to judge
    imported_contents: Mapping[Path, bytes | None] = field(
        default_factory=lambda: MappingProxyType({})
    )

    def decision(self, server: ServerConfig, tool: str, annotations: Any) -> Decision:
        """``allow``, ``ask`` or ``deny`` for a call of ``tool`` on ``server``."""
        hints = annotations if isinstance(annotations, Mapping) else None
        return decide(server.policy, self.asking, tool, hints)

    @property
    def config_file(self) -> Path:
        """The file it was read from, or the project's that would be (no file: zero
        servers): what a gateway names as the config it serves."""
        return self.path or self.project_dir / CONFIG_FILENAME

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every server's secret values (what no log may hold)."""
        return tuple(dict.fromkeys(value for s in self.servers for value in s.secrets))

    def cache_dir(self, explicit: str | os.PathLike[str] | None = None) -> Path:
        """``--cache-dir`` / ``TOOLSCRIPT_CACHE_DIR``, else ``.toolscript/`` beside the file."""
        return project_cache_dir(self.project_dir, explicit)

    @property
    def enabled_servers(self) -> tuple[ServerConfig, ...]:
        return tuple(server for server in self.servers if not server.disabled)

    def server(self, name: str) -> ServerConfig:
        """The server called ``name``; raises ServerNotFoundError with close names."""
        for server in self.servers:
            if server.name == name:
                return server
        names = [server.name for server in self.servers]
        raise ServerNotFoundError(
            f"server not found: {name!r}"
            + (f" (configured: {', '.join(names)})" if names else " (zero servers configured)"),
            suggestions=difflib.get_close_matches(name, names, n=3, cutoff=0.5),
        )


def config_schema() -> dict[str, Any]:
    """The JSON Schema of ``.toolscript.json`` shipped with the package."""
    text = resources.files("toolscript.schemas").joinpath("toolscript.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def load_config(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    require_trust: bool = False,
) -> Config:
    """Find, parse, expand and validate the configuration.

    A missing default file means zero servers; a missing explicit file is an error. With
    ``require_trust`` (whatever will start its servers or connect to them) a project's file
    the user has not trusted raises UntrustedConfigError before anything of it is read.
    """
    path = find_config_path(explicit, cwd)
    content = _refuse_untrusted(path) if require_trust else None
    if not path.exists():
        if explicit:
            raise ConfigError(
                f"{path}: config file not found",
                hint="check --config / TOOLSCRIPT_CONFIG, or create the file",
            )
        return Config(path=None, project_dir=path.parent)
    if content is None:
        content = read_config_file(path)
    loaded = parse_config(
        config_text(content, path), path, os.environ if environ is None else environ
    )
    if require_trust:  # an imported file that changed while it was read is judged again
        from toolscript.store.trust import require_trust as refuse_untrusted

        refuse_untrusted(path, content, loaded.imported_contents)
    return loaded


def read_config_file(path: Path) -> bytes:
    """The bytes of the config file ``path`` (never a FIFO's or a device's), else ConfigError."""
    try:
        return read_regular_file(path, MAX_CONFIG_BYTES)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror or exc}") from exc


def config_text(content: bytes, path: Path) -> str:
    """``content`` (the bytes of ``path``) as text, else ConfigError."""
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc}") from exc


def _refuse_untrusted(path: Path) -> bytes | None:
    """The config's bytes, judged trusted (what is parsed is what was judged: a file
    swapped for another between the two reads, and back, started the other one); None
    when there is no file to read. Raise UntrustedConfigError when ``path`` needs the
    user's trust; a file that is empty or not JSON is said to be so instead
    (``check_syntax``: its syntax is read, nothing else of it), for trust would start
    nothing of it."""
    from toolscript.store.trust import require_trust

    try:
        content = read_regular_file(path, MAX_CONFIG_BYTES) if path.is_file() else None
    except OSError:
        content = None  # judged (refused) as the file it cannot read
    try:
        require_trust(path, content)
    except ConfigError as refused:
        try:
            text = content.decode("utf-8") if content is not None else None
        except UnicodeDecodeError:
            text = None
        if text is None:
            raise refused from None
        check_syntax(text, path)
        raise
    return content


def parse_config(text: str, path: Path, environ: Mapping[str, str]) -> Config:
    """Build a Config from the text of ``path``."""
    try:
        return _parse_config(text, path, environ)
    except RecursionError:  # [[[[...]]]] thousands deep: no traceback
        line, col = deepest_at(text)
        raise ConfigError(
            f"{path}:{line}:{col}: nested too deeply to read", hint="fix the file"
        ) from None


def check_syntax(text: str, path: Path) -> None:
    """Raise ConfigError when ``text`` is empty or not JSON, naming ``file:line:col``. Said
    before any question of trust: trusting a file that cannot be read starts nothing, and
    an edit that broke the file (a comma too many, a save half done) is what to fix."""
    _parsed(text, path)


def _parsed(text: str, path: Path) -> PositionedJson:
    if not text.strip():
        # Never zero servers: an editor's save passes through an empty file (truncate, write).
        raise ConfigError(
            f"{path}: the config file is empty",
            hint="write {} for a project with no servers, or delete the file",
        )
    try:
        return parse_with_positions(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}:{json_syntax_error(exc)}",
            hint=_import_instead(path) or "fix the JSON syntax at that position",
        ) from exc


def _client_of(path: Path) -> str | None:
    """The other client (its name in ``import``) whose own file ``path`` is, by where such a
    file lives: given as ``--config``, it holds that client's settings, not toolscript's."""
    folder, name = path.parent.name.lower(), path.name.lower()
    if name == "claude_desktop_config.json":
        return "claude-desktop"
    if name in (".claude.json", ".mcp.json"):
        return "claude-code"
    if name == "config.toml" and folder == ".codex":  # `import` reads the user's only
        codex_home = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
        return "codex" if path.parent == Path(codex_home).expanduser() else None
    if name == "mcp_config.json" and folder == "windsurf":
        return "windsurf"
    return {
        (".vscode", "mcp.json"): "vscode",
        (".cursor", "mcp.json"): "cursor",
        (".gemini", "settings.json"): "gemini",
    }.get((folder, name))


def _import_instead(path: Path) -> str | None:
    client = _client_of(path)
    if client is None:
        return None
    named = CLIENT_TITLES[client]
    return (
        f"{path.name} is {named}'s own file, not a toolscript config: import its servers with "
        f'{{"import": ["{client}"]}} in your project\'s .toolscript.json (`toolscript init` '
        "writes it) and leave out --config"
    )


def _parse_config(text: str, path: Path, environ: Mapping[str, str]) -> Config:
    doc = _parsed(text, path)
    _validate(doc, path)
    _refuse_nul_folders(doc, path)
    ignored = _keys_of_another_transport(doc, path)
    substituted: list[tuple[JsonPath, str, str]] = []
    # A server's entry naming a variable that is not set keeps that server from starting,
    # not the project: the rest serves (as Claude Code treats its servers); a local tool
    # file's entry (``localTools.files.NAME``) keeps that file out alike. Elsewhere in the
    # file (search, localTools.dir, ...) such a variable is an error.
    rest = {key: item for key, item in doc.value.items() if key != "mcpServers"}
    local_files = (rest.get("localTools") or {}).get("files") or {}
    if local_files:
        rest["localTools"] = {k: v for k, v in rest["localTools"].items() if k != "files"}
    expanded = _expand(rest, (), doc, path, environ, substituted)
    local_unset: dict[str, list[tuple[JsonPath, str]]] = {name: [] for name in local_files}
    if local_files:
        expanded["localTools"]["files"] = {
            name: _expand(
                entry,
                ("localTools", "files", name),
                doc,
                path,
                environ,
                substituted,
                local_unset[name],
            )
            for name, entry in local_files.items()
        }
    unset: dict[str, list[tuple[JsonPath, str]]] = {}
    if "mcpServers" in doc.value:
        entries = {}
        for name, entry in (doc.value["mcpServers"] or {}).items():
            unset[name] = []
            at = ("mcpServers", name)
            entries[name] = _expand(entry, at, doc, path, environ, substituted, unset[name])
        expanded["mcpServers"] = entries

    def from_environment(*prefix: str) -> tuple[str, ...]:
        """The secret values ${VAR} put under ``prefix``: a variable named like a credential,
        or a value shaped like one (``${HOME}`` in args is no secret)."""
        return tuple(
            value
            for at, name, value in substituted
            if at[: len(prefix)] == prefix and secret_setting(name, value)
        )

    written = doc.value.get("mcpServers") or {}
    servers = tuple(
        replace(
            _server(name, raw, path.parent, from_environment("mcpServers", name), written[name]),
            source=path,
            unset=tuple((variable, format_path(at[2:])) for at, variable in unset[name]),
        )
        for name, raw in (expanded.get("mcpServers") or {}).items()
    )
    not_started = [
        f"{path}:{':'.join(map(str, doc.line_col(unset[server.name][0][0])))}: "
        f"mcpServers.{server.name}: {server.unset_error()}"
        for server in servers
        if server.unset
    ]
    search = SearchConfig(**(expanded.get("search") or {}))
    found, left_out = _local_servers(
        expanded.get("localTools"), path, doc, {s.name for s in servers}
    )
    local = tuple(
        replace(
            server,
            expanded=from_environment("localTools", "files", server.name),
            # what of the user's environment the file is given (its secrets), as `trust` says
            variables=named_variables(local_files.get(server.name) or {}),
            unset=tuple(
                (variable, format_path(at[3:])) for at, variable in local_unset.get(server.name, ())
            ),
        )
        for server in found
    )
    not_started += [
        f"{path}:{':'.join(map(str, doc.line_col(local_unset[server.name][0][0])))}: "
        f"localTools.files.{server.name}: {server.unset_error()}"
        for server in local
        if server.unset
    ]
    imported, imports = _imported(
        expanded.get("import") or (), path.parent, environ, {s.name for s in servers + local}
    )
    runs = expanded.get("runs") or {}
    return Config(
        path=path,
        project_dir=path.parent,
        servers=servers + imported + local,
        import_warnings=imports.warnings,
        warnings=(*ignored, *not_started, *left_out, *_unencrypted(servers + imported)),
        left_out=left_out,
        import_errors=imports.broken,
        imported_files=imports.watched,
        local_tools_dir=_local_tools_dir(expanded.get("localTools"), path),
        imported_contents=MappingProxyType(dict(imports.contents)),
        search=search,
        asking=(expanded.get("policy") or {}).get("ask", "destructive"),
        infer_results=bool((expanded.get("types") or {}).get("inferResults", True)),
        runs=RunsConfig(
            keep=int(runs.get("keep", RunsConfig.keep)),
            max_megabytes=float(runs.get("maxMegabytes", RunsConfig.max_megabytes)),
        ),
        packages=_packages(expanded.get("packages") or [], path, doc),
    )


def _packages(declared: list[str], path: Path, doc: PositionedJson) -> tuple[str, ...]:
    """The declared packages; two of one name would be one import name for two packages."""
    from toolscript.store.packages import package_name

    seen: dict[str, str] = {}
    for index, specifier in enumerate(declared):
        name = package_name(specifier)
        if specifier.startswith("jsr:"):
            line, col = doc.line_col(("packages", index))
            raise ConfigError(
                f"{path}:{line}:{col}: packages[{index}]: jsr: packages are not offered yet",
                hint="declare an npm package instead (npm:name@range)",
            )
        if name in seen:
            line, col = doc.line_col(("packages", index))
            raise ConfigError(
                f"{path}:{line}:{col}: packages[{index}]: {specifier} is the package "
                f"{seen[name]} declares again",
                hint="declare each package once, with one version range",
            )
        seen[name] = specifier
    return tuple(declared)


def _imported(
    clients: Sequence[str], project_dir: Path, environ: Mapping[str, str], taken: set[str]
) -> tuple[tuple[ServerConfig, ...], Imports]:
    """The servers of the clients ``import`` names, but those ``.toolscript.json`` defines
    itself (its entries win)."""
    if not clients:
        return (), Imports()
    imports = read_imports(clients, project_dir, environ)
    servers = []
    for found in imports.servers:
        if found.name in taken:
            continue
        server = _server(
            found.name,
            found.entry,
            project_dir,
            tuple(value for name, value in found.substituted if secret_setting(name, value)),
        )
        servers.append(
            replace(
                server,
                target=found.target,
                source=found.source,
                # as the client's file writes it: its ${VAR} values are not digested
                identity_parts=_identity_parts(found.written, server),
                # what of the user's environment it is sent, as `trust` says it
                variables=found.variables,
            )
        )
    return tuple(servers), imports


def _local_tools_dir(section: Mapping[str, Any] | None, path: Path) -> Path | None:
    """The folder of the project's tool files (None: no ``localTools``)."""
    return (path.parent / section["dir"]).resolve() if section else None


def _local_servers(
    section: Mapping[str, Any] | None, path: Path, doc: PositionedJson, taken: set[str]
) -> tuple[tuple[ServerConfig, ...], tuple[str, ...]]:
    """One server per .py file of ``localTools.dir`` (its stem names the namespace), and
    why each file whose name cannot be a namespace is left out (only that file: an MCP
    server of its name serves, and so does the rest)."""
    folder = _local_tools_dir(section, path)
    if section is None or folder is None:
        return (), ()
    if not folder.is_dir():
        line, col = doc.line_col(("localTools", "dir"))
        raise ConfigError(
            f"{path}:{line}:{col}: localTools.dir: not a folder: {folder}",
            hint="create it, or point dir at the folder of your .py tool files",
        )
    files = section.get("files") or {}
    servers = []
    left_out = []
    for file in sorted(folder.glob("*.py")):
        name = file.stem
        if name.startswith("_"):
            continue
        if name in taken or "__" in name or name.endswith("_"):
            line, col = doc.line_col(("localTools", "dir"))
            reason = (
                f"has the name of the MCP server {name!r}"
                if name in taken
                else "contains '__'"
                if "__" in name
                else f"ends in '_' (its tool t would be server {name[:-1]!r} and tool '_t')"
            )
            left_out.append(
                f"{path}:{line}:{col}: localTools: {file.name} {reason}: its tools are not "
                "loaded; rename the file"
            )
            continue
        entry = files.get(name) or {}
        servers.append(
            ServerConfig(
                name=name,
                transport="local",
                command=str(file),
                target=str(file),
                env=MappingProxyType(dict(entry.get("secrets") or {})),
                description=entry.get("description", ""),
                timeout=float(section.get("timeout", DEFAULT_TIMEOUT)),
                disabled=bool(entry.get("disabled", False)),
                settings=MappingProxyType(dict(entry.get("config") or {})),
                idle_timeout=float(section.get("idleTimeout", DEFAULT_IDLE_TIMEOUT)),
                policy=MappingProxyType(dict(entry.get("policy") or {})),
                tool_timeouts=_timeouts(entry),
            )
        )
    return tuple(servers), tuple(left_out)


def _validate(doc: PositionedJson, path: Path) -> None:
    schema = resources.files("toolscript.schemas").joinpath("toolscript.schema.json").read_text()
    memo = _validated_memo(schema, doc.value)
    if memo is not None and memo.exists():
        return  # this very document passed this very schema before
    import jsonschema  # lazily: 100 ms that a config validated before does not need

    validator = jsonschema.Draft202012Validator(json.loads(schema))
    errors = sorted(
        validator.iter_errors(doc.value),
        key=lambda error: doc.value_offsets.get(tuple(error.absolute_path), 0),
    )
    if not errors:
        if memo is not None:
            with contextlib.suppress(OSError):
                memo.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                memo.touch()
        return
    messages = [_describe(error, doc, path) for error in errors]
    raise ConfigError(
        "\n".join(messages) if len(messages) > 1 else messages[0],
        hint=_import_instead(path) or f"the schema is {_schema_location()}",
    )


# The keys of one kind of server that another kind ignores: a token in a URL server's "env"
# never reached it, silently.
_STDIO_KEYS = ("command", "args", "env", "cwd")
_URL_KEYS = ("url", "headers", "oauth")


def _unencrypted(servers: Sequence[ServerConfig]) -> list[str]:
    """A warning for each server ``unencrypted`` finds sending credentials in the clear."""
    return [
        f"server '{server.name}' is sent {said}"
        for server in servers
        if not server.disabled and (said := unencrypted(server))
    ]


def unencrypted(server: ServerConfig) -> str | None:
    """What of its credentials an http or sse server is sent over plain ``http://`` to a
    host other than this machine (headers, a password in its URL or a query parameter named
    like one, an OAuth client secret), where anyone on the network between reads them;
    None when nothing is. Warned, not refused: a private network may be reached so on
    purpose."""
    if server.transport not in ("http", "sse") or not server.url:
        return None
    host = cleartext_host(server.url)
    if host is None:
        return None
    sent = [f"its headers ({', '.join(sorted(server.headers))})"] if server.headers else []
    if embedded_secrets(server.url):
        sent.append("the credentials in its URL")
    if server.oauth.client_secret:
        sent.append("its OAuth client secret")
    if not sent:
        return None
    return (
        f"{' and '.join(sent)} unencrypted: its URL is http://, not https://, and "
        f"{host} is not this machine"
    )


def cleartext_host(url: str) -> str | None:
    """The host a plain ``http://`` URL reaches when it is not this machine, else None."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() != "http" or this_machine(parts.hostname or ""):
        return None
    return parts.hostname or None


def this_machine(host: str) -> bool:
    """Whether ``host`` names this machine (``localhost``, 127.0.0.0/8, ``::1``, and
    ``0.0.0.0``, which a connection takes for this machine)."""
    import ipaddress

    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _keys_of_another_transport(doc: PositionedJson, path: Path) -> list[str]:
    """A warning for each key of a server entry that only another kind of server reads, at
    that key, saying where such a value goes (an empty one says nothing). Warned, not
    refused: other clients (Claude Code among them) ignore such a key, so a config copied
    from one keeps its servers."""
    warnings = []
    for name, entry in (doc.value.get("mcpServers") or {}).items():
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type") or ("stdio" if "command" in entry else "http")
        ignored = _URL_KEYS if kind == "stdio" else _STDIO_KEYS
        for key in (key for key in ignored if entry.get(key) not in (None, {}, [], "")):
            line, col = doc.line_col(("mcpServers", name, key), key=True)
            if kind == "stdio":
                said = f"{key!r} is for http and sse servers, and {name!r} is a stdio server"
                where = 'pass values to a stdio server in its "env", or remove the key'
            else:
                said = (
                    f"{key!r} is for stdio servers, and {name!r} is an {kind} server: "
                    "toolscript starts no program for it"
                )
                where = (
                    'send values to it in "headers" ("Authorization": "Bearer ${TOKEN}"), '
                    "or remove the key"
                )
            place = f"{path}:{line}:{col}: {format_path(('mcpServers', name, key))}"
            warnings.append(f"{place}: {said}; ignored ({where})")
    return warnings


def _refuse_nul_folders(doc: PositionedJson, path: Path) -> None:
    """A folder the loader resolves (a server's ``cwd``, ``localTools.dir``) may not hold a
    NUL (``\\u0000``), which no file system takes: an error at its place, not a crash."""
    value = doc.value
    servers = value.get("mcpServers") or {}
    places: list[JsonPath] = [("localTools", "dir"), *(("mcpServers", n, "cwd") for n in servers)]
    for at in places:
        found: Any = value
        for key in at:
            found = found.get(key) if isinstance(found, dict) else None
        if isinstance(found, str) and "\x00" in found:
            line, col = doc.line_col(at)
            raise ConfigError(
                f"{path}:{line}:{col}: {format_path(at)}: a folder's name cannot hold a NUL "
                "character (\\u0000)",
                hint="remove it from the name",
            )


def _validated_memo(schema: str, value: Any) -> Path | None:
    """The file whose presence says this document passed this schema (in the user's cache,
    named by the hash of both): a command reading an unchanged config skips jsonschema."""
    import hashlib

    key = hashlib.sha256((schema + "\0" + json.dumps(value, sort_keys=True)).encode()).hexdigest()
    try:
        return user_cache_dir() / "valid-configs" / key
    except (OSError, ToolscriptError):  # no cache to keep it in: validate every time
        return None


def _describe(error: ValidationError, doc: PositionedJson, path: Path) -> str:
    at: JsonPath = tuple(error.absolute_path)
    on_key = False
    validator = error.validator
    if validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        allowed = list(schema.get("properties", {}))
        extras = [key for key in error.instance if key not in allowed] or ["?"]
        # every unknown key, each at its place: a peer tool's file has several at once
        return "\n".join(
            _unknown_key(at, key, error.instance.get(key), allowed, doc, path) for key in extras
        )
    elif validator == "required":
        expected = f"missing required key: {error.message.split(' is a required')[0]}"
        expected = _missing_message(at, error, expected)
    elif validator == "anyOf" and "required" in json.dumps(error.validator_value):
        expected = "a server needs either 'command' (stdio) or 'url' (http, sse)"
    elif validator == "enum":
        choices = ", ".join(json.dumps(choice) for choice in error.validator_value)  # type: ignore[union-attr]
        expected = f"expected one of {choices}, got {json.dumps(error.instance)}"
        if at and at[-1] == "type":
            expected += _PEER_TYPES.get(str(error.instance).lower().replace("_", "-"), "")
    elif validator == "type":
        expected = f"expected {error.validator_value}, got {_json_type(error.instance)}"
        expected += _type_fix(at, error.validator_value, error.instance)
    elif validator == "pattern" and error.path and error.path[-1] == "url":
        expected = f"expected an http:// or https:// URL, got {json.dumps(error.instance)}"
    elif validator == "pattern" and error.path and error.path[0] == "packages":
        expected = (
            f'expected a package with a version range, like "npm:csv-parse@^5" or '
            f'"jsr:@std/path@^1", got {json.dumps(error.instance)}'
        )
    elif "propertyNames" in error.schema_path:
        expected = (
            f"invalid server name {json.dumps(error.instance)}: no '/', no '__' and no '_' at "
            "its end (a_ and tool b would be server a and tool _b)"
        )
        at, on_key = (*at, str(error.instance)), True
    else:
        expected = error.message
    line, col = doc.line_col(at, key=on_key)
    return f"{path}:{line}:{col}: {format_path(at)}: {expected}"


# Keys of other MCP tools' configs (mcporter, pctx, FastMCP, Gemini CLI, Windsurf, Codex,
# VS Code) met in a file written for them: what toolscript names the same thing. Keyed by
# where the key is: "server" in an entry of mcpServers, "top" at the file's top level.
_PEER_SERVER_KEYS: dict[str, str] = {
    "baseUrl": "mcporter's name: toolscript's is 'url'",
    "serverUrl": "Windsurf's name: toolscript's is 'url'",
    "httpUrl": "Gemini CLI's name for a streamable HTTP URL: toolscript's is 'url'",
    "transport": 'FastMCP\'s name: toolscript\'s is \'type\' ("stdio", "http" or "sse")',
    "allowedTools": "toolscript's is 'includeTools' (fnmatch patterns)",
    "allowed_tools": "toolscript's is 'includeTools' (fnmatch patterns)",
    "enabled_tools": "toolscript's is 'includeTools' (fnmatch patterns)",
    "blockedTools": "toolscript's is 'excludeTools' (fnmatch patterns)",
    "blocked_tools": "toolscript's is 'excludeTools' (fnmatch patterns)",
    "disabled_tools": "toolscript's is 'excludeTools' (fnmatch patterns)",
    "enabled": "toolscript's is 'disabled' (\"disabled\": true keeps the entry off)",
    "envFile": (
        "toolscript reads no env file: export its variables and name them in 'env' "
        '("TOKEN": "${TOKEN}")'
    ),
    "name": "a server's name is its key in mcpServers",
    "environment": "opencode's name: toolscript's is 'env'",
}
# Other tools' server types: what each is here.
_PEER_TYPES = {
    "streamable-http": ' (streamable HTTP is "http" here)',
    "streamablehttp": ' (streamable HTTP is "http" here)',
    "http-stream": ' (streamable HTTP is "http" here)',
    "streamable": ' (streamable HTTP is "http" here)',
    "local": ' (opencode\'s "local" is "stdio" here)',
    "remote": ' (opencode\'s "remote" is "http" here, or "sse")',
}


def _unknown_key(
    at: JsonPath, key: str, value: Any, allowed: list[str], doc: PositionedJson, path: Path
) -> str:
    """The error of one unknown key: the toolscript key a peer tool's key means, else the
    nearest allowed key, else the allowed keys."""
    place = (*at, key)
    line, col = doc.line_col(place, key=True)
    in_server = len(at) == 2 and at[0] == "mcpServers"
    peer = _PEER_SERVER_KEYS.get(key) if in_server else None
    if in_server and key == "auth":
        peer = (
            "an OAuth marker (mcporter's, FastMCP's): remove it; a server that asks for a "
            f"sign-in is signed in to with `toolscript auth {at[1]}`"
            if value == "oauth"
            else 'a token goes in "headers": {"Authorization": "Bearer ${TOKEN}"}'
        )
    if not at and key == "servers" and isinstance(value, list):
        peer = (
            "a list of named servers is pctx's shape: toolscript keys each server by its name "
            'in "mcpServers": {"mcpServers": {"NAME": {"command": ...} or {"url": ...}}}'
        )
    elif not at and key == "mcp" and isinstance(value, dict):
        peer = "opencode's key: toolscript's is 'mcpServers'"
    elif not at and key in ("name", "version", "disclosure", "logger", "telemetry"):
        peer = "a key of pctx's pctx.json that toolscript has no use for: remove it"
    if peer is None:
        close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        said = (
            f" (did you mean {close[0]!r}?)" if close else f"; allowed keys: {', '.join(allowed)}"
        )
    else:
        said = f" ({peer})"
    return f"{path}:{line}:{col}: {format_path(place)}: unknown key {key!r}{said}"


def _type_fix(at: JsonPath, wanted: Any, value: Any) -> str:
    """How to write ``value`` as the type the schema wants, where that is plain (other
    clients' configs have numbers in env, a command and its arguments in one array)."""
    field = at[-1] if at else ""
    if (
        field == "command"
        and isinstance(value, list)
        and value
        and all(isinstance(item, str) for item in value)
    ):
        return (
            f' (the program goes in "command", each argument in "args": '
            f'"command": {json.dumps(value[0])}, "args": {json.dumps(value[1:])})'
        )
    if field == "args" and isinstance(value, str):
        import shlex

        try:
            words = shlex.split(value)
        except ValueError:
            words = value.split()
        return f' (each argument its own string: "args": {json.dumps(words)})'
    if wanted == "array" and isinstance(value, str):
        return f" (a list: {json.dumps([value])})"
    if wanted == "string" and isinstance(value, bool | int | float):
        return f" (in quotes: {json.dumps(json.dumps(value))})"
    return ""


def _missing_message(at: JsonPath, error: ValidationError, default: str) -> str:
    instance = error.instance if isinstance(error.instance, dict) else {}
    kind = instance.get("type")
    if kind == "stdio":
        return "a stdio server needs 'command'"
    if kind in ("http", "sse"):
        return f"an {kind} server needs 'url'"
    return default


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", int: "integer", float: "number"}.get(
        type(value), type(value).__name__
    )


def _schema_location() -> str:
    return (
        'printed by `toolscript config schema` (save it and name it in "$schema" for editor help)'
    )


def _expand(
    value: Any,
    at: JsonPath,
    doc: PositionedJson,
    path: Path,
    environ: Mapping[str, str],
    substituted: list[tuple[JsonPath, str, str]],
    unset: list[tuple[JsonPath, str]] | None = None,
) -> Any:
    """``value`` with ``${VAR}`` expanded; each value taken from ``environ`` is noted with
    where it went and its variable, so that secrets can be kept out of logs. A server's
    ``description`` is only ever shown, so it is kept as written. A variable that is not
    set is an error, or with ``unset`` noted there with where it was (expanded as "")."""
    if isinstance(value, str) and _is_description(at):
        return value
    if isinstance(value, str):
        return _expand_string(value, at, doc, path, environ, substituted, unset)
    if isinstance(value, dict):
        return {
            key: _expand(item, (*at, key), doc, path, environ, substituted, unset)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [
            _expand(item, (*at, i), doc, path, environ, substituted, unset)
            for i, item in enumerate(value)
        ]
    return value


def _is_description(at: JsonPath) -> bool:
    return bool(at) and at[-1] == "description" and at[0] in ("mcpServers", "localTools")


def _expand_string(
    value: str,
    at: JsonPath,
    doc: PositionedJson,
    path: Path,
    environ: Mapping[str, str],
    substituted: list[tuple[JsonPath, str, str]],
    unset: list[tuple[JsonPath, str]] | None = None,
) -> str:
    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is None or (found == "" and default is not None):
            if default is None and unset is not None:
                unset.append((at, name))
                return ""
            if default is None:
                line, col = doc.line_col(at)
                raise ConfigError(
                    f"{path}:{line}:{col}: {format_path(at)}: environment variable "
                    f"{name} is not set",
                    hint=f"export {name}=..., or write ${{{name}:-default}} in the config",
                )
            return default
        substituted.append((at, name, found))
        return found

    return _VARIABLE.sub(substitute, value)


def _server(
    name: str,
    raw: Mapping[str, Any],
    base: Path,
    expanded: tuple[str, ...] = (),
    written: Mapping[str, Any] | None = None,
) -> ServerConfig:
    """One server entry (``raw``, expanded; ``written``, as in the file). A stdio server
    runs in the config's folder unless ``cwd`` says otherwise: its relative paths resolve
    against the folder the user trusted, wherever the gateway was started."""
    transport: Transport = raw.get("type") or ("stdio" if "command" in raw else "http")
    cwd = raw.get("cwd")
    written = raw if written is None else written
    target = (
        str(written.get("url") or "")
        if transport in ("http", "sse")
        else " ".join([str(written.get("command") or ""), *map(str, written.get("args", ()))])
    )
    folder = (base / cwd).resolve() if cwd else base
    server = ServerConfig(
        name=name,
        expanded=expanded,
        target=target,
        transport=transport,
        command=raw.get("command"),
        args=tuple(raw.get("args", ())),
        env=MappingProxyType(dict(raw.get("env", {}))),
        cwd=folder,
        url=raw.get("url"),
        headers=MappingProxyType(dict(raw.get("headers", {}))),
        description=raw.get("description", ""),
        timeout=float(raw.get("timeout", DEFAULT_TIMEOUT)),
        disabled=bool(raw.get("disabled", False)),
        include_tools=tuple(raw.get("includeTools", ())),
        exclude_tools=tuple(raw.get("excludeTools", ())),
        oauth=_oauth(raw.get("oauth") or {}),
        policy=MappingProxyType(dict(raw.get("policy") or {})),
        tool_timeouts=_timeouts(raw),
        variables=named_variables(written),
    )
    return replace(server, identity_parts=_identity_parts(written, server))


def _identity_parts(written: Mapping[str, Any], server: ServerConfig) -> str:
    """``ServerConfig.identity_parts`` of the entry ``written`` (as its file writes it)."""
    parts = {key: written.get(key) for key in ("command", "args", "url", "env", "headers")}
    parts["cwd"] = str(server.cwd) if server.transport == "stdio" else None
    return json.dumps(parts, sort_keys=True, default=str)


def named_variables(value: Any, where: str = "") -> tuple[tuple[str, str], ...]:
    """Each ``${VAR}`` written in ``value`` (a config entry as in the file), with the dotted
    path of the setting that holds it: ``(("GITHUB_TOKEN", "headers.Authorization"), ...)``."""
    if isinstance(value, str):
        return tuple((found[1], where or "value") for found in _VARIABLE.finditer(value))
    if isinstance(value, Mapping):
        return tuple(
            variable
            for key, item in value.items()
            if key != "description"  # shown, never expanded (``_is_description``)
            for variable in named_variables(item, f"{where}.{key}" if where else str(key))
        )
    if isinstance(value, list | tuple):
        return tuple(variable for item in value for variable in named_variables(item, where))
    return ()


def _timeouts(raw: Mapping[str, Any]) -> Mapping[str, float]:
    return MappingProxyType(
        {pattern: float(seconds) for pattern, seconds in (raw.get("toolTimeouts") or {}).items()}
    )


def _oauth(raw: Mapping[str, Any]) -> OAuthConfig:
    return OAuthConfig(
        client_id=raw.get("clientId"),
        client_secret=raw.get("clientSecret"),
        scopes=tuple(raw.get("scopes", ())),
        callback_port=int(raw.get("callbackPort", 0)),
    )
