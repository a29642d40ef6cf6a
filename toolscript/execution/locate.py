"""Find the gateway a toolscript should use (stdlib only: the exec path stays fast).

``TOOLSCRIPT_GATEWAY_URL`` wins, and must answer. Otherwise the project's
running gateway (its state file); otherwise an ephemeral gateway is started for
the run and stopped after it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from toolscript.errors import (
    NOT_A_GATEWAY,
    NOT_A_GATEWAY_HINT,
    ExecutionError,
    GatewayResponseError,
    GatewayTimeoutError,
    GatewayUnreachableError,
    ModuleChangedError,
    NotAGatewayError,
    as_kind,
)
from toolscript.gateway.state import check_serves, ready_gateway_state, say_start_wait
from toolscript.plumbing.paths import find_config_path, module_cache_file, project_cache_dir
from toolscript.store.outputs import ERROR_PREFIX, HINT_PREFIX, KIND_PREFIX
from toolscript.store.savedscripts import write_module

if TYPE_CHECKING:
    from toolscript.gateway.inprocess import InProcessGateway

__all__ = [
    "BUILD_WAIT_MESSAGE",
    "NO_GATEWAY_URL",
    "StartWait",
    "face_gateway_args",
    "face_gateway_in_process",
    "gateway_for_run",
    "gateway_request",
    "module_file",
    "module_hash",
    "note_unavailable_servers",
    "private_gateway_args",
    "prove_gateway",
    "running_gateway",
    "spawn_owned_gateway",
    "unavailable_servers",
    "uses_gateway",
    "wait_for_first_build",
]

# Where a script that calls no tool is pointed when no gateway runs: nothing listens on the
# discard port, so a script that reaches for a gateway anyway gets "connection refused".
NO_GATEWAY_URL = "http://127.0.0.1:9/no-gateway"
EPHEMERAL_START_WAIT = 120.0  # seconds for a gateway to try every server and print its URL
# A module's hash as gateways give it (``hashlib.sha256(text).hexdigest()[:16]``).
_MODULE_HASH = re.compile(r"[0-9a-f]{16}")
# Reads of the module that may find it rebuilt since its hash was asked (``current_module``).
MODULE_TRIES = 3

# A script needs the gateway when it names the module ("toolscript", in any quotes) or reads
# the gateway's URL itself.
# The tools, the gateway's URL, or a package (a bare or npm:/jsr: specifier: the module says
# which packages the project offers, and a run without it offers none).
_GATEWAY_USE = re.compile(
    r"""["'`]toolscript(?:/[^"'`]*)?["'`]|TOOLSCRIPT_GATEWAY_URL"""
    r"""|(?:\bfrom|\bimport)\s*\(?\s*["'](?!node:|https?:|data:|file:|blob:)[@\w]"""
)


_TOOLS_IMPORT = re.compile(r"""\bimport\s+(?:type\s+)?\{([^}]*)\}\s*from\s*["']toolscript["']""")
_TOOLS_WORD = re.compile(r"\btools\b")
_TOOLS_MEMBER = re.compile(
    r"""\btools\s*(?:\?\.|\.)\s*([A-Za-z_$][\w$]*)"""
    r"""|\btools\s*(?:\?\.)?\[\s*(["'])([A-Za-z_$][\w$]*)\2\s*\]"""
)
_OPAQUE = re.compile(r"""\bscripts\b|["'`]toolscript/|TOOLSCRIPT_GATEWAY_URL|import\s*\*""")
# What the module offers that reaches servers by name, not as ``tools.<namespace>``: a script
# importing one needs every server (``resources.<server>``, ``describe("server", ...)``).
_BY_NAME = frozenset({"resources", "prompts", "search", "describe"})


def script_namespaces(code: str) -> list[str] | None:
    """The ``tools.<namespace>`` a script names, when every use of ``tools`` in it is one
    (``tools.time.x``, ``tools["time"]``); None when it may reach others (``tools`` passed
    around or renamed, saved scripts, the gateway's URL read, ``resources``, ``prompts``,
    ``search`` or ``describe`` imported): then it needs every server."""
    if _OPAQUE.search(code):
        return None
    for names in _TOOLS_IMPORT.findall(code):
        parts = [part.split() for part in names.split(",")]
        if any(words[1:2] == ["as"] for words in parts if words[:1] == ["tools"]):
            return None
        if any(_BY_NAME.intersection(words[:2]) for words in parts):  # "type x" or "x as y"
            return None
    rest = _TOOLS_IMPORT.sub("", code)
    members = [found[0] or found[2] for found in _TOOLS_MEMBER.findall(rest)]
    if len(_TOOLS_WORD.findall(rest)) != len(members):
        return None
    return sorted(set(members))


def uses_gateway(code: str) -> bool:
    """Whether a script imports the tools or a package (or reads the gateway URL): else it
    needs no gateway."""
    return _GATEWAY_USE.search(code) is not None


# What exec (on stderr) and the face (as MCP progress) say while the gateway's first build
# waits for another process's build of the project (a standalone `doit` holds its lock).
BUILD_WAIT_MESSAGE = (
    "waiting for a build of this project's tools under way in another process (a `doit`?); "
    "the script runs once it ends"
)
BUILDING_ROUTE = "/runtime/building"  # answered at once (gateway/runner.py's _AfterFirstBuild)
BUILDING_POLL = 0.2  # seconds between two looks at a first build under way


def wait_for_first_build(url: str, told: Callable[[], object]) -> None:
    """Return once the gateway at ``url`` has made its first build (its routes answer then),
    calling ``told`` once if that build waits for another process's build of the project (a
    `doit`); at most as long as the gateway itself waits for that build, then the routes'
    own answers (or their timeouts) tell. A gateway without the route, or nothing
    listening, returns at once: the next request says what is there."""
    deadline: float | None = None
    said = False
    while True:
        try:
            body = gateway_request(url, BUILDING_ROUTE, 10)
        except (GatewayTimeoutError, GatewayResponseError):
            return
        except GatewayUnreachableError as exc:
            if isinstance(exc, NotAGatewayError):
                raise
            return  # a gateway of before the route: HTTP 404 once built
        if body is None:
            return
        state = json.loads(body)
        if not isinstance(state, dict) or state.get("built", True):
            return
        if state.get("waits_for_another_build") and not said:
            said = True
            told()
        if deadline is None:
            from toolscript.pipeline.buildlock import BUILD_LOCK_WAIT

            deadline = time.monotonic() + BUILD_LOCK_WAIT + 60  # its wait, then its build
        if time.monotonic() >= deadline:
            return
        time.sleep(BUILDING_POLL)


def say_build_wait() -> None:
    """exec's line on stderr while its gateway's first build waits for a `doit`."""
    from toolscript.store.outputs import write_shown

    write_shown(f"toolscript: {BUILD_WAIT_MESSAGE}\n", sys.stderr)
    sys.stderr.flush()


# How long the hot path's one request for the module's hash may take before exec looks
# whether the gateway's first build waits for a `doit` (its routes wait for that build).
FIRST_LOOK = 2.0


def built_module_hash(url: str, told: Callable[[], object] | None) -> str | None:
    """``module_hash`` in one request when the gateway has built (every run asks it); when
    that request waits past ``FIRST_LOOK``, the gateway's first build is waited for as
    ``wait_for_first_build`` does (``told`` once if it waits for a `doit`; None: not looked
    at, the request's own timeout tells), then asked again."""
    if told is None:
        return module_hash(url)
    try:
        return module_hash(url, FIRST_LOOK)
    except GatewayTimeoutError:
        wait_for_first_build(url, told)
        return module_hash(url)


def prove_gateway(url: str, timeout: float = 30.0) -> bool:
    """Whether a program listens at ``url`` (False: nothing does), raising NotAGatewayError
    unless it proves it holds ``url``'s token (``guard.gateway_proof`` of a fresh nonce):
    asked before the token or a script is sent there. TOOLSCRIPT_GATEWAY_URL is asked as it
    is, and another local user's program on the port of a session's gateway that ended
    could answer as a gateway does (its JSON, a module) and be sent the agent's scripts."""
    from toolscript.gateway.guard import PROOF_PATH, gateway_proof

    parts = urlsplit(url)
    token = parts.path.rstrip("/").rpartition("/")[2]
    nonce = os.urandom(16).hex()
    root = f"{parts.scheme}://{parts.netloc}"
    try:
        body = gateway_request(root, f"{PROOF_PATH}?n={nonce}", timeout)
    except NotAGatewayError:
        raise
    except GatewayUnreachableError as exc:  # an error status: no gateway's proof
        raise _not_proven(url) from exc
    if body is None:
        return False
    import hmac

    expected = gateway_proof(token, parts.netloc, nonce)
    try:
        proofs = json.loads(body)["proof"]
        if any(hmac.compare_digest(str(proof), expected) for proof in proofs):
            return True
    except (ValueError, KeyError, TypeError):
        pass
    raise _not_proven(url)


def _not_proven(url: str) -> NotAGatewayError:
    return NotAGatewayError(
        f"what answers at {urlsplit(url).netloc} does not prove it holds the gateway's token: "
        "another program listens there (another user's, on the port of a gateway that ended?) "
        "or a gateway older than this toolscript; nothing was sent to it",
        hint=NOT_A_GATEWAY_HINT,
    )


def module_hash(url: str, timeout: float = 30.0) -> str | None:
    """The hash of the gateway's generated module, or None when nothing listens there."""
    body = gateway_request(url, "/runtime/hash", timeout)
    if body is None:
        return None
    try:
        return str(json.loads(body)["hash"])
    except (ValueError, KeyError, TypeError) as exc:  # a web page, a program's own JSON
        raise _not_a_gateway(url) from exc


def _not_a_gateway(url: str) -> NotAGatewayError:
    """What exec says of an answer no gateway gives, before it sent a script."""
    return NotAGatewayError(
        f"what answers at {urlsplit(url).netloc} is not a toolscript gateway (its answer is "
        "not a gateway's JSON): another program listens there; nothing was sent to it",
        hint=NOT_A_GATEWAY_HINT,
    )


def _servers_listed(url: str, body: bytes | None) -> list[dict[str, Any]]:
    """``GET /servers`` read: a list of objects, each with its name (else another program
    answers there)."""
    try:
        servers = json.loads(body) if body else []
    except ValueError:
        servers = None
    if not isinstance(servers, list) or not all(
        isinstance(server, dict) and isinstance(server.get("name"), str) for server in servers
    ):
        raise _not_a_gateway(url)
    return servers


def current_module(url: str, digest: str, timeout: float = 30.0) -> tuple[str, Path]:
    """``(hash, file)`` of the gateway's module: ``digest``'s, or where the gateway rebuilt
    it since (a server's tools changed, a tool's result type was learned) the new one's,
    asked again up to ``MODULE_TRIES`` times in all."""
    for _ in range(MODULE_TRIES - 1):
        try:
            return digest, module_file(url, digest, timeout)
        except ModuleChangedError:
            newer = module_hash(url, timeout)
            if newer is None:
                raise GatewayUnreachableError(
                    "the gateway stopped answering while its module was read"
                ) from None
            digest = newer
    return digest, module_file(url, digest, timeout)


def module_file(url: str, digest: str, timeout: float = 30.0) -> Path:
    """The gateway's module as a file of the user's cache, named by its content hash.

    The same tools give the same file whatever gateway (port, token) served them, so
    Deno's type-check cache holds across exec runs and gateway restarts.
    """
    if not _MODULE_HASH.fullmatch(digest):  # a file name: never a path out of the cache
        raise GatewayUnreachableError(
            f"the gateway answered {digest[:40]!r} as its module's hash",
            hint="check TOOLSCRIPT_GATEWAY_URL (token included) with `toolscript gateway status`",
        )
    path = module_cache_file(digest)
    if path.exists():
        with contextlib.suppress(OSError):  # used now: the cache's prune keeps it
            os.utime(path)  # (store/cacheprune.py; its gateway marks it only every 6 h)
        return path
    body = gateway_request(url, f"/runtime/tools.ts?_t={digest}", timeout)
    if body is None:
        raise GatewayUnreachableError("the gateway stopped answering while its module was read")
    import hashlib

    if hashlib.sha256(body).hexdigest()[:16] != digest:
        # Rebuilt since its hash was asked (a server's tools changed): kept under the old
        # hash, every later run and check of that hash would have read this one.
        raise ModuleChangedError(
            "the gateway's module changed while it was read", hint="run the script again"
        )
    scripts: dict[str, str] = {}
    if b'"toolscript/scripts/' in body:  # it offers saved scripts: their copies go beside it
        answer = gateway_request(url, f"/runtime/scripts.json?_t={digest}", timeout)
        listing = json.loads(answer) if answer else {}
        if listing.get("hash") != digest:
            raise ModuleChangedError(
                "the gateway's saved scripts changed while its module was read",
                hint="run the script again",
            )
        scripts = {str(k): str(v) for k, v in listing["scripts"].items()}
    try:
        return write_module(path, body.decode("utf-8"), scripts)
    except OSError as exc:  # a full disk, a small `ulimit -f` (EFBIG): said, not a traceback
        raise ExecutionError(
            f"could not write the gateway's module to {path}: {exc.strerror or exc}",
            hint="free disk space or raise the file size limit (`ulimit -f unlimited`), "
            "then run it again",
        ) from exc


def gateway_request(
    url: str, route: str, timeout: float, *, json_body: bytes | None = None, answers: bool = False
) -> bytes | None:
    """The body of GET ``url + route`` (POST of ``json_body`` when given), None when nothing
    listens there. An error status raises GatewayUnreachableError, or with ``answers``
    the gateway's own error (GatewayResponseError, its message and hint).

    A bare HTTP/1.0 request over a socket: http.client would cost this path 8 ms of imports.
    """
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + route
    if json_body is None:
        head = f"GET {path} HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n"
    else:
        head = (
            f"POST {path} HTTP/1.0\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(json_body)}\r\n\r\n"
        )
    request = head.encode() + (json_body or b"")
    address = (parts.hostname or "127.0.0.1", parts.port or 80)
    try:
        with socket.create_connection(address, timeout) as sock:
            sock.sendall(request)
            chunks = []  # joined once: a long answer (every tool's types) read in parts
            while chunk := sock.recv(65536):
                chunks.append(chunk)
            answer = b"".join(chunks)
    except TimeoutError as exc:
        raise GatewayTimeoutError(
            f"the gateway at {parts.netloc} did not answer within {timeout:g} s",
            hint="check `toolscript gateway status`",
        ) from exc
    except OSError:
        return None
    head_bytes, _, body = answer.partition(b"\r\n\r\n")
    fields = head_bytes.split(b" ", 2)
    status = fields[1].decode() if len(fields) > 1 else "?"
    succeeded = len(status) == 3 and status.startswith("2") and status.isdigit()  # 201: saved
    if not succeeded and answers and status.isdigit():
        raise GatewayResponseError.from_response(int(status), body, parts.netloc)
    if not succeeded:
        said = GatewayResponseError.from_response(int(status) if status.isdigit() else 0, body)
        if said.body.get("error") == NOT_A_GATEWAY:
            raise NotAGatewayError(
                f"what answers at {parts.netloc} is not a toolscript gateway (HTTP {status})",
                hint=NOT_A_GATEWAY_HINT,
            )
        raise GatewayUnreachableError(
            f"the gateway answered HTTP {status} ({said.message})",
            hint="check TOOLSCRIPT_GATEWAY_URL (token included) with `toolscript gateway status`",
        )
    return body


def running_gateway(
    config: str | None,
    cache: str | None,
    *,
    siblings: bool = True,
    told: Callable[[], object] | None = say_build_wait,
    told_start: Callable[[int | None], object] | None = say_start_wait,
    code: str | None = None,
) -> tuple[str, str] | None:
    """``(url, module hash)`` of TOOLSCRIPT_GATEWAY_URL's gateway (which must answer), else of
    the project's running gateway (one still starting is waited for, and with ``siblings``
    one that a `gateway start &` just before this command starts); None when neither
    answers. A gateway whose first build waits for a `doit` is waited for, ``told`` called
    once (``told`` None: not waited for, its routes' timeouts tell); one still starting,
    ``told_start`` called once (its pid) when that wait is long. With a script's ``code``,
    a gateway still starting is waited for only until the servers the script calls are
    tried (``StartWait``): it then serves without the slower others; "" (a resumed run's,
    read from the gateway later) waits for every server."""
    from_env = os.environ.get("TOOLSCRIPT_GATEWAY_URL", "").strip().rstrip("/")
    if from_env:
        found = built_module_hash(from_env, told) if prove_gateway(from_env) else None
        if found is None:
            raise GatewayUnreachableError(
                f"TOOLSCRIPT_GATEWAY_URL is set but no gateway answers at {urlsplit(from_env).netloc}",
                hint="check `toolscript gateway status`, or unset the variable to let toolscript start a gateway",
            )
        return from_env, found
    config_path = find_config_path(config)
    wait = StartWait(script_namespaces(code), told_start) if code else None
    state = ready_gateway_state(
        project_cache_dir(config_path.parent, cache),
        siblings=siblings,
        told=wait.told if wait is not None else told_start,
        serve_early=wait.serve_early if wait is not None else None,
    )
    check_serves(state, config_path)
    if state:
        try:
            found = built_module_hash(str(state["url"]), told)
        except NotAGatewayError:
            found = None  # the file outlived its gateway, whose port another program has now
        if found is not None:
            return str(state["url"]), found
    return None


class StartWait:
    """What a command waits for of its project's gateway still starting: only the servers it
    needs (``needs``, as ``tools`` namespaces: ``script_namespaces`` of a script; None:
    every server), not the slowest of the others, which join once connected. Says which it
    waits for, or that it does not; ``does`` says what it does with them ("the script
    calls")."""

    def __init__(
        self,
        needs: list[str] | None,
        told: Callable[[int | None], object] | None,
        does: str = "the script calls",
    ) -> None:
        self.needs = needs
        self._told = told
        self._does = does
        self.named: list[str] = []  # the servers waited for that the command needs

    def serve_early(self, waiting: list[str]) -> bool:
        """Whether the command needs none of the servers the gateway still waits for."""
        if self.needs is None:
            return False
        from toolscript.codegen.naming import to_camel_case

        self.named = [name for name in waiting if to_camel_case(name) in self.needs]
        if self.named:
            return False
        if waiting:
            from toolscript.store.outputs import write_shown

            write_shown(  # a server's name is the config's: shown, not obeyed
                f"toolscript: this project's gateway is still connecting {', '.join(waiting)}; "
                f"{self._does} none of them, so it serves now without them (they join "
                "when connected)\n",
                sys.stderr,
            )
            sys.stderr.flush()
        return True

    def told(self, pid: int | None) -> None:
        """The line of a long wait: the servers the command needs, when known."""
        if not self.named:
            if self._told is not None:
                self._told(pid)
            return
        from toolscript.store.outputs import write_shown

        named = f" (pid {pid})" if pid else ""
        write_shown(
            f"toolscript: waiting for this project's gateway{named} to connect "
            f"{', '.join(self.named)}, which {self._does} (its log, the stderr of "
            "`toolscript gateway start`, says when it connects)\n",
            sys.stderr,
        )
        sys.stderr.flush()


def private_gateway_args(
    kind: str,
    config: str | None,
    cache: str | None,
    *,
    search: bool = True,
    needs: list[str] | None = None,
) -> list[str]:
    """``gateway start`` arguments for a gateway one process owns (``kind``: ``--ephemeral``
    for one exec or command, ``--no-state`` for the MCP face), on a free port. Without
    ``search`` it builds no search index (a gateway for one script's calls); ``needs``: the
    ``tools`` namespaces that script names (``script_namespaces``), whose servers start now
    (the others at their first call)."""
    args = ["--port", "0", kind]
    if not search:
        args.append("--no-search-index")
    if needs is not None:
        args.append("--needs=" + ",".join(needs))
    if config:
        args += ["--config", config]
    if cache:
        args += ["--cache-dir", cache]
    return args


def face_gateway_args(config: str | None, cache: str | None) -> list[str]:
    """``gateway start`` arguments of the MCP face's own gateway: no state file, and the
    search model starts once no run is under way or at a first search (the face's first
    script should not share two cores with the model's start)."""
    return [*private_gateway_args("--no-state", config, cache), "--search-when-idle"]


def face_gateway_in_process() -> bool:
    """Whether the MCP face serves its own gateway in its own process (the default, or
    ``TOOLSCRIPT_FACE_GATEWAY=inprocess``), or starts it as a ``gateway start`` process
    (``TOOLSCRIPT_FACE_GATEWAY=process``); another value is warned of once."""
    value = os.environ.get("TOOLSCRIPT_FACE_GATEWAY", "").strip().lower()
    if value not in ("", "process", "inprocess"):
        _warn_face_gateway(value)
    return value != "process"


@functools.cache
def _warn_face_gateway(value: str) -> None:
    import logging

    logging.getLogger("toolscript.face").warning(
        "TOOLSCRIPT_FACE_GATEWAY=%s is neither 'process' nor 'inprocess': the face's gateway "
        "runs inside the face's process",
        value,
    )


def spawn_owned_gateway(
    config: str | None, cache: str | None
) -> InProcessGateway | subprocess.Popen[str] | None:
    """The MCP face's own gateway (no state file), begun first thing, before the face's
    imports, so its servers start meanwhile; None when a gateway runs (or is set) or the
    project is not trusted (the face then says why on its first call).

    By default a gateway served in a thread of the face (``gateway/inprocess.py``): its
    servers are spawned now, the gateway starts with ``start`` once the face imported;
    with ``TOOLSCRIPT_FACE_GATEWAY=process`` a ``gateway start`` process (``--no-state``)
    spawned now, whose URL ``launch.wait_for_url`` reads."""
    if os.environ.get("TOOLSCRIPT_GATEWAY_URL", "").strip():
        return None
    from toolscript.errors import ToolscriptError
    from toolscript.store.trust import require_trust

    try:
        if (
            running_gateway(config, cache, told=None, told_start=None) is not None
        ):  # (the face starts now)
            return None
        require_trust(find_config_path(config))
    except ToolscriptError:
        return None
    if face_gateway_in_process():
        from toolscript.gateway.inprocess import InProcessGateway, log_level_default

        log_level_default()
        gateway = InProcessGateway(config, cache)
        gateway.prepare()
        return gateway
    from toolscript.gateway.launch import gateway_command

    env = dict(os.environ)
    env.setdefault("TOOLSCRIPT_LOG_LEVEL", "WARNING")
    return subprocess.Popen(
        gateway_command(*face_gateway_args(config, cache)),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=sys.stderr,  # the gateway's log joins the face's (an MCP client's log)
        text=True,
    )


@contextmanager
def gateway_for_run(
    config: str | None,
    cache: str | None,
    *,
    needed: bool = True,
    on_start: Callable[..., None] | None = None,
    code: str = "",
    search: bool = False,
    found: list[str] | None = None,
) -> Iterator[tuple[str, str]]:
    """``(url, module hash)`` of a gateway that stays up for the run. With ``needed`` False
    (the script calls no tool) no gateway is started when none runs: NO_GATEWAY_URL.
    ``found`` gets ``"running"`` or ``"started"``: which gateway that is.

    A gateway started here has only what a run needs: no warm checker, no search model,
    and (without ``search``: a script's calls need none) no search index."""
    running = running_gateway(config, cache, siblings=needed, code=code)
    if running is not None:
        if found is not None:
            found.append("running")
        yield running
        return
    if not needed:
        yield NO_GATEWAY_URL, "none"
        return
    from toolscript.store.trust import require_trust

    require_trust(find_config_path(config))  # an untrusted project's config starts nothing
    if found is not None:
        found.append("started")
    with _ephemeral_gateway(config, cache, on_start, code, search) as url:
        digest = module_hash(url)
        if digest is None:
            raise ExecutionError("the ephemeral gateway stopped answering")
        yield url, digest


@contextmanager
def _ephemeral_gateway(
    config: str | None,
    cache: str | None,
    on_start: Callable[..., None] | None,
    code: str,
    search: bool,
) -> Iterator[str]:
    """A gateway of this run's own; its log stays out of what the agent reads, but for one
    line naming the servers the script uses that could not start."""
    from toolscript.gateway.launch import start_gateway

    # Only the servers the script names start with it (the others at a first call).
    needs = None if search else script_namespaces(code)
    args = private_gateway_args("--ephemeral", config, cache, search=search, needs=needs)
    env = dict(os.environ)
    env.setdefault("TOOLSCRIPT_LOG_LEVEL", "WARNING")
    errors: list[str] = []
    forwarding: list[threading.Thread] = []

    def spawned(process: subprocess.Popen[str]) -> None:
        if on_start is not None:
            on_start(process.pid, group=False)
        forward = threading.Thread(target=_collect, args=(process.stderr, errors), daemon=True)
        forward.start()
        forwarding.append(forward)

    gateway = start_gateway(*args, env=env, wait=EPHEMERAL_START_WAIT, on_spawn=spawned)
    try:
        if not gateway.url:
            gateway.stop(5)
            for forward in forwarding:
                forward.join(5)
            from toolscript.config import load_config

            load_config(config)  # a broken config: its one message, exit 2, as every command
            reason, hint, kind = _start_failure("".join(errors))
            failure = ExecutionError(
                "no gateway is running and an ephemeral one could not start"
                + (f": {reason}" if reason else ""),
                hint=hint or "run `toolscript gateway start` to see why",
            )
            raise as_kind(failure, kind) if kind else failure
        wait_for_first_build(gateway.url, say_build_wait)
        # This run's own gateway is gone after it: a started one shows why, and keeps it.
        note_unavailable_servers(
            gateway.url,
            code,
            "run `toolscript gateway start` to see why",
            # this gateway goes with the run: a server slow to start never joins it
            "`toolscript gateway start &` lets it finish and keeps it for the next runs",
        )
        yield gateway.url
    finally:
        gateway.stop(20)


def _start_failure(stderr: str) -> tuple[str, str, str]:
    """Why a gateway could not start, from its stderr: its error line, the hint after it
    and the kind after that (``toolscript: error: ...``, ``hint: ...``, ``kind: ...``),
    else its last line, no hint and no kind."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith(ERROR_PREFIX):
            after = [*lines[index + 1 : index + 3], "", ""]
            hint = after[0].removeprefix(HINT_PREFIX) if after[0].startswith(HINT_PREFIX) else ""
            said = after[1] if hint else after[0]
            kind = said.removeprefix(KIND_PREFIX) if said.startswith(KIND_PREFIX) else ""
            return lines[index].removeprefix(ERROR_PREFIX), hint, kind
    return (lines[-1] if lines else ""), "", ""


def _collect(stream: object, lines: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.append(line)


def _named_by(code: str, servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The servers of ``servers`` (``GET /servers``) the script's code names as
    ``tools.NAME``, but for those connected or disabled."""
    from toolscript.codegen.naming import to_camel_case

    named = []
    for server in servers:
        if server.get("state") in ("connected", "disabled"):
            continue
        namespace = re.escape(to_camel_case(server["name"]))
        if re.search(rf"""\btools\s*(?:\.\s*{namespace}\b|\[\s*["'`]{namespace}["'`])""", code):
            named.append(server)
    return named


def _still_connecting(server: dict[str, Any]) -> bool:
    return server.get("state") == "connecting" and not server.get("error")


CONNECTING_POLL = 0.2  # seconds between two looks at a server exec waits for


def wait_for_connecting_servers(
    url: str,
    code: str,
    say: Callable[[str], None] | None = None,
    given_up: Callable[[], bool] | None = None,
) -> str | None:
    """When the servers the script names that are not there yet are all still connecting
    (a slow first start, none failed), wait for them, at most the gateway's ready wait, with
    a line saying so (on stderr, or given to ``say``): their tools join the module once they
    are connected, and the script's type check would otherwise fail at once on them. A
    server that failed is not waited for (the run says so, as before). The module's hash
    once it offers them, else None; None at once when ``given_up`` says the run's asker
    left (the MCP face's client cancelled its request)."""
    named = _named_by(code, _servers_listed(url, gateway_request(url, "/servers", 10)))
    if not named or not all(_still_connecting(server) for server in named):
        return None
    health = gateway_request(url, "/health", 10)
    try:
        bound = float((json.loads(health) if health else {}).get("ready_wait", 10.0))
    except (ValueError, TypeError, AttributeError):
        raise _not_a_gateway(url) from None
    if bound <= 0:  # a gateway told to wait for no server (--ready-wait 0)
        return None
    names = ", ".join(str(server["name"]) for server in named)
    line = (
        f"waiting up to {bound:g} s for {names}, still connecting: the script calls its "
        "tools, which join the types when it is connected"
    )
    if say is not None:
        say(line)
    else:
        from toolscript.store.outputs import write_shown

        write_shown(f"toolscript: {line}\n", sys.stderr)
        sys.stderr.flush()
    from toolscript.codegen.module import module_namespaces
    from toolscript.codegen.naming import to_camel_case

    wanted = {server["name"] for server in named}
    namespaces = {to_camel_case(name) for name in wanted}
    looked_at = None  # the module hash whose namespaces were looked at last
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        time.sleep(CONNECTING_POLL)
        if given_up is not None and given_up():
            return None
        body = gateway_request(url, "/servers", 10)
        now = [s for s in (json.loads(body) if body else []) if s.get("name") in wanted]
        if any(not _still_connecting(s) and s.get("state") != "connected" for s in now):
            return None  # one failed: said once the run fails, as before
        if not all(s.get("state") == "connected" for s in now):
            continue
        digest = module_hash(url, 10)
        if digest is None:
            return None
        if digest != looked_at:  # connected: done once the module offers their tools
            looked_at, module = current_module(url, digest)
            if namespaces <= module_namespaces(module.read_text(encoding="utf-8")):
                return looked_at
    return None


def note_unavailable_servers(
    url: str,
    code: str,
    see_why: str = "`toolscript gateway status` shows why",
    see_connecting: str = "it joins when connected (`toolscript gateway status` says when)",
) -> None:
    """One line on stderr for servers the script names that the gateway could not start,
    said once a process (see ``unavailable_servers``)."""
    said = unavailable_servers(url, code, see_why, see_connecting)
    if said is not None and said not in _NOTED:  # said once a run, before it or after it failed
        _NOTED.add(said)
        from toolscript.store.outputs import write_shown

        # a server's error is what it sent: shown, not obeyed
        write_shown(f"toolscript: warning: {said}\n", sys.stderr)
        sys.stderr.flush()
    for note in unserved_notes(url):
        if note in _NOTED:
            continue
        _NOTED.add(note)
        from toolscript.store.outputs import write_shown

        write_shown(f"toolscript: note: {note}\n", sys.stderr)
        sys.stderr.flush()


def unserved_notes(url: str) -> list[str]:
    """Why the types a run was checked against may lack what the script names: the
    gateway serves the config as it was before its last edit (a `git pull` not trusted
    yet, an edit that does not load), or a changed tool list's build waits for another
    process's build of the cache (a `doit` by hand). Deno says only that a member of
    `tools` does not exist."""
    body = gateway_request(url, "/health", 10)
    health = json.loads(body) if body else {}
    if not isinstance(health, dict):
        return []
    notes = []
    error = (health.get("config") or {}).get("error")
    if error:
        notes.append(
            "the config's last edit is not served, so the gateway serves the previous one "
            f"(a server the edit adds is not in `tools`): {error}"
        )
    unbuilt = (health.get("types") or {}).get("unbuilt")
    if isinstance(unbuilt, str) and unbuilt:
        notes.append(f"the run was checked against the types served: {unbuilt}")
    return notes


def unavailable_servers(
    url: str,
    code: str,
    see_why: str = "`toolscript gateway status` shows why",
    see_connecting: str = "it joins when connected (`toolscript gateway status` says when)",
) -> str | None:
    """What to say of the servers the script names that the gateway could not start (None:
    there are none); ``see_why``: where the user reads why (the running gateway's status by
    default); ``see_connecting``: what to do when every one is only still connecting."""
    body = gateway_request(url, "/servers", 10)
    missing = []
    connecting = 0
    more_to_see = False  # a reason the line cannot give whole: then say where it is
    for server in _named_by(code, json.loads(body) if body else []):
        if _still_connecting(server):
            # no failure to see: a slow first start (npx or uvx downloading it)
            connecting += 1
            missing.append(f"{server['name']} (still connecting: a first start may download it)")
        else:
            error = str(server.get("error") or "")
            more_to_see = more_to_see or not _given_in_full(error, server.get("stderr"))
            missing.append(f"{server['name']} ({error or server.get('state')})")
    if not missing:
        return None
    if connecting == len(missing):
        see_why = see_connecting
    elif not more_to_see:
        see_why = ""  # every reason is in the line already
    then = f"; {see_why}" if see_why else ""
    return f"not available: {'; '.join(missing)}{then}"


def _given_in_full(error: str, stderr: object) -> bool:
    """Whether a server's ``error`` is the whole of why it is not there: not cut, and no
    line of its stderr that it does not quote already (status would show those too)."""
    lines = stderr if isinstance(stderr, list) else []
    unsaid = [line for line in lines if isinstance(line, str) and line.strip() not in error]
    return bool(error) and "… [cut: " not in error and not unsaid


_NOTED: set[str] = set()
