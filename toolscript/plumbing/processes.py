"""Process facts and teardown, the same on Linux and macOS: every one goes through here.

psutil answers what the kernel knows (children, zombies) on both systems, so nothing
in toolscript reads ``/proc``. It is imported only by the helpers that need it: the
``exec`` path asks ``pid_exists`` alone, which costs no import.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # asyncio costs the exec path's start-up; only its types are needed here
    import asyncio
    from collections.abc import Callable, Mapping

__all__ = [
    "GATE_OPEN",
    "LAUNCHERS",
    "SHELLS",
    "ProgramNotRunnable",
    "Sibling",
    "Tethered",
    "descendants",
    "first_ancestor_not_a_shell",
    "gated",
    "identity_alive",
    "memory_of",
    "missing_program_hint",
    "pid_exists",
    "process_alive",
    "process_identity",
    "program_on_path",
    "program_to_spawn",
    "read_identity",
    "reap_children",
    "resident_reader",
    "return_free_memory",
    "seconds_since_start",
    "siblings",
    "signal_quietly",
    "start_time",
    "started_by",
    "stop_process",
    "stop_process_async",
    "stop_tethered",
    "terminate_tree",
    "tether",
    "tethered",
    "untether",
    "watch_tethered",
    "when_gone",
]


def pid_exists(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie counts); the cheap check of a state file.
    A number no process id can be (read from a file's name or a state file) is none."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    return True


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    if not pid_exists(pid):
        return False
    import psutil

    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def process_identity(pid: int) -> str:
    """``pid:start time``: names one process, never a later one given the same pid."""
    import psutil

    try:
        return f"{pid}:{psutil.Process(pid).create_time():.2f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return f"{pid}:"


def read_identity(identity: str) -> tuple[int, float | None] | None:
    """The pid and start time a ``process_identity`` names (None for the start of one made
    when the system did not say: ``pid:``, or a pid alone); None when ``identity`` names no
    process that way (``--stop-with``'s, a run's client, a hook's owner are all read here)."""
    pid_text, _, started = identity.partition(":")
    if not _digits(pid_text) or int(pid_text) <= 0:
        return None
    if not started:
        return int(pid_text), None
    if not _digits(started.replace(".", "", 1)):
        return None
    return int(pid_text), float(started)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # (``isdigit`` alone takes "²", which int() refuses)


def identity_alive(identity: str) -> bool:
    """Whether the process ``process_identity`` named still runs (an empty name: no)."""
    named = read_identity(identity)
    if named is None or not process_alive(named[0]):
        return False
    return named[1] is None or process_identity(named[0]) == identity


def when_gone(identity: str, then: Callable[[], None], every: float = 2.0) -> None:
    """Call ``then`` once the process ``process_identity`` named has ended (or at once, if it
    has), looking every ``every`` seconds from a daemon thread.

    The name is matched once, now; from then on the process is followed as psutil knows it
    (by its start since boot where the system keeps one): on Linux a start time in seconds
    since the epoch moves with the system clock (an NTP step, a VM's or WSL's clock set
    again), and a gateway following it would stop while its owner still runs."""
    import psutil

    followed: psutil.Process | None = None
    named = read_identity(identity)
    if named is not None:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(named[0])
            # (a name without a start time, ``pid:``, is its number alone: identity_alive)
            if named[1] is None or process_identity(process.pid) == identity:
                followed = process

    def follow() -> None:
        while followed is not None and _still_runs(followed):
            time.sleep(every)
        then()

    threading.Thread(target=follow, name="follows its owner", daemon=True).start()


def _still_runs(process: Any) -> bool:
    """Whether ``process`` (a ``psutil.Process``) runs: not ended, not a zombie, its pid not
    given to another process since."""
    import psutil

    try:
        return bool(process.is_running() and process.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def started_by(pid: int, moment: float, slack: float = 2.0) -> bool:
    """Whether ``pid`` runs and started by ``moment`` (seconds since the epoch, give or take
    ``slack``): the process a pid file written at ``moment`` named, not a later one that
    was given the same number after it ended (a crash or a reboot left the file behind)."""
    import psutil

    try:
        process = psutil.Process(pid)
        return bool(
            process.status() != psutil.STATUS_ZOMBIE and process.create_time() <= moment + slack
        )
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def reap_children(grace: float = 0.5) -> None:
    """Before an exit that skips the interpreter's own clean-up: stop this process's children
    still running (TERM, then KILL after ``grace``) and reap every one, so none is left
    running or a zombie for an init that may never reap it."""
    import psutil

    children = psutil.Process().children()
    for child in children:
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE:
                child.terminate()
    _, alive = psutil.wait_procs(children, timeout=grace)  # waits on (so reaps) children
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(alive, timeout=grace)


def seconds_since_start() -> float:
    """How long ago this process started (0.0 when the system does not say)."""
    import psutil

    try:
        return max(0.0, time.time() - psutil.Process().create_time())
    except psutil.Error:
        return 0.0


def resident_reader(pid: int) -> Callable[[], int | None] | None:
    """A function giving ``pid``'s resident bytes at each call, for a watch that asks often
    (one handle, no lookup per call): None from it when the system would not say this time
    (macOS may refuse), ProcessLookupError once the process is gone. None when it is gone
    already."""
    import psutil

    try:
        process = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None

    def read() -> int | None:
        try:
            return int(process.memory_info().rss)
        except psutil.NoSuchProcess as exc:
            raise ProcessLookupError(pid) from exc
        except psutil.Error:
            return None

    return read


def return_free_memory() -> bool:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``): after a
    large load (a model's graph parsed, a build's JSON) freed memory otherwise stays in
    the process's RSS. False where there is no such call (macOS, musl).

    Looked up in what the process has loaded, not found by name: ``find_library`` runs
    ``ldconfig``, ``gcc`` or ``ld`` on Linux (12 ms a call), and finds none where a minimal
    image has none of them, though its glibc has the call."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True


# What a command's hooks and scripts run in between the program that started them and
# them (a hook's `sh -c`, its script's bash, a `$(...)` subshell).
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"})
# Programs that run a command as their child and wait for it, ending with it: a wrapper's
# `uv run toolscript ...` or `timeout 50 toolscript ...` (not followed: it ends with the hook).
LAUNCHERS = frozenset({"uv", "uvx", "timeout"})


def first_ancestor_not_a_shell() -> str | None:
    """``process_identity`` of the nearest ancestor of this process that is not a shell (nor
    a ``LAUNCHERS`` program, which ends with us): the program that ran us through shells
    (Claude Code, for a hook). None when that is the system's first process (launchd, init:
    nothing to follow) or cannot be read."""
    import psutil

    try:
        for ancestor in psutil.Process().parents():
            if ancestor.pid <= 1:
                return None
            if not _passed_through(ancestor):
                return process_identity(ancestor.pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return None


def _passed_through(process: Any) -> bool:
    """Whether ``process`` is a shell or a launcher (``LAUNCHERS``), by its program, not its
    name: a shell running a script is named for the script (``session-start.sh``) on Linux."""
    import psutil

    try:
        program = process.exe()
    except (psutil.AccessDenied, psutil.ZombieProcess, OSError):
        program = ""
    return _base_name(program or process.name()) in SHELLS | LAUNCHERS


def _base_name(name: str) -> str:
    """``-bash`` (a login shell), ``bash.exe``, ``/bin/sh``: ``bash``, ``bash``, ``sh``."""
    return os.path.basename(name).lstrip("-").removesuffix(".exe").lower()


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, children first; empty when ``pid`` is gone."""
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def memory_of(pid: int, *, tree: bool = False) -> dict[str, int] | None:
    """``{"pid", "rss", "processes"}``: resident bytes of ``pid`` (with ``tree``, of it and
    every process below it, and how many they are); None when it is gone."""
    import psutil

    try:
        root = psutil.Process(pid)
        members = [root, *(root.children(recursive=True) if tree else [])]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    rss, counted = 0, 0
    for member in members:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            rss += member.memory_info().rss
            counted += 1
    return {"pid": pid, "rss": rss, "processes": counted}


@dataclass(frozen=True)
class Sibling:
    """Another child of this process's parent (a job the same shell started): its command
    line, working directory and environment (empty when the system does not say);
    ``forked`` when it still runs its parent's program (forked, not yet exec'd)."""

    pid: int
    argv: tuple[str, ...]
    cwd: str
    environ: dict[str, str]
    forked: bool


def siblings(wanted: Callable[[tuple[str, ...]], bool] = lambda argv: True) -> list[Sibling]:
    """The jobs started beside this process whose command line is ``wanted`` (or that are
    still a fork of their shell): the other children of its parent, and its own children (a
    shell that runs its last command in its own process leaves its jobs to that command).
    No siblings when the parent is the init process."""
    import psutil

    me = os.getpid()
    try:
        children = psutil.Process(me).children()
        parent_line: tuple[str, ...] = ()
        if os.getppid() > 1:
            parent = psutil.Process(os.getppid())
            children += parent.children()
            with contextlib.suppress(psutil.AccessDenied):  # macOS: another user's parent
                parent_line = tuple(parent.cmdline())
    except psutil.Error:
        return []
    found = []
    for child in children:
        if child.pid == me:
            continue
        try:
            with child.oneshot():
                argv = tuple(child.cmdline())
                forked = child.ppid() != me and bool(parent_line) and argv == parent_line
                if not forked and not wanted(argv):
                    continue
                cwd = child.cwd()
                try:
                    environ = child.environ()
                except psutil.AccessDenied:  # macOS keeps some processes' environments
                    environ = {}
        except psutil.Error:
            continue
        found.append(Sibling(child.pid, argv, cwd, environ, forked))
    return found


def command_line(pid: int) -> tuple[str, ...]:
    """The command line of process ``pid`` (empty when it is gone or the system does not say)."""
    import psutil

    try:
        return tuple(psutil.Process(pid).cmdline())
    except psutil.Error:
        return ()


def signal_quietly(pid: int, sig: int, *, group: bool = False) -> None:
    """Send ``sig`` to ``pid`` (its whole process group with ``group``); a process that is
    already gone, or no longer ours to signal, is left alone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def stop_process(
    process: subprocess.Popen[Any], grace: float, *, group: bool = False, ask: bool = True
) -> None:
    """SIGTERM ``process`` (its whole process group with ``group``), give it ``grace``
    seconds, then SIGKILL; it is reaped either way. ``ask=False`` skips the SIGTERM, for a
    process the caller already asked to stop another way (by closing its stdin)."""
    if process.poll() is not None:
        return
    if ask:
        signal_quietly(process.pid, signal.SIGTERM, group=group)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        signal_quietly(process.pid, signal.SIGKILL, group=group)
        process.wait()


async def stop_process_async(
    process: asyncio.subprocess.Process, grace: float, *, group: bool = False
) -> None:
    """``stop_process`` for a process started with asyncio."""
    import asyncio

    if process.returncode is not None:
        return
    signal_quietly(process.pid, signal.SIGTERM, group=group)
    try:
        await asyncio.wait_for(process.wait(), grace)
    except TimeoutError:
        signal_quietly(process.pid, signal.SIGKILL, group=group)
        await process.wait()


def terminate_tree(pid: int, grace: float = 10.0, *, family: list[int] | None = None) -> bool:
    """SIGTERM ``pid``, wait up to ``grace`` seconds, then SIGKILL it and every process that
    was below it (collected before anything is signalled, so orphans are found too).

    Returns whether everything was gone in the end.
    """
    import psutil

    below = descendants(pid) if family is None else family
    processes: list[Any] = []
    for each in [pid, *below]:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            processes.append(psutil.Process(each))
    signal_quietly(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                process.kill()
    _, alive = psutil.wait_procs(processes, timeout=5)
    return not alive


@dataclass(frozen=True)
class Tethered:
    """A process this one started that must not outlive it: ``pid`` (its whole process
    group with ``group``); ``server`` a stdio server, whose stop is the spec's polite one
    (its stdin's end, then TERM, then KILL) where any other may be killed at once;
    ``started`` its start time (``create_time``; None when the system did not say), which
    a watchdog checks before it signals that pid: one that ended by itself may have been
    given to another process since."""

    pid: int
    group: bool = False
    server: bool = False
    started: float | None = None


# What the gateway's pieces started (servers, ``deno lsp``, search workers, spares), kept so
# that a program serving that gateway in its own process (the MCP face) can have a watchdog
# stop them should it die without stopping them (SIGKILL): the pieces below it know nothing
# of that program, and it knows nothing of what they start.
_tethered: dict[tuple[int, bool], Tethered] = {}
_watchers: list[Callable[[Tethered, bool], None]] = []
_tether_lock = threading.Lock()


def tether(pid: int, *, group: bool = False, server: bool = False) -> None:
    """``pid`` was started here and must end with this process (``Tethered``); each
    watcher (``watch_tethered``) is told."""
    tied = Tethered(pid, group, server, start_time(pid))
    with _tether_lock:
        _tethered[(pid, group)] = tied
        for watcher in _watchers:
            watcher(tied, True)


def start_time(pid: int) -> float | None:
    """When ``pid`` started (``create_time``; None when it is gone or the system does not say)."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


class ProgramNotRunnable(FileNotFoundError):
    """A server's program that no spawn could run (or only one from a relative PATH entry),
    its message saying which file is missing and what to write instead."""

    def __init__(self, message: str, program: str) -> None:
        super().__init__(errno.ENOENT, message, program)


def program_to_spawn(
    program: str, *, env: Mapping[str, str], cwd: str | os.PathLike[str] | None
) -> str:
    """The file a server's spawn runs for ``program``, the same whether it is gated or not: a
    name without "/" is looked up on the absolute entries of ``env``'s PATH (``os.defpath``
    without one) and given as its path; a relative entry (``.``, ``bin``, an empty one) is
    never searched: it names a folder of the server's (its config's folder, a cloned
    repository's), where a name the config spells as a system program's ("node") would
    run the repository's own ``bin/node``. A name found nowhere is left to the spawn, which
    says "command not found". Raises ProgramNotRunnable for a name only a relative entry
    has, and for a script whose ``#!`` interpreter does not exist (the spawn says only
    that the script is not found, a shell "exec: ...: not found")."""
    base = os.fspath(cwd) if cwd is not None else os.curdir
    if os.sep in program:
        found = program
    else:
        entries = os.get_exec_path(dict(env))
        found = next(
            (
                candidate
                for entry in entries
                if os.path.isabs(entry) and _executable(candidate := os.path.join(entry, program))
            ),
            "",
        )
        if not found:
            relative = next(
                (
                    entry
                    for entry in entries
                    if not os.path.isabs(entry) and _executable(os.path.join(base, entry, program))
                ),
                None,
            )
            if relative is None:
                return program
            spelled = os.path.join(relative, program) if relative else program
            raise ProgramNotRunnable(
                f"command not found: {program} (only PATH's relative entry {relative!r} has "
                f'it, which toolscript does not search: write "command": '
                f'"./{os.path.normpath(spelled)}" to run that one)',
                program,
            )
    missing = _missing_interpreter(os.path.join(base, found), base)
    if missing is not None:  # (a script the spawn may run: its own refusal is told otherwise)
        raise ProgramNotRunnable(
            f"command not found: {missing} (the #! interpreter of {found})", found
        )
    return found


# Programs that servers' configs launch them with, and what installs each.
SERVER_LAUNCHERS = {
    "npx": "Node.js (its npm)",
    "npm": "Node.js",
    "node": "Node.js",
    "uvx": "uv (`pip install uv`)",
    "uv": "uv (`pip install uv`)",
    "pipx": "pipx (`pip install pipx`)",
    "bunx": "Bun",
    "bun": "Bun",
    "docker": "Docker",
}


def missing_program_hint(
    program: str, *, cwd: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> str:
    """What to check when a stdio server's ``program`` was not found (its spawn's folder
    ``cwd``, its environment ``env``): a ``~`` or ``$NAME`` no shell expanded, the file a
    relative path was looked for as (from the server's folder, not the shell's), or the
    program on PATH a mistyped name is closest to, or what installs a launcher (``SERVER_LAUNCHERS``:
    npx is Node's). Empty when none of them helps."""
    import difflib
    import json
    import re

    if program in SERVER_LAUNCHERS:  # a machine without Node (or uv, Docker...): what installs it
        return (
            f" ({program} comes with {SERVER_LAUNCHERS[program]}: install it, or, if it is installed "
            'in a folder the gateway\'s PATH lacks, write its full path in "command" '
            f"(`command -v {program}` in your shell prints it))"
        )
    if not program or cwd is None:
        return ""
    shell = re.match(r"~(?=/)|\$([A-Za-z_][A-Za-z0-9_]*)", program)
    if shell:  # what a shell would have expanded: none runs the command
        name = shell.group(1) or "HOME"
        written = "${" + name + "}" + program[shell.end() :]
        return (
            f" ({shell.group(0)} is not expanded: no shell runs the command; write "
            f'"command": {json.dumps(written)}, or the full path)'
        )
    if os.sep in program:
        if os.path.isabs(program) or os.path.exists(os.path.join(cwd, program)):
            return ""
        return (
            f" (no such file: {os.path.normpath(os.path.join(cwd, program))}; a relative "
            "command is read from the config's folder, or from the entry's \"cwd\")"
        )
    names: dict[str, str] = {}
    for folder in os.get_exec_path(dict(env)):
        if not os.path.isabs(folder):
            continue
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                names.setdefault(entry.name, folder)
    close = difflib.get_close_matches(program, list(names), n=1, cutoff=0.8)
    if not close:
        return ""
    return f' (did you mean "{close[0]}"? PATH has it in {names[close[0]]})'


def program_on_path(program: str, *, cwd: str | os.PathLike[str], env: Mapping[str, str]) -> bool:
    """Whether the spawn would find ``program``: a path from ``cwd``, or a name on PATH's
    absolute folders (``program_to_spawn``'s rule)."""
    if os.sep in program:
        return os.path.exists(os.path.join(cwd, program))
    return any(
        _executable(os.path.join(folder, program))
        for folder in os.get_exec_path(dict(env))
        if os.path.isabs(folder)
    )


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


# The longest #! line the kernel reads (Linux: 256 bytes, macOS: 512)
_SHEBANG_BYTES = 512


def _missing_interpreter(path: str, base: str) -> str | None:
    """The interpreter named by ``path``'s ``#!`` line when it does not exist (a relative one
    from ``base``, the server's folder, as the kernel reads it); None otherwise, and for a
    ``path`` the spawn refuses before reading it (not executable, a folder: "Permission
    denied", which names the right file) or an interpreter that is there but not runnable
    (the spawn's "Permission denied" again, not "not found")."""
    if not _executable(path):
        return None
    head = _first_bytes(path, _SHEBANG_BYTES)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words:
        return None
    interpreter = os.fsdecode(words[0])
    return None if os.path.exists(os.path.join(base, interpreter)) else interpreter


# A stdio server's program runs only once it is tethered, where a watchdog follows what is
# tethered here (the MCP face's): spawned behind this shell, which reads one line of the
# server's stdin (``GATE_OPEN``, written after ``tether``) before it runs the program.
# Killed in between (SIGKILL), this process never writes it: stdin ends, the shell leaves,
# and the program never ran, where it would otherwise run unknown to the watchdog.
_GATE = ("/bin/sh", "-c", 'read -r gate && exec "$@"', "sh")
GATE_OPEN = b"\n"


def gated(
    argv: list[str], *, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None
) -> list[str]:
    """``argv`` behind the gate when something follows what is tethered here and its program,
    a path (``program_to_spawn`` gives one for every program PATH has: the gate's shell
    searches nothing), is one the system runs itself (``#!`` or a binary) from ``cwd``;
    ``argv`` itself otherwise: nothing to wait for, or a program the shell would run
    otherwise than the spawn does, which fails or runs it as it always did. A bare name (no
    PATH folder has it: the spawn says "command not found", a shell "exec: ...: not
    found"), a file without ``#!`` (the spawn fails, "Exec format error", where a shell runs
    it as a script of its own), or on macOS ``DYLD_`` variables (purged when /bin/sh
    starts, a program System Integrity Protection protects)."""
    import shutil

    with _tether_lock:
        followed = bool(_watchers)
    environment = os.environ if env is None else env
    if not followed or (
        sys.platform == "darwin" and any(name.startswith("DYLD_") for name in environment)
    ):
        return argv
    program = argv[0]
    found = shutil.which(os.path.join(cwd or os.curdir, program)) if os.sep in program else None
    return [*_GATE, *argv] if found and _runs_itself(found) else argv


# How a file the system runs itself begins: ``#!``, ELF, Mach-O (32, 64 bits, each byte
# order) and a universal Mach-O binary
_RUNNABLE = (
    b"#!",
    b"\x7fELF",
    b"\xfe\xed\xfa\xce",
    b"\xce\xfa\xed\xfe",
    b"\xfe\xed\xfa\xcf",
    b"\xcf\xfa\xed\xfe",
    b"\xca\xfe\xba\xbe",
)


def _runs_itself(path: str) -> bool:
    return _first_bytes(path, 4).startswith(_RUNNABLE)


def _first_bytes(path: str, size: int) -> bytes:
    """Up to ``size`` bytes of ``path``'s start (none when it cannot be read)."""
    try:  # (not blocking: a FIFO's open waits for a writer, its read for a byte)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        return os.read(descriptor, size)
    except OSError:
        return b""
    finally:
        os.close(descriptor)


def untether(pid: int, *, group: bool = False) -> None:
    """``pid`` ended (it was reaped): nothing is to stop it now (its number may be reused)."""
    with _tether_lock:
        tied = _tethered.pop((pid, group), None)
        if tied is not None:
            for watcher in _watchers:
                watcher(tied, False)


def tethered() -> list[Tethered]:
    """The processes tethered to this one now, oldest first."""
    with _tether_lock:
        return list(_tethered.values())


def watch_tethered(watcher: Callable[[Tethered, bool], None]) -> Callable[[], None]:
    """Call ``watcher(process, True)`` for each process tethered now and from now on, and
    ``watcher(process, False)`` as each is untethered; returns what stops the calls."""
    with _tether_lock:
        _watchers.append(watcher)
        for tied in _tethered.values():
            watcher(tied, True)

    def unwatch() -> None:
        with _tether_lock, contextlib.suppress(ValueError):
            _watchers.remove(watcher)

    return unwatch


def stop_tethered(grace: float = 0.5) -> None:
    """Stop every process still tethered here, before an exit that would leave them: a
    server is sent SIGTERM (its stdin closed with this process's or earlier), any other
    SIGKILL, and after ``grace`` seconds every group and every process still there SIGKILL;
    this process's children among them are reaped."""
    import psutil

    left = tethered()
    if not left:
        return
    for tied in left:
        signal_quietly(
            tied.pid, signal.SIGTERM if tied.server else signal.SIGKILL, group=tied.group
        )
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(process_alive(tied.pid) for tied in left):
        time.sleep(0.01)
    children = []
    for tied in left:
        # A group's leader gone may leave its members (a server's own children): the group
        # is killed either way.
        if tied.group or process_alive(tied.pid):
            signal_quietly(tied.pid, signal.SIGKILL, group=tied.group)
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(tied.pid)
            if process.ppid() == os.getpid():
                children.append(process)
        untether(tied.pid, group=tied.group)
    psutil.wait_procs(children, timeout=grace)  # waits on (so reaps) them
