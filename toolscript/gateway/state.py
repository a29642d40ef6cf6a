"""The running gateway's state file: its URL (token included) and pid, for commands to find.

It lives in the user's own 0700 cache, keyed by the project's cache directory: never
inside the project, where a cloned repository could plant one that sends every tool
call elsewhere. The URL there (and in a Claude Code session's ``<id>.url``) carries the
gateway's own token; the agent's environment gets the narrower ``guard.agent_url`` of it,
and ``owner_url`` goes back from that to the file's for a person's commands.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from toolscript.errors import AlreadyServingError, ConfigError, GatewayUnreachableError
from toolscript.plumbing.paths import find_config_path, user_cache_dir
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.processes import command_line, pid_exists

__all__ = [
    "abandon_start",
    "all_gateway_states",
    "already_serving",
    "ask_to_serve_now",
    "check_serves",
    "claim_project",
    "gateway_state_file",
    "mark_starting",
    "owner_url",
    "read_gateway_state",
    "ready_gateway_state",
    "remove_gateway_state",
    "say_start_wait",
    "serve_now_asked",
    "session_gateways",
    "sessions_dir",
    "start_cache_dir",
    "start_options",
    "write_gateway_state",
    "write_start_waiting",
]

START_WAIT = 120.0  # seconds a command waits for a gateway that is still starting
SAY_START_WAIT = 1.5  # seconds of that wait after which the command says what it waits for
FORK_WAIT = 1.0  # seconds a command waits for a sibling job still forked to show its command

# The starting marks this process wrote, by project cache: why the file each replaced was stale.
_marks: dict[Path, str | None] = {}
_VALUED = {"--config": "config", "-c": "config", "--cache-dir": "cache"}
_PRIVATE = {"--ephemeral", "--no-state", "--help", "-h"}


def gateway_state_file(directory: Path) -> Path:
    """Where the gateway of the project whose cache is ``directory`` records its URL.

    In the user's own 0700 cache, keyed by the project: never inside the project, where a
    cloned repository could plant a state file that sends every tool call elsewhere.
    """
    key = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:24]
    return user_cache_dir() / "gateways" / f"{key}.json"


def write_gateway_state(directory: Path, state: dict[str, Any]) -> Path:
    """Write the state file readable by the user only (it holds the secret URL)."""
    return write_private(gateway_state_file(directory), json.dumps(state, indent=2))


def read_gateway_state(directory: Path) -> dict[str, Any] | None:
    """The state of a gateway whose process is still alive, else None."""
    return _alive_state(gateway_state_file(directory))


def _alive_state(path: Path) -> dict[str, Any] | None:
    """The state file ``path`` when its gateway's process is still alive, else None."""
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    if not state.get("starting") and not _loopback_url(state.get("url")):
        return None
    pid = state.get("pid")
    # A pid that exists may still be a zombie or another program by now: callers confirm
    # that a gateway answers at the URL before they use it.
    if not isinstance(pid, int) or not pid_exists(pid):
        return None
    return state


def all_gateway_states() -> list[dict[str, Any]]:
    """The state of every project's gateway of this user whose process is still alive (as
    ``read_gateway_state`` reads one): what `gateway stop --all` stops."""
    paths = sorted((user_cache_dir() / "gateways").glob("*.json"))
    return [state for state in map(_alive_state, paths) if state is not None]


def check_serves(state: Mapping[str, Any] | None, config_file: Path) -> None:
    """Raise ConfigError when the gateway ``state`` names serves another config than
    ``config_file``: two configs of one folder share its cache (and so its gateway), and a
    command given the second (``--config other.json``) used the first one's gateway, its
    servers and tools, or stopped it."""
    served = state.get("config") if state else None
    if not isinstance(served, str) or not served:
        return
    try:
        if Path(served) == config_file or os.path.samefile(served, config_file):
            return
    except OSError:  # one of them does not exist (a typo in --config)
        pass
    assert state is not None
    pid = state.get("pid")
    raise ConfigError(
        f"the gateway running in this folder (pid {pid}) serves {served}, not {config_file}: "
        "configs of one folder share its cache, so each gateway serves one of them",
        hint=f"use that config (`--config {shlex.quote(served)}`), or give this one a cache "
        "folder of its own: `toolscript --cache-dir .toolscript-NAME COMMAND ...`",
    )


def ready_gateway_state(
    directory: Path,
    wait: float = START_WAIT,
    *,
    siblings: bool = True,
    told: Callable[[int | None], object] | None = None,
    serve_early: Callable[[list[str]], bool] | None = None,
) -> dict[str, Any] | None:
    """The state of a running gateway, None when none runs.

    One that is still starting (its servers connecting) is waited for, up to ``wait``
    seconds, so `gateway start &` then a command just works; past that,
    GatewayUnreachableError says so. ``told`` is called once (with its pid) when that wait
    passes ``SAY_START_WAIT``: a command silent for as long as the slowest server takes
    looked hung. With ``siblings``, a `gateway start` for this project that the same shell
    started just before this command, and that has not yet written its mark, is waited for
    too: however loaded the machine, it is found.

    ``serve_early`` is given the servers a starting gateway still waits for, each time that
    list changes; when it answers True (the command needs none of them) the gateway is asked
    to serve now, without them (``ask_to_serve_now``), and ``told`` is not called.
    """
    began = time.monotonic()
    looked_at: list[str] | None = None
    deadline = began + wait
    state = read_gateway_state(directory)
    if state is None and siblings:
        state = _sibling_start(directory, deadline)
    if state is not None and state.get("starting") and not _its_writer_runs(state):
        state = None  # a start that never ended (killed, the machine rebooted)
    while state is not None and state.get("starting"):
        if time.monotonic() >= deadline:
            pid = state.get("pid")
            raise GatewayUnreachableError(
                f"this project's gateway (pid {pid}) is still starting after {wait:g} s",
                hint="its log (the stderr of `toolscript gateway start`) says what it waits "
                f"for; try again when it is ready, or stop it with `kill {pid}`",
            )
        waiting = state.get("waiting")
        if (
            serve_early is not None
            and isinstance(waiting, list)
            and all(isinstance(name, str) for name in waiting)
            and waiting != looked_at
        ):
            looked_at = waiting
            if serve_early(waiting):
                ask_to_serve_now(directory)
                serve_early = told = None
        waited = time.monotonic() - began
        # a command that can tell which servers it waits for says so once the mark names them
        knows = serve_early is None or looked_at is not None or waited >= 2 * SAY_START_WAIT
        if told is not None and knows and waited >= SAY_START_WAIT:
            pid = state.get("pid")
            told(pid if isinstance(pid, int) else None)
            told = None
        time.sleep(0.05)
        state = read_gateway_state(directory)
    return state


def say_start_wait(pid: int | None) -> None:
    """A command's line on stderr while this project's gateway is still starting."""
    import sys

    named = f" (pid {pid})" if pid else ""
    sys.stderr.write(
        f"toolscript: waiting for this project's gateway{named} to finish starting: it tries "
        "every server first, so the slowest sets how long (its log, the stderr of `toolscript "
        "gateway start`, names each as it connects)\n"
    )
    sys.stderr.flush()


def _its_writer_runs(state: dict[str, Any]) -> bool:
    """Whether the state's pid is still the process that wrote it (started by when the file
    says), not another program given that number since: a gateway killed, or the machine
    rebooted, leaves its file in the user's cache, and the cheap check of
    ``read_gateway_state`` takes any process with that pid for it."""
    from toolscript.plumbing.processes import started_by

    pid, started = state.get("pid"), state.get("started")
    if not isinstance(pid, int) or not isinstance(started, int | float):
        return True  # a file that does not say when: the cheap check stands
    return started_by(pid, float(started))


def _sibling_start(directory: Path, deadline: float) -> dict[str, Any] | None:
    """Wait for the mark of a sibling job starting this project's gateway, if there is one
    (a fork of the shell that has not yet run its program may be one: it is given
    ``FORK_WAIT`` seconds to show its command line)."""
    from toolscript.plumbing.processes import siblings

    forks_until = time.monotonic() + FORK_WAIT
    wanted = directory.resolve()
    while time.monotonic() < deadline:
        starting = forked = False
        for sibling in siblings(_names_gateway_start):
            if sibling.forked:
                forked = True
                continue
            options = start_options(_after_program(sibling.argv))
            if options is None or not sibling.cwd:
                continue
            environ = sibling.environ or os.environ
            if not _same_user_folders(environ):
                continue  # its state goes to another folder: never the mark this one reads
            if start_cache_dir(options, Path(sibling.cwd), environ) == wanted:
                starting = True
        state = read_gateway_state(directory)
        if state is not None or not (starting or (forked and time.monotonic() < forks_until)):
            return state
        time.sleep(0.02)
    return read_gateway_state(directory)


_STATE_PLACES = ("TOOLSCRIPT_HOME", "XDG_CACHE_HOME", "HOME")


def _same_user_folders(environ: Mapping[str, str]) -> bool:
    """Whether a process with ``environ`` keeps its gateway state where this one looks."""
    return all(environ.get(name, "") == os.environ.get(name, "") for name in _STATE_PLACES)


def _names_gateway_start(argv: Sequence[str]) -> bool:
    return start_options(_after_program(argv)) is not None


def _after_program(argv: Sequence[str]) -> list[str]:
    """The arguments after ``toolscript`` in a command line (``python -m toolscript``, the
    console script, ``uvx toolscript``); empty when it does not run toolscript."""
    for index, word in enumerate(argv):
        if Path(word).name == "toolscript":
            return list(argv[index + 1 :])
    return []


def start_options(args: Sequence[str]) -> dict[str, str] | None:
    """``config`` and ``cache`` (``--config``, ``--cache-dir``) of the arguments of a
    ``gateway start`` that will record its state for the project; None for any other
    command, for ``--help``, and for a gateway one process owns."""
    command: list[str] = []
    found: dict[str, str] = {}
    words = list(args)
    index = 0
    while index < len(words):
        name, equals, value = words[index].partition("=")
        if name in _VALUED:
            if not equals:
                if index + 1 >= len(words):
                    return None
                index += 1
                value = words[index]
            found[_VALUED[name]] = value
        elif name in _PRIVATE:
            return None
        elif not name.startswith("-") and len(command) < 2:
            command.append(name)
        index += 1
    return found if command == ["gateway", "start"] else None


def start_cache_dir(options: Mapping[str, str], cwd: Path, environ: Mapping[str, str]) -> Path:
    """The project cache a ``gateway start`` with ``options``, run in ``cwd`` with
    ``environ``, records its state for (as ``Config.cache_dir`` finds it)."""
    config = options.get("config") or environ.get("TOOLSCRIPT_CONFIG")
    project = (
        (cwd / Path(config).expanduser()).resolve().parent
        if config
        else find_config_path(None, cwd).parent
    )
    cache = options.get("cache") or environ.get("TOOLSCRIPT_CACHE_DIR")
    return (cwd / Path(cache).expanduser()).resolve() if cache else project / ".toolscript"


_claims: dict[Path, int] = {}  # project cache folder -> the descriptor of its held lock


def claim_project(directory: Path) -> bool:
    """Hold the project's gateway lock for the rest of this process's life: one serving
    gateway per project. The lock goes with the process however it ends (flock)."""
    key = directory.resolve()
    if key in _claims:
        return True
    import fcntl

    path = gateway_state_file(directory).with_suffix(".lock")
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            return False
        # The cache's prune removes an unused lock while holding it: the file locked must
        # still be the one at the path, else another process could lock a new one too.
        try:
            held = os.fstat(descriptor).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            held = False
        if held:
            break
        os.close(descriptor)
    _claims[key] = descriptor
    return True


def already_serving(directory: Path, wait: float = START_WAIT) -> AlreadyServingError:
    """The error for a second `gateway start` of a project: it names the one that serves,
    once that one is ready (a start still under way is waited for)."""
    try:
        state = ready_gateway_state(directory, wait, siblings=False)
    except GatewayUnreachableError as exc:
        return AlreadyServingError(exc.message, hint=exc.hint)
    url = str(state.get("url") or "") if state else ""
    where = f" at {url.rsplit('/', 1)[0]}/<token>" if url else ""
    # (the process holding the project's lock, its state file unreadable or not yet written)
    named = f"pid {state.get('pid')}{where}" if state else "its state file names none"
    return AlreadyServingError(
        f"a gateway already serves this project ({named})",
        hint="use it (`toolscript gateway status`), or stop it first (`toolscript gateway "
        "stop`, or Ctrl+C where it runs); `--no-state` starts a private one beside it",
    )


def mark_starting(directory: Path) -> str | None:
    """Record at once that this process starts the project's gateway, so commands run right
    after `gateway start &` wait for it rather than find none. Returns the line to log of a
    state file found there (None: none was, or it was this process's): this process now
    holds the project's lock, which every gateway recording its state holds while it runs,
    so the file is stale, unless it names a `gateway start` still running without the lock
    (the user's cache, lock included, deleted under it). Marking the same project again only
    returns that; marking another drops the first mark."""
    key = directory.resolve()
    if key in _marks:
        return _marks[key]
    if not claim_project(directory):
        return None  # another process serves (or starts) this project: its mark stands
    for earlier in list(_marks):  # a process starts one gateway: a mark of another project goes
        abandon_start(earlier)
    stale = _stale_state(directory)
    serve_now_asked(directory)  # an ask of an earlier start is not this one's
    write_gateway_state(directory, {"pid": os.getpid(), "starting": True, "started": time.time()})
    _marks[key] = stale
    return stale


def write_start_waiting(directory: Path, waiting: Sequence[str]) -> None:
    """Add to this process's starting mark the servers its first connections still wait
    for (``waiting``): a command that needs none of them asks it to serve now
    (``ask_to_serve_now``) rather than wait for the slowest. Nothing when this process
    wrote no mark of ``directory`` (the MCP face's own gateway, an ephemeral one)."""
    if directory.resolve() not in _marks:
        return
    state = read_gateway_state(directory)
    if state is None or not state.get("starting") or state.get("pid") != os.getpid():
        return
    write_gateway_state(directory, {**state, "waiting": list(waiting)})


def _serve_now_file(directory: Path) -> Path:
    return gateway_state_file(directory).with_suffix(".serve-now")


def ask_to_serve_now(directory: Path) -> None:
    """Ask the project's gateway, still waiting for its slowest servers to connect, to serve
    without them now (they join when connected, as after its ready wait)."""
    write_private(_serve_now_file(directory), str(os.getpid()))


def serve_now_asked(directory: Path) -> bool:
    """Whether a command asked the gateway starting for ``directory`` to serve now (the ask
    is taken: its file removed)."""
    try:
        _serve_now_file(directory).unlink()
    except OSError:
        return False
    return True


def _stale_state(directory: Path) -> str | None:
    """What to say of the project's state file (the caller holds the project's lock): why it
    is stale, or the gateway it names that runs without the lock; None when there is no
    file, or it is this process's."""
    path = gateway_state_file(directory)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        reason = f"{path} cannot be read: {exc.strerror or exc}"
        return f"replacing the project's stale gateway state file: {reason}"
    try:
        state = json.loads(text)
    except (ValueError, RecursionError):
        reason = f"{path} is not JSON ({len(text)} bytes, truncated?)"
        return f"replacing the project's stale gateway state file: {reason}"
    pid = state.get("pid") if isinstance(state, dict) else None
    if not isinstance(pid, int) or isinstance(pid, bool):
        return f"replacing the project's stale gateway state file: {path} names no process"
    if pid == os.getpid():
        return None
    if not pid_exists(pid):
        reason = f"pid {pid}, which it names, no longer runs"
    elif _names_gateway_start(command_line(pid)):
        return (
            f"another gateway (pid {pid}) runs without this project's lock (the user's cache "
            f"deleted under it?) and may serve this project too; stop one (`kill {pid}`)"
        )
    else:
        reason = f"pid {pid}, which it names, is no gateway (it does not hold the project's lock)"
    return f"replacing the project's stale gateway state file: {reason}"


def abandon_start(directory: Path | None = None) -> None:
    """A start that ended (or failed before serving): its mark goes (every mark of this
    process without ``directory``); a stale file it replaced is not put back."""
    for key in list(_marks) if directory is None else [directory.resolve()]:
        if key not in _marks:
            continue
        del _marks[key]
        remove_gateway_state(key, os.getpid())
        serve_now_asked(key)  # an ask that came as it served: no later start's


def remove_gateway_state(directory: Path, pid: int) -> None:
    """Remove the state file if it is still the one this process wrote."""
    path = gateway_state_file(directory)
    try:
        if json.loads(path.read_text()).get("pid") == pid:
            path.unlink()
    except (OSError, ValueError):
        pass


def _loopback_url(url: Any) -> bool:
    """Whether ``url`` is an http URL of this machine (what every gateway state holds)."""
    if not isinstance(url, str):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme == "http" and host in ("127.0.0.1", "::1", "localhost")


def sessions_dir() -> Path:
    """Where the Claude Code hooks keep each session's files (``<id>.url``: the owner URL)."""
    return user_cache_dir() / "sessions"


def session_gateways() -> list[tuple[int, str]]:
    """The pid and URL of every Claude Code session's gateway of this user that still runs
    (the plugin's hooks keep ``<id>.pid`` and ``<id>.url`` for each): private gateways no
    project's state file names, for ``gateway status`` to point at."""
    from toolscript.plumbing.processes import started_by

    found = []
    for pid_file in sorted(sessions_dir().glob("*.pid")):
        try:
            pid = int(pid_file.read_text().strip())
            url = pid_file.with_suffix(".url").read_text().strip()
            written = pid_file.stat().st_mtime
        except (OSError, ValueError):
            continue
        # a file left by a crash may name a process that took the number later
        if _loopback_url(url) and started_by(pid, written):
            found.append((pid, url.rstrip("/")))
    return found


def owner_url(url: str) -> str | None:
    """The gateway's own URL behind ``url``: ``url`` itself when it carries no agent's token,
    else the URL of this user's state or session file whose agent URL it is; None when no
    such file is readable here (the person's commands then act with the agent's powers)."""
    from toolscript.gateway.guard import agent_url, is_agent_url

    url = url.strip().rstrip("/")
    if not is_agent_url(url):
        return url
    for candidate in _owner_urls():
        if agent_url(candidate) == url:
            return candidate
    return None


def _owner_urls() -> list[str]:
    """Every loopback URL a state or session file of this user holds."""
    found: list[str] = []
    for path in sorted((user_cache_dir() / "gateways").glob("*.json")):
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and _loopback_url(state.get("url")):
            found.append(str(state["url"]).rstrip("/"))
    for path in sorted(sessions_dir().glob("*.url")):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if _loopback_url(text):
            found.append(text.rstrip("/"))
    return found
