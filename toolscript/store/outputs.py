"""Output that does not fit: the whole of it kept in the run's directory, and a preview.

When a script prints more than its cap, what was not printed is kept with the rest in
``<project state>/runs/<run id>/output.txt`` (its stderr, cut in the MCP face, in
``errors.txt`` beside it; 0600; the newest ``KEEP`` such directories
and at most ``MAX_BYTES``, or ``TOOLSCRIPT_KEPT_OUTPUT_MB``, are kept), and a preview takes its place: valid JSON when the
output is JSON (the first items of each array and keys of each object, with counts of
what was left out), else the first lines.

A script's output shown to a person (a terminal, the MCP face's text) has its control
characters made visible (``visible_controls``): a script must not set the terminal's title,
write its clipboard (OSC 52) or clear the screen.

That byte budget is also shared by the kept outputs of every project, across processes, as
they are written (``KeptOutput``): each file reserves its room under a lock in the folder of
every project's state before it grows, the oldest finished outputs of any project going
first, and a file that finds no room is not kept (many runs, or projects, each writing
their 512 MB filled the disk).

Stdlib only: the exec path imports it.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any, TextIO

from toolscript.plumbing.jsonvalues import json_values

__all__ = [
    "ERROR_PREFIX",
    "HINT_PREFIX",
    "KEEP",
    "KIND_PREFIX",
    "MAX_BYTES",
    "BudgetFull",
    "KeptOutput",
    "VisibleControls",
    "error_lines",
    "errors_file",
    "json_preview",
    "kept_output",
    "kept_output_limit",
    "open_output",
    "output_file",
    "preview",
    "prune_outputs",
    "visible_controls",
    "write_shown",
]

KEEP = 20
MAX_BYTES = 512 * 1024 * 1024
MORE_KEY = "…"  # the key that counts an object's keys left out
# JSON values a preview parses at most (counted by their commas and openers): Python holds
# each as an object of 30 to 100 bytes, so 60 MB of `[{},{},...]` a script printed took
# exec 1.5 GB. Past it, the preview is the output's first lines.
PREVIEW_VALUES = 2_000_000
# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional formatting
# characters (which reorder what a terminal shows after them: "Trojan Source"); shown as
# JSON escapes (\u001b), which keep a JSON text valid and its value the same where one
# stood in one of its strings.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible_controls(text: str) -> str:
    """``text`` with its control characters (ESC, BEL, CR, C1, bidi overrides...) as
    visible escapes."""
    return _CONTROLS.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def write_shown(text: str, stream: TextIO) -> None:
    """Write ``text`` to ``stream``: on a terminal with its control characters as escapes,
    as what a server or a repository's file says is shown, never obeyed (a ``\\r`` and an
    erased line would hide the command ``trust`` names); elsewhere as it is."""
    stream.write(visible_controls(text) if stream.isatty() else text)


# The line after an ephemeral gateway's error (and hint) naming its kind ("storage_error"):
# the run that started it answers ``--json`` with the gateway's own kind, not "error".
KIND_PREFIX = "kind: "
# An error's line and its hint's as the CLI writes them (``error_lines``), as the run that
# started an ephemeral gateway reads them back.
ERROR_PREFIX = "toolscript: error: "
HINT_PREFIX = "hint: "


def error_lines(message: str, hint: str | None, terminal: bool) -> str:
    """An error as the CLI writes it on stderr (``toolscript: error: ...`` and its hint); on
    a ``terminal`` with its control characters as escapes: it may quote what a server sent
    or a repository's file names."""
    if terminal:
        message, hint = visible_controls(message), hint and visible_controls(hint)
    return f"{ERROR_PREFIX}{message}\n" + (f"{HINT_PREFIX}{hint}\n" if hint else "")


class VisibleControls:
    """``visible_controls`` over a byte stream that arrives in pieces (UTF-8; what is not
    UTF-8 becomes U+FFFD, so no stray byte can act as a C1 control either)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, final: bool = False) -> bytes:
        return visible_controls(self._decoder.decode(data, final)).encode()


def output_file(state_dir: Path, run_id: str) -> Path:
    """Where the whole output of ``run_id`` goes (nothing is made until it is written)."""
    return state_dir / "runs" / run_id / "output.txt"


def errors_file(output: Path) -> Path:
    """Where the whole stderr of the run whose output is ``output`` goes, when it is cut
    (the MCP face's runs)."""
    return output.with_name("errors.txt")


def kept_output_limit() -> int:
    """Bytes that kept outputs may take in all: ``MAX_BYTES``, or
    ``TOOLSCRIPT_KEPT_OUTPUT_MB`` megabytes when that is set (a number)."""
    chosen = os.environ.get("TOOLSCRIPT_KEPT_OUTPUT_MB", "").strip()
    try:
        return max(0, int(float(chosen) * 1024 * 1024)) if chosen else MAX_BYTES
    except ValueError:
        return MAX_BYTES


RESERVE_STEP = 8 * 1024 * 1024  # room a kept file reserves at a time
RESERVED_SUFFIX = ".reserved"  # beside a file being written: the bytes it reserved
SHARED_LOCK_NAME = ".kept-outputs.lock"


class BudgetFull(OSError):
    """The kept outputs of all runs take their whole budget: this one is not kept."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            errno.ENOSPC,
            f"the kept outputs of all runs reached their {limit // (1024 * 1024)} MB "
            "(set TOOLSCRIPT_KEPT_OUTPUT_MB for more)",
        )


def _projects_folder(path: Path) -> Path:
    """The folder of every project's state, for a run's output file ``path``
    (``<projects>/<project>/runs/<run id>/output.txt``)."""
    return path.parents[3] if len(path.parents) > 3 else path.parent


@contextlib.contextmanager
def _shared_lock(projects: Path) -> Any:
    descriptor = os.open(
        projects / SHARED_LOCK_NAME,
        os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0),
        0o600,
    )
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


# Opens a file of the state folder that something else than a run may have put there (a
# FIFO, whose open would wait for a writer, under the lock every kept output takes; a link)
_PLANTED_SAFE = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK


def _regular(descriptor: int) -> bool:
    return stat.S_ISREG(os.fstat(descriptor).st_mode)


def _being_written(folder: Path) -> bool:
    """A kept file of ``folder`` is held by its writer (an flock the OS lets go when that
    process ends, however it ends)."""
    for name in ("output.txt", "errors.txt"):
        try:
            descriptor = os.open(folder / name, _PLANTED_SAFE)
        except OSError:
            continue
        try:
            if not _regular(descriptor):  # planted: no run writes it
                continue
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(descriptor)
    return False


def _held(folder: Path, skip: str = "") -> int:
    """Bytes ``folder`` takes of the budget: each of its files, or the room its writer
    reserved for it (``<name>.reserved``) when that is more; ``skip`` names a file not
    counted."""
    try:
        entries = {entry.name: entry for entry in os.scandir(folder)}
    except OSError:
        return 0
    held = 0
    for name, entry in entries.items():
        if name == skip or name.endswith(RESERVED_SUFFIX):
            continue
        size = reserved = 0
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                size = entry.stat(follow_symlinks=False).st_size
        if name + RESERVED_SUFFIX in entries:
            reserved = _reservation(folder / (name + RESERVED_SUFFIX))
        held += max(size, reserved)
    return held


def _reservation(path: Path) -> int:
    """The bytes a ``.reserved`` file says (a number of at most 20 digits); 0 for what no
    writer made (a FIFO, a link to ``/dev/zero``, a huge file: never waited on nor read
    whole)."""
    try:
        descriptor = os.open(path, _PLANTED_SAFE)
    except OSError:
        return 0
    try:
        if not _regular(descriptor):
            return 0
        text = os.read(descriptor, 32)
    except OSError:
        return 0
    finally:
        os.close(descriptor)
    try:
        return max(0, int(text.decode("ascii") or 0)) if len(text) <= 20 else 0
    except ValueError:
        return 0


def _run_folders(projects: Path) -> list[tuple[float, Path]]:
    """Every project's kept run folders: (modified, folder)."""
    found: list[tuple[float, Path]] = []
    with contextlib.suppress(OSError):
        for project in os.scandir(projects):
            with contextlib.suppress(OSError):
                if not project.is_dir(follow_symlinks=False):
                    continue
                for run in os.scandir(Path(project.path) / "runs"):
                    with contextlib.suppress(OSError):
                        if run.is_dir(follow_symlinks=False):
                            found.append((run.stat(follow_symlinks=False).st_mtime, Path(run.path)))
    return found


class KeptOutput:
    """A run's output file written within the budget all kept outputs share
    (``kept_output_limit()``): it grows only into room it reserved; a write that finds none
    raises ``BudgetFull`` (the caller drops the file, as when the disk is full)."""

    def __init__(self, path: Path, descriptor: int) -> None:
        self.path = path
        self._file = os.fdopen(descriptor, "wb", buffering=0)
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # being written
        self.written = 0
        self.reserved = 0
        self._reservation = path.with_name(path.name + RESERVED_SUFFIX)

    def fileno(self) -> int:
        return self._file.fileno()

    def write(self, data: bytes) -> int:
        if self.written + len(data) > self.reserved:
            self._reserve(self.written + len(data) - self.reserved)
        self._file.write(data)
        self.written += len(data)
        return len(data)

    def _reserve(self, needed: int) -> None:
        limit = kept_output_limit()
        projects = _projects_folder(self.path)
        mine = self.path.parent
        with _shared_lock(projects):
            folders = sorted(_run_folders(projects))  # the oldest first
            others = {folder: _held(folder) for _, folder in folders if folder != mine}
            mine_now = _held(mine, skip=self.path.name)  # a file of the run beside this one
            for step in (max(needed, RESERVE_STEP), needed):
                room = limit - sum(others.values()) - mine_now - self.reserved
                for folder in list(others):
                    if room >= step:
                        break
                    if not _being_written(folder):
                        shutil.rmtree(folder, ignore_errors=True)
                        room += others.pop(folder)
                if room >= step:
                    self.reserved += step
                    # (its folder pruned meanwhile: the file is gone, its writer finds it so)
                    with contextlib.suppress(FileNotFoundError):
                        self._reservation.write_text(str(self.reserved))
                    return
        raise BudgetFull(limit)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._reservation.unlink()
        self._file.close()

    def __enter__(self) -> KeptOutput:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_output(path: Path) -> KeptOutput:
    """A run's output file (``output_file``) opened for binary writing, readable by its user
    only (its folder 0700), once the outputs of older runs past the retention are dropped;
    its writes stay within the budget all runs share (``KeptOutput``). Raises ``OSError``
    when the folder cannot hold it (read-only, full, not a folder)."""
    prune_outputs(path.parent.parent, keep=KEEP - 1)  # with this one: KEEP
    for attempt in range(3):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            return KeptOutput(
                path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            )
        except FileNotFoundError:  # another run's pruning took the new folder: make it again
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def kept_output(path: Path) -> None:
    """A run's output file is whole: outputs past the retention are dropped, counting this
    one first (concurrent runs made others while it was written)."""
    prune_outputs(path.parent.parent, mine=path.parent)


def prune_outputs(
    root: Path, keep: int = KEEP, max_bytes: int | None = None, mine: Path | None = None
) -> None:
    """Drop the oldest run directories of ``root`` (the state's ``runs`` folder) past ``keep``
    or past ``max_bytes`` in all (``kept_output_limit()`` when None); ``mine`` counts first
    and is never dropped. Other runs prune at the same time: a folder that went meanwhile
    is simply not counted."""
    limit = kept_output_limit() if max_bytes is None else max_bytes
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    folders: list[tuple[float, Path]] = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                folders.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
        except OSError:  # pruned by another run since it was listed
            continue
    folders.sort(key=lambda found: (found[1] != mine, -found[0]))
    total = 0
    for number, (_, folder) in enumerate(folders):
        total += _size(folder)
        if folder != mine and (number >= keep or total > limit):
            shutil.rmtree(folder, ignore_errors=True)


def _size(folder: Path) -> int:
    """Bytes of the files in ``folder``; what another run deletes meanwhile counts nothing."""
    size = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                size += entry.stat(follow_symlinks=False).st_size
    return size


def _shrunk(value: Any, width: int, depth: int) -> Any:
    """``value`` with at most ``width`` items per array and keys per object, ``depth`` deep."""
    if isinstance(value, list):
        if depth == 0:
            return f"[{len(value)} items]" if value else []
        kept = [_shrunk(item, width, depth - 1) for item in value[:width]]
        if len(value) > width:
            kept.append(f"{MORE_KEY} {len(value) - width} more items")
        return kept
    if isinstance(value, dict):
        if depth == 0:
            return f"{{{len(value)} keys}}" if value else {}
        keys = list(value)[:width]
        shown = {key: _shrunk(value[key], width, depth - 1) for key in keys}
        if len(value) > width:
            shown[MORE_KEY] = f"{len(value) - width} more keys"
        return shown
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + f"{MORE_KEY} ({len(value) - 200} more characters)"
    return value


def json_preview(value: Any, budget: int) -> str:
    """The largest preview of ``value`` that fits in ``budget`` bytes, as JSON text."""
    best = json.dumps(_shrunk(value, 1, 1), ensure_ascii=False)
    for depth in (2, 3, 4, 6, 8):
        for width in (3, 5, 10, 20, 50):
            text = json.dumps(_shrunk(value, width, depth), ensure_ascii=False)
            if len(text.encode()) > budget:
                break
            best = text
    return best


def preview(data: bytes, budget: int) -> tuple[str, bool]:
    """A preview of ``data`` within about ``budget`` bytes: ``(text, whether it is JSON)``."""
    text = data.decode("utf-8", "replace")
    values = json_values(data)
    try:
        value = json.loads(text) if values <= PREVIEW_VALUES else None
    except (ValueError, RecursionError):  # nested past Python's limit ("[[[[..."): text
        value = None
    else:
        if isinstance(value, dict | list):
            return json_preview(value, budget), True
    lines = text.splitlines()
    shown: list[str] = []
    used = 0
    for line in lines:
        piece = line if len(line) <= 500 else line[:500] + f"{MORE_KEY} ({len(line) - 500} more)"
        if used + len(piece) + 1 > budget:
            break
        shown.append(piece)
        used += len(piece) + 1
    if len(shown) < len(lines):
        shown.append(f"{MORE_KEY} {len(lines) - len(shown)} more lines")
    return "\n".join(shown), False
