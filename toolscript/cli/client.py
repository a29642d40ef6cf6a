"""The CLI's side of the gateway: find it, and ask it things over HTTP."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolscript.config import Config, find_config_path, load_config
from toolscript.errors import (
    NOT_A_GATEWAY_HINT,
    ConfigError,
    GatewayResponseError,
    GatewayUnreachableError,
    NotAGatewayError,
)
from toolscript.gateway.state import (
    check_serves,
    read_gateway_state,
    ready_gateway_state,
    say_start_wait,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "GatewayClient",
    "config_for_the_gateway",
    "config_on_disk",
    "enclosing_gateways",
    "enclosing_note",
    "find_gateway_url",
    "gateway_client",
    "last_listing_notes",
    "public_url",
]

URL_VARIABLE = "TOOLSCRIPT_GATEWAY_URL"
_START_HINT = "check `toolscript gateway status`, or start one with `toolscript gateway start`"


def find_gateway_url(config: Config, servers: Collection[str] | None = None) -> str | None:
    """``TOOLSCRIPT_GATEWAY_URL`` (once what answers there proves it holds its token:
    ``prove_gateway``), else the running gateway recorded for this project. One still
    starting is waited for: with ``servers`` (those the command asks for), only until they
    are tried; else until every server is."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url:
        from toolscript.execution.locate import prove_gateway

        prove_gateway(url.rstrip("/"))
        return url.rstrip("/")
    serve_early = told = None
    if servers is not None:
        from toolscript.codegen.naming import to_camel_case
        from toolscript.execution.locate import StartWait

        wait = StartWait(
            [to_camel_case(name) for name in servers], say_start_wait, "the command asks for"
        )
        serve_early, told = wait.serve_early, wait.told
    state = ready_gateway_state(
        config.cache_dir(), told=told or say_start_wait, serve_early=serve_early
    )
    check_serves(state, config.config_file)
    return str(state["url"]).rstrip("/") if state else None


def config_for_the_gateway(config: str | None) -> tuple[Config, bool]:
    """The project's config for a command the gateway answers (list-tools, search, get-types,
    a server's resources and prompts), and whether it was read: ``(config, True)``. When the
    file cannot be read (an edit broke it, a save half done) but a gateway runs for the
    project, ``(the project's folder alone, False)`` with a warning: that gateway serves the
    configuration it loaded before, as `exec` runs scripts through it, so it is asked."""
    try:
        return load_config(config), True
    except ConfigError as exc:
        folder = Config(path=None, project_dir=find_config_path(config).parent)
        url = find_gateway_url(folder)
        if url is None or not _listens(url):
            raise
        from toolscript.cli.output import write_shown

        hint = f" ({exc.hint})" if exc.hint else ""
        write_shown(
            f"warning: {exc.message}{hint}; the gateway answers from the configuration it "
            "loaded before, until the file is fixed\n",
            sys.stderr,
        )
        return folder, False


def config_on_disk(loaded: Config, *, read: bool = True) -> tuple[str, str | None]:
    """The config file as it is now, which a running gateway may not serve: ``trusted``,
    ``untrusted`` (an edit since `toolscript trust`, or a cloned project's: a gateway serves
    the config as it was when trusted, and starts nothing of it) or ``invalid`` (``read``
    False: it did not load, and a gateway serves the configuration it loaded before); with
    why and what to do when untrusted. What `list-servers`, `list-tools` and `gateway
    status` say in their ``config_on_disk`` field, and their note."""
    from toolscript.errors import UntrustedConfigError
    from toolscript.store.trust import require_trust

    if not read:
        return "invalid", None
    try:
        if loaded.path is not None:
            require_trust(loaded.path)
    except UntrustedConfigError as exc:
        return "untrusted", f"{exc.message}; {exc.hint}"
    return "trusted", None


def served_note(why: str) -> str:
    """The note of a command answered by a gateway while the config on disk is untrusted."""
    return f"note: the gateway serves the config as it was when trusted: {why}\n"


def enclosing_gateways(config: Config) -> list[Path]:
    """The configs of the projects in the folders above this one (a repository's, above its
    subfolder's own) whose gateway runs: commands here use the nearest config, not theirs."""
    from toolscript.plumbing.paths import project_cache_dir

    found: list[Path] = []
    folder = config.project_dir
    while config.path is not None and folder.parent != folder:
        outer = find_config_path(None, cwd=folder.parent)
        if not outer.is_file():
            break
        state = read_gateway_state(project_cache_dir(outer.parent))
        if state is not None and not state.get("starting"):
            found.append(outer)
        folder = outer.parent
    return found


def enclosing_note(enclosing: list[Path]) -> str:
    """The lines that name ``enclosing_gateways``, for a command that found none of its own."""
    return "".join(
        f"note: a gateway runs for {outer}, a project in a folder above (commands here use "
        f"the nearest config): `--config {outer}` reaches it\n"
        for outer in enclosing
    )


@contextmanager
def gateway_client(
    config: Config,
    cache: str | None = None,
    *,
    timeout: float = 30.0,
    servers: Collection[str] | None = None,
) -> Iterator[GatewayClient]:
    """A client of the project's gateway (or TOOLSCRIPT_GATEWAY_URL's); when none runs, of
    an ephemeral one started for this command and stopped after it, as `exec` does.
    ``servers``: those the command asks for, all a gateway still starting is waited for
    (``find_gateway_url``)."""
    url = find_gateway_url(config, servers)
    if url and not os.environ.get(URL_VARIABLE, "").strip() and not _listens(url):
        url = None  # the state file outlived its gateway (see ``_listens``)
    if url:
        with GatewayClient(url, timeout=timeout) as client:
            yield client
        return
    from toolscript.execution.lifeline import Lifeline
    from toolscript.execution.locate import gateway_for_run

    if config.path is not None:  # said before a note that one is started: none could be
        from toolscript.store.trust import require_trust

        require_trust(config.path)
    sys.stderr.write(
        "note: no gateway runs for this project: one is started for this command "
        "(`toolscript gateway start &` keeps one running)\n"
        + enclosing_note(enclosing_gateways(config))
    )
    sys.stderr.flush()
    path = str(config.path) if config.path else None
    with (
        Lifeline() as lifeline,
        gateway_for_run(
            path, str(config.cache_dir(cache)), on_start=lifeline.watch, search=True
        ) as found,
        GatewayClient(found[0], timeout=timeout) as client,
    ):
        client.ephemeral = True
        yield client


def last_listing_notes(
    client: GatewayClient, servers: Iterable[object], listed: str = "its tools above are"
) -> list[str]:
    """A note for each of ``servers`` that is not connected now: what was ``listed`` comes
    from its last listing, and a call of one fails until it connects."""
    health = client.get_json("/health").get("servers", {})
    notes = []
    for name in sorted({str(server) for server in servers if server}):
        status = health.get(name) or {}
        state = status.get("state")
        if state in (None, "connected", "disabled"):
            continue
        error = str(status.get("error") or "")
        why = f" ({error[:160]}{'…' if len(error) > 160 else ''})" if error else ""
        notes.append(
            f"note: {name} is {state}{why}: {listed} from its last listing, and a call of "
            "one fails until it connects; `toolscript gateway status` says more\n"
        )
    return notes


def _listens(url: str) -> bool:
    """Whether anything listens at a state file's URL. A gateway's file is taken for alive
    while its pid is, and after a reboot (the gateway gone, its file left in the cache)
    another program may have that pid: then the command starts a gateway for itself, as
    when no file is left, rather than fail on the dead address. A TCP connection alone: no
    HTTP exchange for the usual case of a gateway that answers."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), 5):
            return True
    except ConnectionRefusedError:
        return False
    except OSError:
        return True  # slow or refused otherwise: the command's own request says how


def public_url(url: str) -> str:
    """The URL with its secret token hidden, for messages."""
    return re.sub(r"^(https?://[^/]+)/.+$", r"\1/<token>", url)


class GatewayClient:
    """JSON over HTTP to one gateway; failures become toolscript errors."""

    def __init__(self, url: str | None, *, timeout: float = 30.0) -> None:
        if not url:
            raise GatewayUnreachableError(
                f"no gateway is running for this project and {URL_VARIABLE} is not set",
                hint="start one with `toolscript gateway start` (or let the Claude Code plugin do it)",
            )
        self.url = url.rstrip("/")
        self._timeout = timeout
        self._client: httpx.Client | None = None  # made for the first request beyond a GET
        self.ephemeral = False  # a gateway started for this one command (``gateway_client``)

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()

    @property
    def _http(self) -> httpx.Client:
        if self._client is None:
            import httpx  # lazily: 100 ms (its own CLI, rich) that a GET does not need

            # the gateway on this machine directly, whatever HTTP_PROXY says (a proxy
            # would be sent the URL, the token in it)
            direct: dict[str, None] = {
                "all://127.0.0.1": None,
                "all://localhost": None,
                "all://[::1]": None,
            }
            self._client = httpx.Client(timeout=self._timeout, mounts=direct)
        return self._client

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        import httpx

        try:
            response = self._http.request(method, self.url + path, **kwargs)
        except httpx.TransportError as exc:
            raise self._unreachable(type(exc).__name__) from exc
        if response.status_code >= 400:
            raise GatewayResponseError.from_response(
                response.status_code, response.content, self._address
            )
        return response

    def get_json(self, path: str, exact: bool = False, **params: Any) -> Any:
        """GET ``path`` with ``params`` and read its JSON (``for_terminal``, unless ``exact``:
        for ``--json``, which ``print_json`` makes safe itself): a plain HTTP/1.0 request over
        a socket for the usual http:// gateway (httpx and http.client cost a command that
        only asks the gateway something more than the asking)."""
        import json

        if not self.url.startswith("http://"):
            read = self.request("GET", path, params=params or None).json()
            return read if exact else for_terminal(read)
        status, body = self._get(path + ("?" + _query(params) if params else ""))
        if status >= 400:
            raise GatewayResponseError.from_response(status, body, self._address)
        try:
            read = json.loads(body)
        except ValueError as exc:  # a web page: another program took the address
            raise NotAGatewayError(
                f"what answers at {self._address} is not a toolscript gateway (HTTP {status}, "
                "and not a gateway's JSON): another program listens there",
                hint=NOT_A_GATEWAY_HINT,
            ) from exc
        return read if exact else for_terminal(read)

    def _get(self, target: str) -> tuple[int, bytes]:
        import socket
        from urllib.parse import quote, urlsplit

        parts = urlsplit(self.url)
        request = (
            f"GET {quote(parts.path + target, safe=_SAFE)} HTTP/1.0\r\n"
            f"Host: {parts.netloc}\r\nAccept: */*\r\nUser-Agent: toolscript\r\n\r\n"
        )
        connected = False
        try:
            with socket.create_connection(
                (parts.hostname or "127.0.0.1", parts.port or 80), self._timeout
            ) as sock:
                connected = True
                sock.sendall(request.encode())
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
        except TimeoutError as exc:
            raise self._unreachable("ReadTimeout" if connected else "ConnectTimeout") from exc
        except OSError as exc:
            raise self._unreachable("ReadError" if connected else "ConnectError") from exc
        head, _, body = answer.partition(b"\r\n\r\n")
        fields = head.split(b" ", 2)
        if not fields[0].startswith(b"HTTP/") or len(fields) < 2 or not fields[1].isdigit():
            raise self._unreachable("RemoteProtocolError")
        return int(fields[1]), body

    @property
    def _address(self) -> str:
        """The gateway's host and port, for messages (never its token)."""
        from urllib.parse import urlsplit

        return urlsplit(self.url).netloc

    def _unreachable(self, kind: str) -> GatewayUnreachableError:
        hint = _START_HINT
        if os.environ.get(URL_VARIABLE, "").strip().rstrip("/") == self.url:
            # a session's gateway that ended, say: the variable outlived it
            hint = (
                f"{URL_VARIABLE} names it (a session that ended?): unset {URL_VARIABLE} and "
                "commands use this project's gateway, or start one for themselves"
            )
        return GatewayUnreachableError(
            f"the gateway at {public_url(self.url)} does not answer ({kind})", hint=hint
        )


# What a path and query may hold as they are (the rest is percent-encoded, as httpx does).
_SAFE = "/:@!$&'()*+,;=-._~%?"


def for_terminal(value: Any) -> Any:
    """What a gateway answered, safe to print on a terminal: every string a server sent
    (names, descriptions, errors, its stderr) has its control characters shown as escapes,
    not obeyed (a title, the clipboard, a cleared screen). Piped output stays as it came."""
    if not (sys.stdout.isatty() or sys.stderr.isatty()):
        return value
    from toolscript.store.outputs import visible_controls

    def shown(item: Any) -> Any:
        if isinstance(item, str):
            return visible_controls(item)
        if isinstance(item, list):
            return [shown(part) for part in item]
        if isinstance(item, dict):
            return {shown(key): shown(part) for key, part in item.items()}
        return item

    return shown(value)


def _query(params: dict[str, Any]) -> str:
    """The query string of ``params``, their values written as httpx writes them."""
    from urllib.parse import urlencode

    def text(value: Any) -> str:
        if value is True or value is False:
            return "true" if value else "false"
        return "" if value is None else str(value)

    return urlencode({name: text(value) for name, value in params.items()})
