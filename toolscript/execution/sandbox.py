"""Run a toolscript in Deno with nothing but the gateway.

The child gets a clean environment (only ``TOOLSCRIPT_GATEWAY_URL`` readable),
network and imports limited to the gateway's host:port, no npm, no files, no
subprocesses, no FFI. Deno loads local files named by literal import specifiers
before any permission check; the import map closes that hole by sending every
``file:`` URL except the script itself to a host the sandbox may not reach.
A module that offers packages (``store/packages.py``) lets npm in through its frozen lock
only: Deno reads them from toolscript's read-only cache (``--cached-only``), and a package
the lock does not hold is refused; without packages, ``--no-npm`` as ever.
Limits: wall-clock time, V8 heap, and captured output (stdout and stderr together), each
with its own exit code. Remote imports are refused (the module is a local file), Deno's
caches of a run live and die with it (``denobinary.run_deno_dir``), stdin is /dev/null, and
on a terminal the script's control characters are shown, not obeyed.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol
from urllib.parse import urlsplit

from toolscript.errors import (
    GatewayError,
    GatewayUnreachableError,
    ToolscriptError,
)
from toolscript.execution.source import PreparedSource, SourceMap, prepare
from toolscript.plumbing.checkoptions import (
    REFUSED_FILE_URL,
    check_imports,
    check_tag,
    shared_check_config,
    uses_node,
)
from toolscript.plumbing.denobinary import (
    deno_binary,
    deno_cache_dir,
    deno_environment,
    deno_start_error,
    forget_emitted,
    run_deno_dir,
)
from toolscript.plumbing.paths import user_cache_dir
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.processes import signal_quietly
from toolscript.store.outputs import KeptOutput, errors_file, kept_output_limit
from toolscript.store.packages import (
    Packages,
    declare_hint,
    import_entries,
    npm_set,
    packages_beside,
)
from toolscript.store.savedscripts import module_imports, offers_node

__all__ = [
    "ERRORS_CUT",
    "EXIT_MEMORY",
    "EXIT_OUTPUT",
    "EXIT_TIMEOUT",
    "REFUSED_FILE_URL",
    "Advice",
    "Denial",
    "Limits",
    "Script",
    "deno_binary",
    "policy_denial",
    "run_toolscript",
    "with_denials",
]

EXIT_OUTPUT = 123
EXIT_TIMEOUT = 124
EXIT_MEMORY = 125
# How the note on stderr cut (Limits.errors_kept) begins: with a nonce of this process, so
# a line a script prints (or a server's text it prints) cannot pass for the note.
ERRORS_CUT = f"toolscript: errors cut ({secrets.token_hex(8)}): "
SPILL_MINIMUM = 64 * 1024 * 1024  # stdout kept in the file: 16 times the cap, at least this
_OOM_MARKERS = (b"out of memory", b"Reached heap limit", b"allocation failed")
Rewrite = Callable[[bytes], bytes]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PATH_STOPS = frozenset(" \t\n\r\f\v\"'()[]")
WARM_CHECK_WAIT = 25.0  # seconds for the gateway's checker (it gives up sooner by itself)
# The warm checker asked without HTTP: a ``POST /runtime/check`` body and a wait in seconds
# to its answer, None when that gateway is gone (``gateway/local.py``).
Checker = Callable[[dict[str, str], float], dict[str, str] | None]


class Limits(NamedTuple):
    timeout: float = 300.0  # seconds of wall-clock time; 0 means none
    memory_mb: int = 512  # V8 heap
    max_output: int = 10 * 1024 * 1024  # bytes of stdout and stderr together
    # Bytes of stderr's end shown beside ``max_output`` (the MCP face): stderr past the budget
    # then never stops the script, its whole kept beside the spill; 0: past it, stopped.
    errors_kept: int = 0


class Script(NamedTuple):
    code: str
    display_name: str  # what errors call it: "inline.ts", "<stdin>.ts" or the user's path
    file_name: str = "inline.ts"
    result_marker: str = ""  # printed before the JSON of a top-level return value (if any)
    # what runs a saved script ("toolscript run NAME"): its input missing a property, the
    # error says how to give it (--input)
    run_command: str = ""


class Advice(NamedTuple):
    """What each limit's message tells the user to change (the CLI's options by default)."""

    timeout: str = "raise --timeout"
    output: str = "raise --max-output"
    memory: str = "raise --memory"


DEFAULT_LIMITS = Limits()
DEFAULT_ADVICE = Advice()

# The folder Deno runs in, what ``Deno.cwd()`` tells a script: the file system's root, never
# the project's folder (it named the user, the project and where it lives, to a script that
# reads no file and could send it to any tool). Nothing of the sandbox reads its folder:
# every path it is given is absolute, and it runs with no project config.
SANDBOX_FOLDER = Path("/")


_UNSAFE_IN_URL = re.compile(r"[^A-Za-z0-9._-]")


def _script_folder(script: Script) -> tuple[Path, str, PreparedSource]:
    """The folder of a script's content (its check marks) and its copy's file name."""
    prepared = prepare(script.code, result_marker=script.result_marker)
    digest = hashlib.sha256(prepared.code.encode()).hexdigest()[:24]
    # Deno and Python spell some characters of a file URL differently ("report (copy).ts"),
    # and the import map must name the script exactly: the copy's name keeps only safe ones
    # (messages still show the script's own name).
    safe_name = _UNSAFE_IN_URL.sub("_", script.file_name) or "script.ts"
    return user_cache_dir() / "scripts" / digest, safe_name, prepared


def _write_script(script: Script) -> tuple[Path, PreparedSource]:
    """The script's copy for its run, in a folder of this run's own under its content's
    folder (``_forget_script`` removes it when the run ends: a password typed into a script
    stayed in the cache 30 days); only the check marks, named by hashes, stay there."""
    folder, safe_name, prepared = _script_folder(script)
    with contextlib.suppress(OSError):  # used now: the cache's prune keeps its marks
        os.utime(folder)  # (store/cacheprune.py)
    path = folder / f"run-{os.getpid()}-{threading.get_ident()}" / safe_name
    write_private(path, prepared.code)
    return path, prepared


def _forget_script(path: Path) -> None:
    """Remove a run's copy of its script, and the JavaScript Deno emitted for it."""
    forget_emitted(path)
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def checked_before(script: Script, module_hash: str) -> bool:
    """Whether this script passed a check against this module before (``_warm_check`` then
    answers at once, without asking the gateway)."""
    folder, safe_name, _ = _script_folder(script)
    return _passed_mark(folder / "run" / safe_name, module_hash).exists()


def _passed_mark(script_path: Path, module_hash: str) -> Path:
    """The file that says a check passed: per module and per check options (``check_tag``:
    a pass under other libs says nothing of these), in the script's content folder beside
    the run's own (``script_path``'s). Written when the warm checker passed the
    script, or when Deno's own ``--check`` did (a run that checked and then exited 0: a
    failed check exits 1 before anything runs)."""
    folder = script_path.parent.parent
    return folder / f".{script_path.name}.checked-{module_hash}-{check_tag()}"


def _warm_check(
    gateway_url: str,
    script_path: Path,
    code: str,
    module: Path,
    module_hash: str,
    checker: Checker | None = None,
) -> tuple[str, str]:
    """The gateway's warm checker's verdict: ``("passed" | "failed" | "unavailable", output)``,
    asked of ``checker`` (the MCP face's own gateway, on its loop) when given and there,
    else over HTTP.

    A pass is remembered beside the script, per module, so a script run again is not checked
    again (as Deno's own cache does for ``--check``).
    """
    passed = _passed_mark(script_path, module_hash)
    if passed.exists():
        return "passed", ""
    from toolscript.execution.locate import gateway_request

    request = {"code": code, "path": str(script_path), "module": str(module), "hash": module_hash}
    try:
        verdict: Any = checker(request, WARM_CHECK_WAIT) if checker is not None else None
        if verdict is None:
            answer = gateway_request(
                gateway_url,
                "/runtime/check",
                WARM_CHECK_WAIT,
                json_body=json.dumps(request).encode(),
            )
            verdict = json.loads(answer) if answer else {}
    except (GatewayError, ValueError):
        # an older gateway, one that went away or failed (an error status over HTTP, the
        # error that status stands for from ``LocalGateway.check``): deno check decides
        return "unavailable", ""
    status = verdict.get("status") if isinstance(verdict, dict) else None
    if status == "passed":
        write_private(passed, "")
    if status not in ("passed", "failed"):
        return "unavailable", ""
    return status, str(verdict.get("output", ""))


def _close_web_storage(deno_dir: Path) -> None:
    """Deno keeps localStorage under ``location_data`` between runs; a file in its place
    makes every storage call fail, so no script leaves state for the next one."""
    storage = deno_dir / "location_data"
    if storage.is_file():
        return
    import shutil

    shutil.rmtree(storage, ignore_errors=True)
    deno_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    storage.write_text("toolscripts keep no state between runs\n")


def _command(
    script_path: Path,
    gateway_url: str,
    import_map: Path,
    check: bool,
    limits: Limits,
    remote_module: bool = False,
    packages: Packages | None = None,
    *,
    readable: list[Path] | None = None,
    config: Path | None = None,
) -> list[str]:
    """Deno's command line. Imports from the gateway are allowed only for a ``remote_module``
    (no gateway module as a file): a script importing URLs would make Deno keep each.

    ``--allow-import=HOST`` replaces Deno's default list (deno.land, jsr.io, esm.sh...);
    ``--deny-import=HOST`` then refuses that one too. A bare ``--deny-import`` would not do:
    Deno still fetches from its default list with it. ``readable``: the files a spare
    sandbox (``execution/spare.py``) may read, those its script imports. ``config``: the
    check's own (``plumbing/checkoptions.py``); none reads a project's ``deno.json``.
    """
    host = urlsplit(gateway_url).netloc
    npm = (
        [f"--lock={packages.lock}", "--frozen", "--cached-only"]
        if packages is not None
        else ["--no-lock", "--no-npm"]
    )
    return [
        deno_binary(),
        "run",
        "--quiet",
        "--no-prompt",
        f"--config={config}" if config is not None else "--no-config",
        *npm,
        f"--allow-import={host}",
        *([] if remote_module else [f"--deny-import={host}"]),
        f"--allow-net={host}",
        "--allow-env=TOOLSCRIPT_GATEWAY_URL",
        f"--import-map={import_map}",
        f"--v8-flags=--max-old-space-size={limits.memory_mb}",
        *([f"--allow-read={','.join(map(str, readable))}"] if readable else []),
        # A run's DENO_DIR goes with it: a V8 code cache written there would never be read
        # (measured: 15-20 ms of a run's start, in SQLite files made for nothing).
        "--no-code-cache",
        "--check" if check else "--no-check",
        str(script_path),
    ]


class Spare(Protocol):
    """A Deno spawned ahead for one script (``execution/spare.py`` makes them)."""

    script_path: Path  # where the script's copy goes (what its errors name)

    def fits(self, gateway_url: str, module: Path, memory_mb: int) -> bool: ...

    def hand_over(self, code: str, script_url: str) -> subprocess.Popen[bytes]: ...

    def discard(self) -> None: ...

    def close(self) -> None: ...


class Sink(Protocol):
    """Where a stream of the child goes: ours, a buffer, or ``_Shown`` in front of a terminal."""

    def write(self, data: bytes, /) -> int: ...

    def flush(self) -> None: ...


class Gate(Protocol):
    """A run's requests held at its gateway while its script's check is under way (the MCP
    face's own gateway: ``RunBook.hold``), so the script can run beside its check."""

    def hold(self) -> bool: ...

    def settle(self, passed: bool) -> None: ...

    def reissue(self) -> str | None: ...


class _Gated:
    """A stream of a run whose check is under way: what the script writes is kept until the
    verdict, then shown (passed) or dropped. What reaches a stream is bounded by the run's
    output budget, so what is kept is too; what does not fit waits for the verdict before
    any file is made of it (``may_keep``)."""

    def __init__(self, target: Sink) -> None:
        self.target = target
        self._lock = threading.Lock()
        self._kept: list[bytes] | None = []
        self._shown = False
        self._decided = threading.Event()

    def write(self, data: bytes, /) -> int:
        with self._lock:
            if self._kept is not None:
                self._kept.append(bytes(data))
                return len(data)
            if not self._shown:
                return len(data)
        return self.target.write(data)

    def flush(self) -> None:
        with self._lock:
            shown = self._kept is None and self._shown
        if shown:
            self.target.flush()

    def open(self, shown: bool) -> None:
        """The verdict: what was kept written out (``shown``) or dropped, and so on from now."""
        with self._lock:
            kept, self._kept, self._shown = self._kept or [], None, shown
            if shown and kept:
                with contextlib.suppress(BrokenPipeError, ValueError):
                    for chunk in kept:
                        self.target.write(chunk)
                    self.target.flush()
        self._decided.set()

    def may_keep(self) -> bool:
        """Whether a file may be made of this run's output (a spill, its errors): once the
        check passed. Waits for the verdict, the script meanwhile blocked on its full pipe: a
        file made before it pruned older runs' outputs and could be read by its URI."""
        self._decided.wait()
        return self._shown


def _may_keep(target: Sink) -> bool:
    """Whether a file may be made of the output that goes to ``target`` (``_Gated.may_keep``)."""
    return target.may_keep() if isinstance(target, _Gated) else True


class TerminalHold:
    """What a run shows on the terminal, held while toolscript asks the person there (an
    approval, a server's question) and shown after the answer. Printed under the question,
    a script's own lines would be what the person answers: a question about another call
    forged below the real one, or blank lines pushing the real one off the screen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[Callable[[], object]] | None = None

    def hold(self) -> None:
        with self._lock:
            if self._held is None:
                self._held = []

    def release(self) -> None:
        """Show what was held, in order; from now on, shown as it comes."""
        with self._lock:
            held, self._held = self._held or [], None
            for show in held:
                with contextlib.suppress(BrokenPipeError, ValueError, OSError):
                    show()

    def show(self, show: Callable[[], object]) -> None:
        """``show()`` now, or after the question being asked."""
        with self._lock:
            if self._held is not None:
                self._held.append(show)
                return
            show()


TERMINAL = TerminalHold()  # this process's terminal (exec's): one person, one question


class _Shown:
    """A terminal as the pumps write to it: the script's control characters made visible,
    and nothing while toolscript asks the person a question there (``TERMINAL``)."""

    def __init__(self, target: Sink) -> None:
        from toolscript.store.outputs import VisibleControls

        self.target = target
        self.controls = VisibleControls()

    def write(self, data: bytes, /) -> int:
        shown = self.controls.feed(data)
        TERMINAL.show(lambda: self._write(shown))
        return len(data)

    def _write(self, shown: bytes) -> None:
        self.target.write(shown)
        self.target.flush()

    def flush(self) -> None:
        TERMINAL.show(self.target.flush)

    def finish(self) -> None:
        """What an unfinished UTF-8 sequence at the very end held back."""
        with contextlib.suppress(BrokenPipeError, ValueError):
            shown = self.controls.feed(b"", final=True)
            TERMINAL.show(lambda: self._write(shown))


class _Held:
    """This process's own stdout or stderr when not a terminal, held as the terminal is while
    toolscript asks the person there (``TERMINAL``): piped to ``tee`` or ``less``, what the
    script prints is on the person's screen all the same."""

    def __init__(self, target: Sink) -> None:
        self.target = target

    def write(self, data: bytes, /) -> int:
        chunk = bytes(data)
        TERMINAL.show(lambda: self.target.write(chunk))
        return len(chunk)

    def flush(self) -> None:
        TERMINAL.show(self.target.flush)


def _for_people(target: Sink, *, own: bool = False) -> Sink:
    """``target`` as the pumps write to it: through ``_Shown`` when it is a terminal, through
    ``_Held`` when it is this process's own stream (``own``) otherwise."""
    isatty = getattr(target, "isatty", None)
    if isatty is not None and isatty():
        return _Shown(target)
    return _Held(target) if own else target


class _Pump(threading.Thread):
    """Copies one stream of the child to ours as it arrives, counting bytes."""

    def __init__(
        self, source: IO[bytes], target: Sink, budget: _Budget, rewrite: Rewrite | None
    ) -> None:
        super().__init__(daemon=True)
        self.source, self.target, self.budget, self.rewrite = source, target, budget, rewrite
        self.tail = b""

    def run(self) -> None:
        descriptor = self.source.fileno()
        lines = _Lines(self.rewrite) if self.rewrite else None
        discard = False
        while chunk := os.read(descriptor, 65536):
            # Counted as it arrives, before any rewriting: output without newlines counts too.
            if not self.budget.spend(len(chunk)):
                return
            self.tail = (self.tail + chunk)[-4096:]
            out = lines.feed(chunk) if lines else chunk
            if discard or not out:
                continue
            discard = not self._write(out)
        if lines and not discard:
            self._write(lines.flush())

    def _write(self, data: bytes) -> bool:
        """False once our reader went away (`| head`): then keep draining so the child never blocks."""
        try:
            self.target.write(data)
            self.target.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True


class _Lines:
    """Rewrites whole lines of a stream; a line longer than MAX_LINE goes out in pieces."""

    MAX_LINE = 64 * 1024

    def __init__(self, rewrite: Rewrite) -> None:
        self.rewrite = rewrite
        self.pending = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self.pending + chunk
        end = data.rfind(b"\n") + 1
        if end == 0 and len(data) < self.MAX_LINE:
            self.pending = data
            return b""
        if end == 0:
            end = len(data)
        self.pending = data[end:]
        return b"".join(self.rewrite(line) for line in data[:end].splitlines(keepends=True))

    def flush(self) -> bytes:
        rest, self.pending = self.pending, b""
        return self.rewrite(rest) if rest else b""


def process_memory_cap(memory_mb: int) -> int:
    """Bytes of resident memory the whole sandbox may use: ``--memory`` caps only the V8 heap,
    not ArrayBuffers, WebAssembly memories or workers' heaps; type checking a large
    module needs room of its own too."""
    return max(2 * memory_mb, memory_mb + 768) * 1024 * 1024


class _MemoryWatch(threading.Thread):
    """Samples the sandbox's resident memory; kills it past ``cap``.

    The Deno process alone: a script may start no process (no ``--allow-run``) and Deno
    starts none for it. Its children were looked for at each sample before, which on Linux
    reads every process's ``stat`` (1.8 ms of CPU with 113 processes, 20 times a second of
    every run, more on a desktop with hundreds); its own memory is one read (0.01 ms).

    Read through ``plumbing/processes.py`` (psutil, the same on Linux and macOS), imported
    off the exec path's critical start-up, and only once the first interval has passed: a script done by then
    (most are) never pays its 40 ms of imports, which would compete with Deno for the CPU.
    """

    INTERVAL = 0.05

    def __init__(self, process: subprocess.Popen[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self.process, self.cap = process, cap
        self.stop = threading.Event()
        self.exceeded = threading.Event()

    def run(self) -> None:
        if self.stop.wait(self.INTERVAL):
            return
        from toolscript.plumbing.processes import resident_reader

        read = resident_reader(self.process.pid)
        if read is None:
            return
        while not self.stop.wait(self.INTERVAL):
            try:
                used = read()
            except ProcessLookupError:
                return
            if used is None:
                continue
            if used > self.cap:
                self.exceeded.set()
                _kill(self.process)
                return


class _SpillingPump(_Pump):
    """Stdout, when the output may overflow into a file: whole lines are printed while they
    fit in the budget (shared with stderr); from the first that does not, everything (what
    was printed too) goes to ``spill`` instead, up to ``limit`` bytes in all (then ``full``
    is set and the child stopped), and the child goes on. What did not fit is held for the
    preview too (its first ``PREVIEW_PARSE_LIMIT`` bytes): a file that cannot be written
    (read-only, full, deleted meanwhile) loses the whole output, never the preview, and the
    pump goes on draining the child (``unkept`` says why)."""

    def __init__(
        self, source: IO[bytes], target: Sink, budget: _Budget, spill: Path, limit: int
    ) -> None:
        super().__init__(source, target, budget, None)
        self.spill = spill
        self.limit = limit
        self.printed = bytearray()  # kept to start the file with, should it be needed
        self.held = bytearray()  # the start of what did not fit, for the preview
        self.file: KeptOutput | None = None
        self.spilling = False
        self.unkept: OSError | None = None
        self.total = 0
        self.full = threading.Event()

    def run(self) -> None:
        descriptor = self.source.fileno()
        pending = b""
        while chunk := os.read(descriptor, 65536):
            self.total += len(chunk)
            if self.spilling:
                if self.total > self.limit:
                    self.full.set()
                    self.budget.stop_child()
                    break
                self._keep(chunk)
                continue
            pending += chunk
            # A line is printed whole or not at all (a JSON value stays whole). The whole
            # lines that fit are printed, however many came in one read ("first line\n" and
            # a large value after it: the first line is printed, the value spills).
            end = pending.rfind(b"\n", 0, self.budget.left) + 1
            if end:
                pending = self._forward(pending[:end]) + pending[end:]
            if not self.spilling and (b"\n" in pending or len(pending) > self.budget.left):
                pending = self._forward(pending)  # a line that does not fit: it and the rest
            if self.spilling and pending:
                self._keep(pending)
                pending = b""
        if pending and not self.spilling:
            pending = self._forward(pending)
        if pending:
            self._keep(pending)
        self._close()

    def _forward(self, data: bytes) -> bytes:
        """Print ``data`` if it fits; else start the file with it: what was not printed."""
        if self.budget.try_spend(len(data)):
            self.printed += data
            self._write(data)
            return b""
        from toolscript.store.outputs import open_output

        self.spilling = True
        if not _may_keep(self.target):  # its script failed its check: no file of it
            return data
        try:
            self.file = open_output(self.spill)
            self.file.write(bytes(self.printed))
        except OSError as exc:
            self._lose(exc)
        return data

    def _keep(self, data: bytes) -> None:
        if len(self.held) < PREVIEW_PARSE_LIMIT:
            self.held += data[: PREVIEW_PARSE_LIMIT - len(self.held)]
        if self.file is not None:
            try:
                self.file.write(data)
            except OSError as exc:
                self._lose(exc)

    def _close(self) -> None:
        """The file finished; when it was deleted meanwhile, it is not kept."""
        if self.file is None:
            return
        from toolscript.store.outputs import kept_output

        try:
            if os.fstat(self.file.fileno()).st_nlink == 0:
                raise FileNotFoundError(
                    errno.ENOENT, "deleted while it was written", str(self.spill)
                )
            self.file.close()
        except OSError as exc:
            self._lose(exc)
            return
        self.file = None
        kept_output(self.spill)

    def _lose(self, exc: OSError) -> None:
        """The output cannot be kept: what is in the file is not all of it, so it goes."""
        self.unkept = exc
        _give_up(self.file, self.spill)
        self.file = None

    def whereabouts(self) -> str:
        """Where the whole output is, or why it is nowhere."""
        if self.unkept is None:
            return (
                f"the whole output is in {self.spill} (filter inside the script, or read the file)"
            )
        from toolscript.plumbing.paths import storage_error
        from toolscript.store.outputs import BudgetFull

        if isinstance(self.unkept, FileNotFoundError):
            why = f"{self.spill} was deleted while it was written"
            hint = "another program removed it; run again to keep it"
        elif isinstance(self.unkept, BudgetFull):
            why = str(self.unkept.strerror)
            hint = "outputs still being written hold the rest"
        else:
            error = storage_error(self.unkept, self.spill.parent)
            why, hint = error.message, error.hint or ""
        return f"the whole output could not be kept: {why} ({hint}); filter inside the script"


def _give_up(file: KeptOutput | None, spill: Path) -> None:
    """A file of output that cannot be kept whole: closed and removed (its run's folder
    too, when nothing else is in it)."""
    if file is not None:
        with contextlib.suppress(OSError):
            file.close()
    with contextlib.suppress(OSError):
        spill.unlink()
    with contextlib.suppress(OSError):
        spill.parent.rmdir()


class _ErrorsPump(_Pump):
    """Stderr with a part of its own (``Limits.errors_kept``): its lines are shown as they
    come while they fit in the budget shared with stdout; past it, the script goes on, all
    of stderr goes to ``spill`` (up to ``limit`` bytes) and its last ``kept`` bytes are shown
    as it ends, after a line saying how much was cut and where the whole is (the error a
    script ends with is at its end). The lines are rewritten as exec's are."""

    def __init__(
        self,
        source: IO[bytes],
        target: Sink,
        budget: _Budget,
        rewrite: Rewrite,
        spill: Path,
        kept: int,
        limit: int,
    ) -> None:
        super().__init__(source, target, budget, rewrite)
        self.spill, self.kept, self.limit = spill, kept, limit
        self.printed = bytearray()  # kept to start the file with, should it be needed
        self.held = bytearray()  # the last ``kept`` bytes of what did not fit
        self.cut = 0  # bytes of what did not fit that are not held
        self.cutting = False
        self.file: KeptOutput | None = None
        self.written = 0
        self.unkept: OSError | None = None

    def run(self) -> None:
        descriptor = self.source.fileno()
        assert self.rewrite is not None
        lines = _Lines(self.rewrite)
        while chunk := os.read(descriptor, 65536):
            self.tail = (self.tail + chunk)[-4096:]
            self._take(lines.feed(chunk))
        self._take(lines.flush())
        self._end()

    def _take(self, data: bytes) -> None:
        if not self.cutting and data:
            left = self.budget.left
            # whole lines that fit (a chunk may hold many), or all of it
            end = len(data) if len(data) <= left else data.rfind(b"\n", 0, max(left, 0)) + 1
            if end and self.budget.try_spend(end):
                self.printed += data[:end]
                self._write(data[:end])
                data = data[end:]
            self.cutting = bool(data)
        if data:
            self._hold(data)

    def _hold(self, data: bytes) -> None:
        if (
            self.file is None
            and self.unkept is None
            and not self.written
            and _may_keep(self.target)  # (its script failed its check: no file of it)
        ):
            from toolscript.store.outputs import open_output

            try:
                self.file = open_output(self.spill)
                self._keep(bytes(self.printed))
            except OSError as exc:
                self._lose(exc)
        self._keep(data)
        self.held += data
        if len(self.held) > self.kept:
            self.cut += len(self.held) - self.kept
            del self.held[: len(self.held) - self.kept]

    def _keep(self, data: bytes) -> None:
        room = self.limit - self.written
        if self.file is None or room <= 0:
            return
        try:
            self.file.write(data[:room])
        except OSError as exc:
            self._lose(exc)
            return
        self.written += min(room, len(data))

    def _lose(self, exc: OSError) -> None:
        self.unkept = exc
        _give_up(self.file, self.spill)
        self.file = None

    def _end(self) -> None:
        if self.file is not None:
            from toolscript.store.outputs import kept_output

            try:
                self.file.close()
            except OSError as exc:
                self._lose(exc)
            else:
                self.file = None
                kept_output(self.spill)
        if not self.cut:
            self._write(bytes(self.held))
            return
        # from a line's start, when one starts in its first half (a longer last line: in part)
        start = self.held.find(b"\n", 0, len(self.held) // 2) + 1
        self.cut += start
        total = len(self.printed) + self.cut + len(self.held) - start
        if self.unkept is not None:
            where = f"it could not be kept ({self.unkept.strerror or self.unkept})"
        elif self.written < total:
            where = f"its first {self.written} bytes are in {self.spill}"
        else:
            where = f"the whole of it is in {self.spill}"
        note = f"{self.cut} bytes of its {total} are left out here; {where}\n"
        self._write(f"\n{ERRORS_CUT}{note}".encode() + bytes(self.held[start:]))


class _Budget:
    """Bytes of output left; spending past it kills the child."""

    def __init__(self, limit: int, process: subprocess.Popen[bytes]) -> None:
        self.left = limit
        self.exhausted = threading.Event()
        self._process = process
        self._lock = threading.Lock()

    def try_spend(self, size: int) -> bool:
        """Spend ``size`` if it fits (True); else spend nothing (False) and let the child be."""
        with self._lock:
            if size > self.left:
                return False
            self.left -= size
            return True

    def stop_child(self) -> None:
        _kill(self._process)

    def spend(self, size: int) -> bool:
        with self._lock:
            self.left -= size
            if self.left < 0:
                self.exhausted.set()
                _kill(self._process)
                return False
            return True


# Linear in a line's length: what is refused never holds another "Requires " (a lazy ".+?"
# scanned to the line's end from each one: seconds of exec's CPU per line a script printed).
_REFUSAL = re.compile(
    r"Requires (\w+) access to ((?:(?!Requires ).)+?), run again with the --allow-\w+ flag"
    r"|Failed to spawn '([^']*)': entity not found"
)
_REFUSALS = {
    "read": "scripts cannot read files (tried {}); pass data in through tool calls or the script",
    "write": "scripts cannot write files (tried {}); return the data instead: it is printed as JSON",
    "net": "scripts reach only the gateway (tried {}); call a tool that fetches it",
    # a library from a URL, or data: what the sandbox offers instead of each
    "import": 'scripts import only "toolscript" (tried {}): a library is declared in '
    '.toolscript.json as an npm package, "packages": ["npm:NAME@VERSION"], and imported by '
    "name; data comes through a tool that fetches it",
    "env": "scripts cannot see environment variables (tried {}); put the value in the script",
    "run": "scripts cannot start processes (tried {}); use a tool for that",
    "ffi": "scripts cannot load native libraries (tried {})",
    "sys": "scripts cannot read system information (tried {})",
}


# Where the import map sent a local file the script imports (``./lib.ts``): the host of
# that URL, which is all Deno's refusal names of it.
_REFUSED_FILE_HOST = urlsplit(REFUSED_FILE_URL).netloc
_LOCAL_IMPORT = (
    "scripts cannot import local files; put the code in the script itself, or pass the data "
    "in through a tool call"
)


_JSR_IMPORT = (
    'scripts import only "toolscript" (tried {}): jsr: packages are not offered; declare the '
    'package from npm in .toolscript.json, "packages": ["npm:NAME@VERSION"], and import it by name'
)


def _refusal(found: re.Match[str]) -> str:
    """A sandbox refusal in toolscript's words: exec has no --allow-* flags to suggest."""
    if found[3] is not None:
        return _REFUSALS["run"].format(repr(found[3]))
    if found[1] == "import" and _REFUSED_FILE_HOST + ":" in found[2]:
        return _LOCAL_IMPORT
    if found[1] == "import" and found[2].startswith(('"jsr.io:', '"npm.jsr.io:')):
        return _JSR_IMPORT.format(found[2])
    wording = _REFUSALS.get(found[1], f"the sandbox refused {found[1]} access to {{}}")
    return wording.format(found[2])


_V8_DUMP = (
    b"<--- Last few GCs --->",
    b"# Fatal JavaScript",
    b"# Fatal error in",
    b"==== C stack trace",
)
# A syntax error's excerpt: "3 | })();". Line and column numbers have at most 9 digits:
# int() refuses more than 4,300, and a script printing such a "position" stopped the pump.
_GUTTER = re.compile(r"^(\s*)(\d{1,9})( \| ?)(.*)$")
# Possessive: two runs of blanks side by side, tried at every split, were quadratic.
_CARET = re.compile(r"^(\s*+(?:\| ?)?)(\s*+)([\^~]+)\s*$")
_FRAME = re.compile(r"^\s+at ")


# Deno's words for an npm package the sandbox does not offer, and toolscript's.
_UNDECLARED = "scripts import only the packages the project declares"
_LOCK_DIFF = re.compile(r"\s*+(?:changes:|\d*\s*\|)")  # possessive: linear
_ADDED_SPECIFIER = re.compile(r'\|\s*\+\s*"((?:npm|jsr):[^"]+)":')
_NOT_CACHED = re.compile(r'Failed loading https?://\S+ for package "([^"]+)"')
_LOST = re.compile(r"error: Failed caching npm package '([^']+)'")
_DENO_ADD = re.compile(r"\s*hint: If you want to use the npm package, try running `deno add")
# Deno's words after a failed check: "it still might work", "Re-run with --no-check".
_CHECK_ADVICE = re.compile(
    r"\s*(?:info: The program failed type-checking|hint: Re-run with --no-check)"
)


# A type error on a result of a tool that declares no result type (the runtime's ToolResult,
# as TypeScript spells it out), and what to do about it.
_TOOL_RESULT = re.compile(
    r"(?:on|to) type 'string \| JsonObject \| JsonValue\[\] \| ContentBlock\[\](?: \| null)?'"
)
UNTYPED_RESULT = (
    " (a ToolResult: the tool declares no result type. Return its result once to see it, and"
    " later scripts get the type learned from it; or narrow it: `as { ... }`)"
)
# Types a run's errors look up in the module (each a pass over it, megabytes at 1,600 tools):
# a check reports a few; a script printing diagnostic-like lines gets no more than these.
MAX_TYPES_LOOKED_UP = 16
_DIAGNOSTIC = re.compile(r"TS\d{1,6} \[ERROR\]: ")  # a type error's first line


# A missing member's name, said before "does not exist on type" ("Property 'wipe' ").
_MISSING_PROPERTY = re.compile(r"Property '([A-Za-z_$][\w$]{0,200})' $")
_MEMBER_SPAN = 256  # characters before a type's name where its missing member is said
# (a server's namespace, a member its type lacks) -> what the policy says of that tool, if any
Denial = Callable[[str, str], str | None]


def policy_denial(explicit: str | None, cwd: Path | None = None) -> Denial:
    """What the project's config (``--config``, or found from ``cwd``) denies, read only
    when a type error names a member a server's type lacks: a run with no such error reads
    nothing more. A tool is found by its name or a rule's spelled as the script calls it
    (``deleteAll`` for a rule ``delete_all``)."""

    def said(namespace: str, member: str) -> str | None:
        from toolscript.codegen.naming import denied_name, to_camel_case, to_pascal_case
        from toolscript.config import load_config
        from toolscript.errors import ToolscriptError

        try:
            config = load_config(explicit, cwd=cwd)
        except (ToolscriptError, OSError, ValueError):
            return None  # a config that cannot be read now: the type error says the rest
        for server in config.servers:
            # (its namespace in scripts, or its type's name: ``SumsTools``)
            spelled = (server.name, to_camel_case(server.name), to_pascal_case(server.name))
            if namespace not in spelled and namespace.removesuffix("Tools") not in spelled:
                continue
            denied = denied_name(member, server.policy, server.denies)
            if denied is not None:
                return (
                    f"{server.name}.{denied} is denied by the policy of server "
                    f"{server.name!r} in {config.config_file}"
                )
        return None

    return said


_MISSING_ON_TYPE = re.compile(
    r"Property '([A-Za-z_$][\w$]{0,200})' does not exist on type '([A-Za-z_$][\w$]{0,200})'"
)


def with_denials(errors: list[str], denial: Denial) -> list[str]:
    """Type errors as the gateway's check of saved scripts lists them, each that finds a
    tool missing from a server's type followed by what the policy says of it (a saved
    script whose tool a rule now denies: "not on the type" alone sends the user looking)."""
    told = []
    for error in errors:
        missing = _MISSING_ON_TYPE.search(error)
        said = None if missing is None else denial(missing[2], missing[1])
        told.append(error if said is None else f"{error.rstrip('.')}; {said}")
    return told


# A run's input missing properties: TypeScript names the missing ones ("...: a, b" or
# "...: a, b, and 3 more"; one: "Property 'a' is missing in type '{}' but required in type").
_MISSING_INPUT = re.compile(
    r"missing the following properties from type '.{0,2000}': ([\w$]+(?:, (?!and \d)[\w$]+){0,30})"
    r"|Property '([\w$]{1,200})' is missing in type '.{0,2000}' but required in type"
)
_NAME = re.compile(r"[A-Za-z_$][\w$]{0,200}")


class _ErrorRewriter:
    """Error lines name the user's script and ``toolscript``, not cache paths and secret URLs,
    and point at the user's own lines and columns, not the wrapper's. One per run: it
    remembers what earlier lines began (an excerpt, a stack, V8's fatal dump)."""

    def __init__(
        self,
        script_path: Path,
        display_name: str,
        gateway_url: str,
        module_path: Path | None = None,
        source_map: SourceMap | None = None,
        denial: Denial | None = None,
        run_command: str = "",
    ) -> None:
        self.denial = denial
        self.run_command = run_command
        # The module's spellings, compiled at the first line to rewrite (most runs print
        # none to stderr): the run's URL holds its token, so no two runs share the pattern,
        # and compiling it was about 1 ms of the MCP face's CPU an execute.
        spellings = [re.escape(gateway_url) + r"/runtime/tools\.ts(?:\?_t=[\w-]+)?"]
        if module_path is not None:
            spellings.append(r"(?:file://)?" + re.escape(str(module_path)))
        self.module_spellings = "|".join(spellings)
        # The copies of the saved scripts beside the module: named as the project's files
        # (a type error in calling one points into it).
        self.scripts_spelling = (
            None
            if module_path is None
            else r"(?:file://)?" + re.escape(f"{module_path.with_suffix('')}.scripts/")
        )
        # The prepared script's path in any spelling (absolute, file://, relative): found by
        # its literal tail, then extended back over path characters. Linear in the line's
        # length, where a regex with a lazy prefix took seconds on one long line.
        self.tail = f"/{script_path.parent.name}/{script_path.name}"
        self.display_name = display_name
        self.strip_colors = not sys.stderr.isatty()
        self.mapping = source_map or SourceMap([])
        self.position = re.compile(re.escape(display_name) + r":(\d{1,9}):(\d{1,9})(?!\d)")
        self.quoted: list[tuple[int, str]] = []  # the wrapper line an excerpt showed, for its caret
        self.after_frame = False  # the last line was a stack frame (the first one is the place)
        self.dying = False  # V8's fatal-error dump began
        self.module_path = module_path
        self.in_lock_diff = False  # the lines after "The lockfile is out of date"
        self.module_text: str | None = None  # read at the first type error naming a type
        self.members: dict[str, list[str] | None] = {}  # of the types looked up, by name

    def __call__(self, line: bytes) -> bytes:
        if self.dying or line.startswith(_V8_DUMP):
            self.dying = True  # V8's last words: exec says what happened in one line instead
            return b""
        text = line.decode("utf-8", "replace")
        # Rewritten on its plain text: on a terminal Deno colours a path's parts, so its
        # escape codes sit inside the paths and positions the rewrite reads. A line the
        # rewrite changes loses its colours; any other keeps them.
        plain = _ANSI.sub("", text)
        if _CHECK_ADVICE.match(plain):
            return b""  # advice to skip type checks: no way forward for whoever reads errors
        told = self.undeclared(plain)
        if told is not None:
            return told.encode()
        rewritten = self.with_members(self.rewrite_plain(plain))
        shown = text if rewritten == plain and not self.strip_colors else rewritten
        return (shown + self.input_hint(plain)).encode()

    def input_hint(self, text: str) -> str:
        """After a saved script's run misses properties of its input, how to give them."""
        if not self.run_command or (missing := _MISSING_INPUT.search(text)) is None:
            return ""
        names = missing[1] or missing[2]
        shown = ", ".join(
            f"{json.dumps(name)}: ..." for name in names.split(", ") if _NAME.fullmatch(name)
        )
        return f"  hint: give its input: {self.run_command} --input '{{{shown}}}'\n"

    def with_members(self, text: str) -> str:
        """A type error naming one of the module's object types lists its members: the
        agent that wrote ``{ tz: ... }`` or ``.time`` fixes it without asking get-types. One
        on an untyped result (``ToolResult``) says how to learn its shape."""
        if "type '" not in text or not _DIAGNOSTIC.match(text):
            return text
        if (untyped := _TOOL_RESULT.search(text)) is not None:
            end = untyped.end()
            return text[:end] + UNTYPED_RESULT + text[end:]
        if self.module_path is None:
            return text
        from toolscript.codegen.module import NAMED_TYPE

        return NAMED_TYPE.sub(functools.partial(self.listed, text), text)

    def listed(self, text: str, found: re.Match[str]) -> str:
        from toolscript.codegen.module import members_listed

        members = self.members_of(found[1])
        said = found[0] + members_listed(members) if members else found[0]
        denied = self.denied(text[max(0, found.start() - _MEMBER_SPAN) : found.start()], found[1])
        return said if denied is None else f"{said}; {denied}"

    def denied(self, before: str, type_name: str) -> str | None:
        """What the policy says of a tool a script calls and a server's type lacks ("Property
        'wipe' does not exist on type 'SumsTools'"): a denied tool is left out of the types,
        and the agent told only the members looks for it."""
        if self.denial is None or (missing := _MISSING_PROPERTY.search(before)) is None:
            return None
        if self.module_text is None:
            self.members_of(type_name)  # reads the module
        namespace = re.search(
            rf"^  ([A-Za-z_$][\w$]*): {re.escape(type_name)};$", self.module_text or "", re.M
        )
        return None if namespace is None else self.denial(namespace[1], missing[1])

    def members_of(self, name: str) -> list[str] | None:
        if name in self.members or len(self.members) >= MAX_TYPES_LOOKED_UP:
            return self.members.get(name)
        from toolscript.codegen.module import declared_members

        if self.module_text is None:
            assert self.module_path is not None
            try:
                self.module_text = self.module_path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                self.module_text = ""
        found = self.members[name] = declared_members(self.module_text, name)
        return found

    def hint(self) -> str:
        found = packages_beside(self.module_path) if self.module_path is not None else None
        return declare_hint(found.names if found is not None else [])

    def undeclared(self, text: str) -> str | None:
        """Deno's refusals of a package the project does not offer, in toolscript's words:
        how to declare it (Deno's own advice, ``deno add``, is not the sandbox's way)."""
        if self.in_lock_diff:
            if _LOCK_DIFF.match(text):
                added = _ADDED_SPECIFIER.search(text)
                return f"  not declared: {added[1]}\n" if added else ""
            self.in_lock_diff = False
        if "--no-npm is specified" in text:
            return f"error: {_UNDECLARED} (tried an npm package): {self.hint()}\n"
        if "The lockfile is out of date" in text:
            self.in_lock_diff = True
            return f"error: {_UNDECLARED}, at the versions it declares: {self.hint()}\n"
        if (found := _NOT_CACHED.search(text)) is not None:
            return f"error: {_UNDECLARED} (tried npm:{found[1]}): {self.hint()}\n"
        if "npm package not found in cache" in text:
            return ""
        if (lost := _LOST.match(text)) is not None:
            return (
                f"error: the package {lost[1]} is locked but gone from toolscript's package "
                "cache (removed since the gateway fetched it): restart the gateway "
                "(toolscript gateway start), which fetches it again\n"
            )
        if _DENO_ADD.match(text):
            return f"  hint: {self.hint()}\n"
        return None

    @functools.cached_property
    def module(self) -> re.Pattern[str]:
        return re.compile(self.module_spellings)

    @functools.cached_property
    def saved_scripts(self) -> re.Pattern[str] | None:
        return None if self.scripts_spelling is None else re.compile(self.scripts_spelling)

    def rewrite_plain(self, text: str) -> str:
        text = self.module.sub("toolscript", self.name_script(text))
        if ".scripts/" in text and self.saved_scripts is not None:
            text = self.saved_scripts.sub("toolscripts/", text)
        if "access to" in text or "Failed to spawn" in text:
            text = _REFUSAL.sub(_refusal, text)
        if not self.mapping.wrapped:
            return text
        body, newline = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        if self.quoted:
            return self.caret(body) + newline
        if _FRAME.match(body):
            frame = self.position.search(body)
            follows_frame, self.after_frame = self.after_frame, True
            if follows_frame and frame and not self.mapping.is_users(int(frame[1])):
                return ""  # the wrapper calling the user's code: not the user's to read
        else:
            self.after_frame = False
            if (shown := self.excerpt(body)) is not None:
                return shown + newline
        return self.position.sub(self.user_position, body) + newline

    def name_script(self, text: str) -> str:
        parts, done = [], 0
        while (found := text.find(self.tail, done)) != -1:
            start = found
            while start > done and text[start - 1] not in _PATH_STOPS:
                start -= 1
            parts += [text[done:start], self.display_name]
            done = found + len(self.tail)
        parts.append(text[done:])
        return "".join(parts)

    def user_position(self, found: re.Match[str]) -> str:
        line, column = self.mapping.position(int(found[1]), int(found[2]))
        return f"{self.display_name}:{line}:{column}"

    def excerpt(self, text: str) -> str | None:
        """The user's line for an excerpt of the wrapper (None: not a wrapper line)."""
        mapping = self.mapping
        gutter = _GUTTER.match(text)
        body = gutter[4] if gutter else text
        restored = mapping.restored_line(body)
        if restored is not None:  # the same columns: the caret line below stays as it is
            line, users = restored
            return f"{gutter[1]}{line}{gutter[3]}{users}" if gutter else users
        original = mapping.original_line(body)
        if original is None:
            if gutter and mapping.wrapped and mapping.is_users(int(gutter[2])):
                return f"{gutter[1]}{int(gutter[2]) - 1}{gutter[3]}{gutter[4]}"
            return None
        line, users = original
        self.quoted.append((line, body))
        return f"{gutter[1]}{line}{gutter[3]}{users}" if gutter else users

    def caret(self, text: str) -> str:
        line, body = self.quoted.pop()
        found = _CARET.match(text)
        if found is None:
            return text
        generated = len(found[2]) + 1
        if body == self.mapping.head:
            column = self.mapping.position(1, generated)[1]
            underline = found[3]
        else:
            column = len(self.mapping.user_lines[line - 1]) + 1
            underline = found[3][0]
        return f"{found[1]}{' ' * (column - 1)}{underline}"


_rewriter = _ErrorRewriter  # what run_toolscript and the tests make one with


def _run_rewriter(
    script: Script,
    script_path: Path,
    gateway_url: str,
    module: Path | None,
    source_map: SourceMap | None,
    streams: _Streams,
) -> _ErrorRewriter:
    """The rewriter of a run's error lines: its script's name and ``run`` command, its module,
    and the policy's sentence for a denied tool its type errors name."""
    return _rewriter(
        script_path,
        script.display_name,
        gateway_url,
        module,
        source_map,
        streams.denial,
        script.run_command,
    )


def run_toolscript(
    script: Script,
    gateway_url: str,
    module_hash: str,
    *,
    module: Path | None = None,
    on_start: Callable[..., None] | None = None,
    check: bool = True,
    limits: Limits = DEFAULT_LIMITS,
    stdout: Sink | None = None,
    stderr: Sink | None = None,
    advice: Advice = DEFAULT_ADVICE,
    warm_check: bool = False,
    script_url: str | None = None,
    spill: Path | None = None,
    spare: Spare | None = None,
    checker: Checker | None = None,
    denial: Denial | None = None,
    gate: Gate | None = None,
) -> int:
    """Run ``script`` to completion, streaming its output; returns the exit code.

    ``module`` is the gateway's module as a local file (its checks stay cached whatever
    gateway served it); without it the script imports the module from the gateway.
    With ``warm_check`` the gateway's warm checker checks the script first; when it cannot
    answer, Deno checks it as it starts. Output goes to ``stdout`` and ``stderr`` (ours by
    default; a terminal sees control characters as escapes), error lines rewritten. Deno's
    stdin is /dev/null: what is piped to exec is not the script's to read. The script
    reaches the gateway at ``script_url`` (its
    run's URL, see ``execution/runhandle.py``; ``gateway_url`` when None). With ``spill``,
    stdout past ``max_output`` goes to that file with the rest (exit 123, a preview printed)
    instead of stopping the script. ``spare``: a Deno spawned ahead (``execution/spare.py``)
    that runs the script when it fits this run and no Deno check is needed; it is used or
    discarded here either way. ``checker`` asks the warm checker without HTTP (the MCP
    face's own gateway: ``LocalGateway.check``); None from it, as without it, asks over HTTP.
    ``denial`` says when a tool a type error finds missing is one the policy denies. With
    ``gate`` (and a ready warm checker, a spare that fits, a script not checked before), the
    spare runs the script while the checker checks it, every request of the run held at the
    gateway until the verdict (``_run_while_checked``).
    """
    try:
        script_url = script_url or gateway_url
        script_path, prepared = _write_script(script)
    except BaseException:
        if spare is not None:
            spare.discard()
        raise
    try:
        source_map = prepared.map
        streams = _Streams(
            _for_people(stdout if stdout is not None else sys.stdout.buffer, own=stdout is None),
            _for_people(stderr if stderr is not None else sys.stderr.buffer, own=stderr is None),
            advice,
            denial,
        )
        if (
            check
            and warm_check
            and module is not None
            and gate is not None
            and spare is not None
            and not _passed_mark(script_path, module_hash).exists()
            and not uses_node(prepared.code)  # the checker leaves it to deno check
            and spare.fits(script_url, module, limits.memory_mb)
            and gate.hold()
        ):
            ran = _run_while_checked(
                _Checked(gateway_url, script_path, prepared.code, module, module_hash, checker),
                gate,
                spare,
                script,
                script_url,
                on_start,
                limits,
                streams,
                source_map,
                spill,
            )
            if isinstance(ran, int):
                return ran
            script_url, spare = ran, None  # Deno checks it as it starts, with a fresh token
        elif check and warm_check and module is not None:
            status, output = _warm_check(
                gateway_url, script_path, prepared.code, module, module_hash, checker
            )
            if status == "failed":
                _tell_check_failure(
                    output, script, script_path, gateway_url, module, streams, source_map
                )
                if spare is not None:
                    spare.discard()
                return 1  # what deno exits with when a check fails; nothing of the script ran
            check = status != "passed"
        if spare is not None:
            if (
                not check
                and module is not None
                and spare.fits(script_url, module, limits.memory_mb)
            ):
                return _run_in_spare(
                    spare,
                    prepared.code,
                    script,
                    script_url,
                    on_start,
                    limits,
                    streams,
                    module,
                    source_map,
                    spill,
                )
            spare.discard()
        _close_web_storage(deno_cache_dir())
        imports = {
            "toolscript": (
                module.as_uri() if module else f"{script_url}/runtime/tools.ts?_t={module_hash}"
            ),
            "file:///": REFUSED_FILE_URL,
            script_path.as_uri(): script_path.as_uri(),
        }
        packages = None
        if module is not None:
            imports[module.as_uri()] = module.as_uri()
            imports.update(module_imports(module))  # the saved scripts it offers
            packages = packages_beside(module)
            if packages is not None:
                imports.update(import_entries(packages.packages))
        # The check's libs leave Node's types out, unless the script (or the module) uses Node.
        config = None
        if check and not _uses_node(prepared.code, module):
            # With packages, the config declares them as their fetch did (a frozen lock's
            # `workspace` part is compared with a config's imports).
            declared = {p.name: p.specifier for p in packages.packages} if packages else None
            config = shared_check_config(declared)
        if config is not None:
            imports.update(check_imports())
        import_map = {"imports": imports}
        map_path = write_private(
            user_cache_dir() / "run" / f"importmap-{os.getpid()}-{threading.get_ident()}.json",
            json.dumps(import_map),
        )
        # Colors would reach a terminal as escapes (control characters are shown, not obeyed).
        env = {"TOOLSCRIPT_GATEWAY_URL": script_url, "NO_COLOR": "1"}
        try:
            npm = npm_set(deno_cache_dir(), _read(packages.lock)) if packages else None
            with run_deno_dir(packages=packages is not None, npm=npm) as deno_dir:
                _close_web_storage(deno_dir)
                env.update(deno_environment(deno_dir))
                command = _command(
                    script_path,
                    script_url,
                    map_path,
                    check,
                    limits,
                    module is None,
                    packages,
                    config=config,
                )
                exit_code = _start_and_supervise(
                    command,
                    env,
                    on_start,
                    script,
                    script_path,
                    script_url,
                    limits,
                    streams,
                    module,
                    source_map,
                    spill,
                )
                if check and exit_code == 0:
                    # Deno checked it (the warm checker could not): the next run of the same
                    # script needs no check, and the MCP face's spare can take it (measured: a
                    # run checked by Deno again, its check cached, took 90-210 ms against 25-35
                    # in a spare, under load).
                    with contextlib.suppress(OSError):
                        write_private(_passed_mark(script_path, module_hash), "")
                return exit_code
        finally:
            map_path.unlink(missing_ok=True)
            streams.finish()
    finally:
        _forget_script(script_path)


def _tell_check_failure(
    output: str,
    script: Script,
    script_path: Path,
    gateway_url: str,
    module: Path,
    streams: _Streams,
    source_map: SourceMap,
) -> None:
    """A failed check's errors, as the script's own (its lines and names, not the copy's)."""
    rewrite = _run_rewriter(script, script_path, gateway_url, module, source_map, streams)
    lines = output.encode().splitlines(keepends=True)
    streams.write_error(b"".join(rewrite(line) for line in lines))
    streams.finish()


class _Checked(NamedTuple):
    """What ``_warm_check`` is asked with."""

    gateway_url: str
    script_path: Path
    code: str
    module: Path
    module_hash: str
    checker: Checker | None

    def verdict(self) -> tuple[str, str]:
        try:
            return _warm_check(*self)
        except Exception:  # a fault of the check's: Deno checks the script itself
            return "unavailable", ""


class _Verdict:
    """A check's verdict on the script that runs beside it (``answer``: the warm checker's
    status and output): the run's timeout counts from it (``decided``: ``_wait_within``), and
    any other than a pass kills the script's process, handed over before it or after
    (``watch``). Killed through its ``Popen`` while it is not reaped, never by a pid alone: a
    script that ended before a slow verdict has its pid (and process group) free for another
    process by then."""

    def __init__(self) -> None:
        self.decided = threading.Event()
        self.answer = ("unavailable", "")
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def passed(self) -> bool:
        return self.answer[0] == "passed"

    def watch(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._process = process
            refused = self.decided.is_set() and not self.passed
        if refused:
            _kill_running(process)

    def give(self, answer: tuple[str, str]) -> None:
        with self._lock:
            self.answer = answer
            self.decided.set()
            process = self._process
        if process is not None and not self.passed:
            _kill_running(process)


def _run_while_checked(
    checked: _Checked,
    gate: Gate,
    spare: Spare,
    script: Script,
    script_url: str,
    on_start: Callable[..., None] | None,
    limits: Limits,
    streams: _Streams,
    source_map: SourceMap,
    spill: Path | None,
) -> int | str:
    """The spare runs a new script while the warm checker checks it (measured: the check was
    12-50 ms of a new script's execute, before the script could start). Nothing of the script
    reaches anyone before the verdict: its requests wait at the gateway (``gate``, held by
    the caller), what it prints is kept (``_Gated``), its timeout counts from the verdict.
    Passed: all of it goes on. Failed: the process is killed, its requests refused, its
    output dropped, and the check's errors are the answer, as when it was checked first. No
    verdict (the checker failed): the same, and the fresh URL (``Gate.reissue``) is returned
    for a run checked by Deno itself. Returns the exit code, or that URL."""
    verdict = _Verdict()
    gated = _Gated(streams.stdout), _Gated(streams.stderr)

    def check() -> None:
        answer = ("unavailable", "")
        try:
            answer = checked.verdict()
            with contextlib.suppress(ToolscriptError):  # a gateway gone answers nothing anyway
                gate.settle(answer[0] == "passed")
        finally:
            verdict.give(answer)
            for stream in gated:
                stream.open(verdict.passed)

    checking = threading.Thread(target=check, daemon=True, name="check beside the run")
    checking.start()
    try:
        exit_code = _run_in_spare(
            spare,
            checked.code,
            script,
            script_url,
            on_start,
            limits,
            streams._replace(stdout=gated[0], stderr=gated[1]),
            checked.module,
            source_map,
            spill,
            verdict,
        )
    finally:
        checking.join()
    status, output = verdict.answer
    if status == "passed":
        streams.finish()
        return exit_code
    if status == "failed":
        _tell_check_failure(
            output,
            script,
            checked.script_path,
            checked.gateway_url,
            checked.module,
            streams,
            source_map,
        )
        return 1
    fresh = gate.reissue()
    if fresh is None:
        raise GatewayUnreachableError(
            "the gateway stopped answering while the script was checked",
            hint="call the tool again",
        )
    return fresh


def _uses_node(code: str, module: Path | None) -> bool:
    """Whether the check is Deno's default lib's (Node's types, as before): the script uses
    Node, or a saved script its module offers does (as the warm checker decides)."""
    return uses_node(code) or (module is not None and offers_node(module))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""  # no lock, no packages: Deno says so


def _run_in_spare(
    spare: Spare,
    code: str,
    script: Script,
    script_url: str,
    on_start: Callable[..., None] | None,
    limits: Limits,
    streams: _Streams,
    module: Path,
    source_map: SourceMap,
    spill: Path | None,
    verdict: _Verdict | None = None,
) -> int:
    """``_start_and_supervise`` with the spare's process: the script and the run's URL handed
    in, then supervised as a fresh one is (its errors name the user's script, not the copy).
    ``verdict``: of the check under way beside it (``_run_while_checked``)."""
    try:
        process = spare.hand_over(code, script_url)
        if on_start is not None:
            on_start(process.pid, group=True)
        if verdict is not None:
            verdict.watch(process)
        try:
            return _supervise(
                process,
                script,
                spare.script_path,
                script_url,
                limits,
                streams,
                module,
                source_map,
                spill,
                verdict.decided if verdict is not None else None,
            )
        except BaseException:
            _kill(process)
            process.wait()
            raise
    finally:
        spare.close()
        streams.finish()


def _start_and_supervise(
    command: list[str],
    env: dict[str, str],
    on_start: Callable[..., None] | None,
    script: Script,
    script_path: Path,
    script_url: str,
    limits: Limits,
    streams: _Streams,
    module: Path | None,
    source_map: SourceMap,
    spill: Path | None,
) -> int:
    try:
        process = subprocess.Popen(
            command,
            cwd=SANDBOX_FOLDER,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise deno_start_error(exc) from exc
    try:
        if on_start is not None:
            on_start(process.pid, group=True)
        return _supervise(
            process, script, script_path, script_url, limits, streams, module, source_map, spill
        )
    except BaseException:
        # Ctrl+C or a signal turned into an exception: the sandbox (its own session, which
        # the terminal's Ctrl+C does not reach) stops with us.
        _kill(process)
        process.wait()
        raise


class _Streams(NamedTuple):
    stdout: Sink
    stderr: Sink
    advice: Advice
    denial: Denial | None = None  # what the policy says of a missing tool (policy_denial)

    def finish(self) -> None:
        for stream in (self.stdout, self.stderr):
            if isinstance(stream, _Shown):
                stream.finish()

    def say(self, message: str) -> None:
        self.write_error(f"toolscript: error: {message}\n".encode())

    def write_error(self, data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.stderr.write(data)
            self.stderr.flush()


def _supervise(
    process: subprocess.Popen[bytes],
    script: Script,
    script_path: Path,
    gateway_url: str,
    limits: Limits,
    streams: _Streams,
    module: Path | None = None,
    source_map: SourceMap | None = None,
    spill: Path | None = None,
    clock: threading.Event | None = None,
) -> int:
    assert process.stdout is not None and process.stderr is not None
    # One budget for both streams: --max-output caps what is printed in all. Spilling, the
    # stdout that does not fit goes to the file; stderr past the budget stops the script,
    # unless it has a part of its own (``Limits.errors_kept``, the MCP face's).
    budget = _Budget(limits.max_output, process)
    rewrite = _run_rewriter(script, script_path, gateway_url, module, source_map, streams)
    out = (
        _SpillingPump(
            process.stdout,
            streams.stdout,
            budget,
            spill,
            min(max(16 * limits.max_output, SPILL_MINIMUM), kept_output_limit()),
        )
        if spill is not None
        else _Pump(process.stdout, streams.stdout, budget, None)
    )
    errors: _Pump = (
        _ErrorsPump(
            process.stderr,
            streams.stderr,
            budget,
            rewrite,
            errors_file(spill),
            limits.errors_kept,
            min(max(16 * limits.max_output, SPILL_MINIMUM), kept_output_limit()),
        )
        if spill is not None and limits.errors_kept
        else _Pump(process.stderr, streams.stderr, budget, rewrite)
    )
    pumps = [out, errors]
    for pump in pumps:
        pump.start()
    memory = _MemoryWatch(process, process_memory_cap(limits.memory_mb))
    memory.start()
    timed_out = _wait_within(process, limits.timeout, clock)
    memory.stop.set()
    for pump in pumps:
        pump.join(60 if isinstance(pump, _SpillingPump | _ErrorsPump) else 5)
    ended = _Ended(
        script, limits, streams, out, timed_out, budget, memory, process.returncode, pumps[1].tail
    )
    for outcome in _OUTCOMES:
        if outcome.applies(ended):
            outcome.tell(ended)
            if outcome.exit_code is not None:
                return outcome.exit_code
            break
    code = process.returncode
    return code if code >= 0 else 128 - code


def _wait_within(
    process: subprocess.Popen[bytes], timeout: float | None, clock: threading.Event | None = None
) -> bool:
    """Wait for ``process`` to exit, killing it (and saying True) once ``timeout`` seconds
    have passed (counted from when ``clock`` is set, when given: within WARM_CHECK_WAIT, the
    check's verdict). A blocking wait with a timer, not ``Popen.wait(timeout)``: that one
    polls, sleeping up to 50 ms between looks, so a run was noticed late by up to half its
    length."""
    expired = threading.Event()
    ended = threading.Event()

    def expire() -> None:
        if clock is not None:
            clock.wait()
        if not ended.wait(timeout):
            expired.set()
            _kill(process)

    if timeout:
        threading.Thread(target=expire, daemon=True, name="run timeout").start()
    try:
        process.wait()
    finally:
        ended.set()
    return expired.is_set()


class _Ended(NamedTuple):
    """What a run's supervision saw by the time Deno exited."""

    script: Script
    limits: Limits
    streams: _Streams
    out: _Pump
    timed_out: bool
    budget: _Budget
    memory: _MemoryWatch
    code: int
    stderr_tail: bytes

    @property
    def spilling(self) -> _SpillingPump | None:
        return self.out if isinstance(self.out, _SpillingPump) else None

    @property
    def stopped(self) -> bool:
        """Stopped by a limit other than the output's."""
        return self.timed_out or self.budget.exhausted.is_set() or self.memory.exceeded.is_set()


class _Outcome(NamedTuple):
    """A way a run ends: when it applies, what the user is told, the exit code."""

    applies: Callable[[_Ended], bool]
    tell: Callable[[_Ended], None]
    exit_code: int | None  # None: Deno's own


def _say(message: Callable[[_Ended], str]) -> Callable[[_Ended], None]:
    return lambda ended: ended.streams.say(message(ended))


def _spill_full(ended: _Ended) -> str:
    out = ended.spilling
    assert out is not None
    return (
        f"the toolscript printed more than {out.limit} bytes and was stopped "
        f"({ended.streams.advice.output}); "
        + (f"those bytes are in {out.spill}" if out.unkept is None else out.whereabouts())
    )


def _spilled(ended: _Ended) -> None:
    assert ended.spilling is not None
    _show_spill(ended.spilling, ended.script.result_marker, ended.limits, ended.streams)


def _out_of_memory(ended: _Ended) -> bool:
    return ended.code in (133, -signal.SIGTRAP, 134, -signal.SIGABRT) or any(
        marker in ended.stderr_tail for marker in _OOM_MARKERS
    )


# The first that applies is how the run ended; none: Deno's own exit code.
_OUTCOMES: tuple[_Outcome, ...] = (
    _Outcome(
        lambda ended: ended.spilling is not None and ended.spilling.full.is_set(),
        _say(_spill_full),
        EXIT_OUTPUT,
    ),
    _Outcome(
        lambda ended: ended.spilling is not None and ended.spilling.spilling and not ended.stopped,
        _spilled,
        EXIT_OUTPUT,
    ),
    _Outcome(
        lambda ended: ended.timed_out,
        _say(
            lambda ended: (
                f"the toolscript ran longer than {ended.limits.timeout:g} s and was "
                f"stopped ({ended.streams.advice.timeout})"
            )
        ),
        EXIT_TIMEOUT,
    ),
    _Outcome(
        lambda ended: ended.budget.exhausted.is_set(),
        _say(
            lambda ended: (
                f"the toolscript printed more than {ended.limits.max_output} bytes "
                f"and was stopped ({ended.streams.advice.output})"
            )
        ),
        EXIT_OUTPUT,
    ),
    _Outcome(
        lambda ended: ended.memory.exceeded.is_set(),
        _say(
            lambda ended: (
                f"the toolscript used more than {ended.memory.cap // (1024 * 1024)} "
                f"MB of memory in all ({ended.limits.memory_mb} MB of heap, plus buffers, "
                f"WebAssembly and workers) and was stopped ({ended.streams.advice.memory})"
            )
        ),
        EXIT_MEMORY,
    ),
    _Outcome(
        _out_of_memory,
        _say(
            lambda ended: (
                f"the toolscript ran out of memory (limit {ended.limits.memory_mb} "
                f"MB, {ended.streams.advice.memory})"
            )
        ),
        EXIT_MEMORY,
    ),
    _Outcome(
        lambda ended: _foreign_signal(ended.code) is not None,
        _say(lambda ended: _killed_by(_foreign_signal(ended.code))),
        None,  # Deno's own: 128 + the signal, as a shell reports it
    ),
)

# Signals toolscript and the user's terminal end a run with, each said elsewhere (limits,
# Ctrl+C, `runs stop`, a closed pipe); SIGTRAP and SIGABRT are V8's out-of-memory above.
_OWN_SIGNALS = frozenset(
    {signal.SIGINT, signal.SIGTERM, signal.SIGKILL, signal.SIGHUP, signal.SIGPIPE}
)
# What a signal from outside says about the machine, and what to do next.
_SIGNAL_CAUSES = {
    "SIGXFSZ": "a file grew past the file-size limit (`ulimit -f`) while Deno wrote its "
    "cache or the run's output: raise the limit (`ulimit -f unlimited`), then run it again",
    "SIGSEGV": "Deno crashed: run it again, and if it crashes again, with `--debug`",
    "SIGBUS": "a file Deno had mapped shrank or a disk failed (a full disk?): free disk "
    "space, then run it again",
}


def _foreign_signal(code: int) -> signal.Signals | None:
    """The signal Deno was ended by, when none of toolscript's own ways to end a run sent it."""
    if code >= 0:
        return None
    try:
        ended_by = signal.Signals(-code)
    except ValueError:
        return None
    return None if ended_by in _OWN_SIGNALS else ended_by


def _killed_by(ended_by: signal.Signals | None) -> str:
    assert ended_by is not None
    cause = _SIGNAL_CAUSES.get(ended_by.name, "sent from outside toolscript")
    return f"the sandbox (Deno) was killed by {ended_by.name}: {cause}"


PREVIEW_BYTES = 16 * 1024
PREVIEW_PARSE_LIMIT = 64 * 1024 * 1024  # held output past this is previewed as text


def _show_spill(pump: _SpillingPump, result_marker: str, limits: Limits, streams: _Streams) -> None:
    """What did not fit: a preview of it on stdout (valid JSON when it is JSON, behind the
    result marker when it was the script's return value), one line on stderr."""
    from toolscript.store.outputs import preview

    size = pump.total
    printed = len(pump.printed)
    held = bytes(pump.held)
    marker = result_marker.encode()
    returned = bool(marker) and held.startswith(marker)
    text, _ = preview(
        held[len(marker) :] if returned else held, min(PREVIEW_BYTES, limits.max_output)
    )
    shown = (result_marker if returned else "") + text + "\n"
    with contextlib.suppress(BrokenPipeError, ValueError):
        streams.stdout.write(shown.encode())
        streams.stdout.flush()
    streams.write_error(
        f"toolscript: output cut: {size - printed} of its {size} bytes did not fit in "
        f"{limits.max_output} ({streams.advice.output}); above is a preview, and "
        f"{pump.whereabouts()}\n".encode()
    )


def _kill(process: subprocess.Popen[bytes]) -> None:
    signal_quietly(process.pid, signal.SIGKILL, group=True)


def _kill_running(process: subprocess.Popen[bytes]) -> None:
    """``_kill`` unless it was reaped (its pid may be another process's by now)."""
    if process.poll() is None:
        _kill(process)
