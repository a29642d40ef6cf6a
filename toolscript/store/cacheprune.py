"""The user's cache kept bounded: what no toolscript will read again removed, never what
one may be using.

toolscript's cache (``plumbing/paths.user_cache_dir``) holds files named by a hash of
their content or of what they were made from, so every change leaves the old ones behind.
Each folder has its rule (``RULES``), applied in one loop:

- ``models/``: a light query runtime (``search/semantic.save_light``) and the queries'
  graph beside it go when the model directory it records is gone, or holds other files
  now (a new folder serves it); one that records none (written before they did), when
  unused for ``keep_days`` (``light_ready`` touches it at each use).
- ``modules/`` (a generated module with its saved scripts, lock and packages beside it),
  ``checker/`` (the warm checker's config and import map per module), ``scripts/``
  (prepared scripts' check marks, and the copy of a run killed before it removed it:
  once its process is gone), ``valid-configs/``: untouched for
  ``keep_days`` (a day at least, ``MARKED_WITHIN``: a running gateway touches its own
  module and checker files every 6 h, ``touch``); exec and the face touch the script they
  run and the module they take from the cache.
- ``check/`` (a check's config and the globals file it names, per ``check_tag``):
  untouched for ``keep_days``, a tag's files together (each use marks them, and a running
  gateway its own every 6 h).
- ``deno/gen/file/`` (the JavaScript Deno emitted for a module or a script, at the file's
  own path, shared by every run: ``plumbing/denobinary.SHARED_FOLDERS``): once that file
  is gone, or when unused for ``keep_days`` (Deno emits it again when next needed).
- ``run/`` (one run's import map and ``DENO_DIR``) and ``gateways/`` (a gateway's state):
  those of a process that no longer runs; a gateway's lock only when no process holds it.

Never removed: anything younger than ``GRACE`` (it may be being written), anything through
a symbolic link (links are neither followed nor removed), anything outside these folders,
anything not named as toolscript names it (hashes of other lengths, a ``models/`` folder
without a light runtime's description, a process id no process can have: a
``TOOLSCRIPT_HOME`` may be a folder the user keeps other files in).
Files vanishing meanwhile (another gateway pruning too) are not errors; other failures are
kept in the report and logged once. ``prune_if_due`` runs the whole at most once a day
(a stamp file); ``toolscript cache prune`` runs it now.

Light at import (no dataclasses, no hashing): ``search/semantic.py``, which the query worker
imports, uses ``model_files`` and ``touch``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "GRACE",
    "KEEP_DAYS",
    "MARKED_WITHIN",
    "PRUNE_EVERY",
    "STAMP",
    "PruneReport",
    "Removal",
    "drop_module_if_unused",
    "mark_module_written",
    "model_files",
    "prune_cache",
    "prune_if_due",
    "touch",
    "touch_module",
]

log = logging.getLogger("toolscript.cache")

KEEP_DAYS = 30.0  # days a file named by a hash is kept after its last use
GRACE = 3600.0  # seconds: anything younger may still be being written, or about to be read
# seconds a file is kept after its last use whatever ``keep_days`` says: a running gateway
# marks what it uses only every 6 h (gateway/core.CACHE_KEEPING_EVERY, which must be less)
MARKED_WITHIN = 86400.0
PRUNE_EVERY = 86400.0  # seconds between two automatic prunes (the stamp's age)
STAMP = ".pruned"  # the stamp file, in the cache's root
LIGHT_META = "light.json"  # (search/semantic.LIGHT_META: the search layer is above this one)
LONGEST_META = 1 << 20  # bytes of a light folder's description read at most

_logged_errors = False  # failures are logged once per process


class Removal(NamedTuple):
    """One entry of the cache removed (or that would be, in a dry run), and why."""

    folder: str
    path: Path
    size: int
    reason: str


class PruneReport:
    """What a prune removed (or would), per folder, and what it could not."""

    def __init__(self, dry_run: bool) -> None:
        self.dry_run = dry_run
        self.removed: list[Removal] = []
        self.errors: list[str] = []

    @property
    def freed(self) -> int:
        return sum(removal.size for removal in self.removed)

    def to_dict(self) -> dict[str, Any]:
        folders: dict[str, dict[str, Any]] = {}
        for removal in self.removed:
            entry = folders.setdefault(removal.folder, {"entries": 0, "bytes": 0, "reasons": {}})
            entry["entries"] += 1
            entry["bytes"] += removal.size
            entry["reasons"][removal.reason] = entry["reasons"].get(removal.reason, 0) + 1
        return {
            "dry_run": self.dry_run,
            "entries": len(self.removed),
            "bytes": self.freed,
            "folders": folders,
            "errors": self.errors,
        }


def model_files(directory: Path) -> list[str]:
    """A model directory's files as ``name:size:mtime_ns``, sorted: what names its light
    folder (``semantic.light_folder``) and what that folder records, so a prune sees the
    directory change."""
    listed = []
    for child in sorted(directory.iterdir()):
        found = child.stat()
        listed.append(f"{child.name}:{found.st_size}:{found.st_mtime_ns}")
    return listed


def touch(paths: Iterable[Path]) -> None:
    """Mark files as used now (those of a running gateway, a script run): an age rule keeps
    them. Missing ones and failures are ignored."""
    for path in paths:
        with contextlib.suppress(OSError):
            os.utime(path, follow_symlinks=False)


def touch_module(root: Path, digest: str) -> None:
    """Mark a running gateway's module (with what is beside it) and its checker's files as
    used now: their groups (``RULES``) are judged by their newest member."""
    touch([root / "modules" / f"{digest}.ts", root / "checker" / f"deno-{digest}.json"])


def prune_if_due(root: Path, *, now: float | None = None) -> PruneReport | None:
    """``prune_cache`` when the last was ``PRUNE_EVERY`` ago or more (or never): the stamp
    is renewed first, so gateways starting together do not all prune. None when not due."""
    now = time.time() if now is None else now
    stamp = root / STAMP
    try:
        last = stamp.lstat().st_mtime
    except FileNotFoundError:
        last = None
    except OSError as exc:
        _log_once([f"{stamp}: {exc.strerror or exc}"])
        return None
    if last is not None and 0 <= now - last < PRUNE_EVERY:
        return None
    try:
        if stamp.is_symlink():
            return None
        stamp.touch(mode=0o600)
        os.utime(stamp, (now, now))
    except OSError as exc:
        _log_once([f"{stamp}: {exc.strerror or exc}"])
        return None
    report = prune_cache(root, now=now)
    if report.removed:
        log.info(
            "cache: removed %d unused entries (%.1f MB)", len(report.removed), report.freed / 1e6
        )
    return report


def prune_cache(
    root: Path,
    *,
    keep_days: float = KEEP_DAYS,
    dry_run: bool = False,
    now: float | None = None,
) -> PruneReport:
    """Remove what ``RULES`` find unused in the cache at ``root`` (with ``dry_run``, only
    say what). Never raises for a file system's failure: it is in the report's errors."""
    now = time.time() if now is None else now
    rules = _Rules(now=now, keep=keep_days * 86400.0)
    report = PruneReport(dry_run=dry_run)
    for name, find in RULES:
        folder = root / name
        if folder.is_symlink() or not folder.is_dir():
            continue
        try:
            candidates = list(find(rules, folder))
        except OSError as exc:
            report.errors.append(f"{folder}: {exc.strerror or exc}")
            continue
        for candidate in candidates:
            _remove(name, candidate, rules, report, dry_run)
    _log_once(report.errors)
    return report


class _Candidate(NamedTuple):
    """Entries removed together (a module and what is beside it), with the check that
    still holds just before they go (a file touched meanwhile is kept)."""

    paths: tuple[Path, ...]
    reason: str
    still: Callable[[], bool] = lambda: True


class _Rules(NamedTuple):
    now: float
    keep: float

    def young(self, mtime: float) -> bool:
        return self.now - mtime < GRACE

    def unused(self, mtime: float) -> bool:
        return self.now - mtime >= max(self.keep, GRACE, MARKED_WITHIN)


def _entries(folder: Path) -> Iterator[os.DirEntry[str]]:
    """The folder's entries, symbolic links left out (never followed, never removed)."""
    with os.scandir(folder) as found:
        for entry in found:
            if not entry.is_symlink():
                yield entry


def _newest(path: Path) -> float:
    """The latest modification time of a file, or of a folder and what it holds (links'
    own times); 0 when it is gone."""
    try:
        newest = path.lstat().st_mtime
    except OSError:
        return 0.0
    if stat.S_ISDIR(path.lstat().st_mode):
        for parent, folders, files in os.walk(path):
            for name in folders + files:
                with contextlib.suppress(OSError):
                    newest = max(newest, os.lstat(os.path.join(parent, name)).st_mtime)
    return newest


def _unused(rules: _Rules, *paths: Path) -> Callable[[], bool]:
    return lambda: rules.unused(max((_newest(path) for path in paths), default=0.0))


# --- models/ -------------------------------------------------------------------------

# (names as patterns: compiled at a prune's first use, by re's cache, not at import)
_GRAPH = r"^(?P<folder>.+)\.queries-[0-9]+\.onnx$"
_PARTIAL = r"^.+\.(?P<pid>[0-9]+)\.partial$"


def _models(rules: _Rules, folder: Path) -> Iterator[_Candidate]:
    entries = list(_entries(folder))
    graphs: dict[str, list[Path]] = {}
    for entry in entries:
        matched = re.match(_GRAPH, entry.name)
        if matched and entry.is_file(follow_symlinks=False):
            graphs.setdefault(matched["folder"], []).append(Path(entry.path))
    for entry in entries:
        path = Path(entry.path)
        if not entry.is_dir(follow_symlinks=False):
            continue
        unfinished = re.match(_PARTIAL, entry.name)
        if unfinished:  # a save_light under way, or of a process that died
            if not _pid_runs(int(unfinished["pid"])) and not rules.young(_newest(path)):
                yield _Candidate((path,), "unfinished")
            continue
        beside = tuple(graphs.pop(entry.name, []))
        verdict = _light_verdict(rules, path)
        if verdict is not None:
            yield _Candidate((path, *beside), verdict, partial(_light_goes, rules, path))
    for graph_paths in graphs.values():  # graphs with no light folder: kept while used
        for graph in graph_paths:
            if rules.unused(_newest(graph)):
                yield _Candidate((graph,), "unused", _unused(rules, graph))


def _light_verdict(rules: _Rules, path: Path) -> str | None:
    """Why a light folder may go ("model gone", "superseded", "unused"), or None to keep."""
    meta_path = path / LIGHT_META
    try:
        found = meta_path.lstat()
        meta = json.loads(_read_small(meta_path)) if stat.S_ISREG(found.st_mode) else None
        used = found.st_mtime  # (light_ready touches it at each use)
    except (OSError, ValueError):
        meta, used = None, _newest(path)
    if not isinstance(meta, dict) or "format" not in meta:
        return None  # no light runtime's description: not toolscript's (a shared home's models/)
    if rules.young(used):
        return None
    directory = meta.get("directory")
    if isinstance(directory, str) and os.path.isabs(directory):
        model = Path(directory)
        if not model.is_dir():
            return "model gone"
        recorded = meta.get("files")
        try:
            changed = isinstance(recorded, list) and model_files(model) != recorded
        except OSError:
            return None
        # (the one folder of a model still there is kept, used or not: one per model)
        return "superseded" if changed else None
    return "unused" if rules.unused(used) else None


def _light_goes(rules: _Rules, path: Path) -> bool:
    return _light_verdict(rules, path) is not None


def _read_small(path: Path) -> str:
    with path.open("rb") as handle:
        return handle.read(LONGEST_META).decode()


def mark_module_written(path: Path) -> int | None:
    """Mark a module file a warm checker just wrote as written, not used: its time set a
    little before now, so any use after (exec's, another gateway's ``touch``, each setting
    now) changes it. Returns the time it has (for ``drop_module_if_unused``); None if lost."""
    try:
        marked = time.time_ns() - 2_000_000_000
        os.utime(path, ns=(marked, marked), follow_symlinks=False)
        return path.lstat().st_mtime_ns
    except OSError:
        return None


def drop_module_if_unused(root: Path, digest: str, written: int) -> bool:
    """Remove a module a warm checker wrote (``modules/<digest>.*``, its checker files) if
    nothing used it since (its time still ``written``): a server whose tools change at every
    listing made a module a minute, each kept for ``KEEP_DAYS`` (gigabytes a day). True when
    removed."""
    if not re.fullmatch(r"[0-9a-f]{16}", digest):
        return False
    module = root / "modules" / f"{digest}.ts"
    try:
        found = module.lstat()
    except OSError:
        return False
    if not stat.S_ISREG(found.st_mode) or found.st_mtime_ns != written:
        return False
    paths = [Path(entry.path) for entry in _entries(root / "modules")]
    paths = [path for path in paths if path.name.startswith(f"{digest}.")]
    paths += [root / "checker" / f"{kind}-{digest}.json" for kind in ("deno", "importmap")]
    for path in paths:
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(path.lstat().st_mode):
                shutil.rmtree(path)
            else:
                path.unlink()
    return True


# --- modules/, checker/, scripts/, valid-configs/ -------------------------------------

# (the lengths toolscript names with: a module's hash 16, a prepared script's 24, a config
# check's 64, a gateway's key 24; other names, in a TOOLSCRIPT_HOME shared with other files,
# are not toolscript's)
_HASHED = r"^(?P<hash>[0-9a-f]{16})\."
_CHECKER = r"^(?:deno|importmap)-(?P<hash>[0-9a-f]{16})\.json(?:\..+\.tmp)?$"
_SCRIPT = r"^[0-9a-f]{24}$"
# (the config of a tag, of a tag and a module's packages, and the tag's globals file)
_CHECK = (
    r"^(?:deno|globals)-(?P<hash>[0-9a-f]{12})(?:-[0-9a-f]{12})?\.(?:json|d\.ts)(?:\..+\.tmp)?$"
)
_CONFIG_CHECK = r"^[0-9a-f]{64}$"


def _by_hash(pattern: str) -> Callable[[_Rules, Path], Iterator[_Candidate]]:
    """Entries grouped by the hash their names start with; a group goes when none of them
    was touched for ``keep_days``."""

    def find(rules: _Rules, folder: Path) -> Iterator[_Candidate]:
        groups: dict[str, list[Path]] = {}
        for entry in _entries(folder):
            matched = re.match(pattern, entry.name)
            if matched:
                groups.setdefault(matched["hash"], []).append(Path(entry.path))
        for paths in groups.values():
            check = _unused(rules, *paths)
            if check():
                yield _Candidate(tuple(paths), "unused", check)

    return find


def _hex_named(pattern: str) -> Callable[[_Rules, Path], Iterator[_Candidate]]:
    """Entries named by a hash alone (a prepared script's folder, a config's memo)."""

    def find(rules: _Rules, folder: Path) -> Iterator[_Candidate]:
        for entry in _entries(folder):
            if re.match(pattern, entry.name):
                check = _unused(rules, Path(entry.path))
                if check():
                    yield _Candidate((Path(entry.path),), "unused", check)

    return find


_SCRIPT_RUN = r"^run-(?P<pid>[0-9]+)-[0-9]+$"  # a run's copy of the script (its process)


def _scripts(rules: _Rules, folder: Path) -> Iterator[_Candidate]:
    """A prepared script's folder (its check marks) when unused for ``keep_days``; in one
    kept, the copy of a run whose process is gone (killed before it removed it: the copy
    holds what the script holds, a password typed into it too)."""
    for entry in _entries(folder):
        if not re.match(_SCRIPT, entry.name):
            continue
        check = _unused(rules, Path(entry.path))
        if check():
            yield _Candidate((Path(entry.path),), "unused", check)
            continue
        with contextlib.suppress(OSError):  # (gone meanwhile, not a folder)
            for run in _entries(Path(entry.path)):
                matched = re.match(_SCRIPT_RUN, run.name)
                path = Path(run.path)
                pid = int(matched["pid"]) if matched else 0
                if matched and not _pid_runs(pid) and not rules.young(_newest(path)):
                    yield _Candidate((path,), "process ended", partial(_pid_ended, pid))


# --- deno/gen/file/ ---------------------------------------------------------------------

_EMITTED = r"^.+\.(?:[cm]?[jt]sx?)\.js$"  # Deno names it by its source: `script.ts.js`


def _emitted(rules: _Rules, folder: Path) -> Iterator[_Candidate]:
    """JavaScript emitted for a local file (``<folder>/<the file's path>.js``): once that
    file is gone (its module or script pruned), or when unused for ``keep_days``."""
    if any(part.is_symlink() for part in (folder.parent, folder.parent.parent)):
        return
    for parent, _folders, files in os.walk(folder):  # (links to folders are not entered)
        for name in files:
            path = Path(parent, name)
            if not re.match(_EMITTED, name):
                continue
            try:
                found = path.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(found.st_mode) or rules.young(found.st_mtime):
                continue
            source = "/" + path.relative_to(folder).as_posix()[: -len(".js")]
            if not os.path.lexists(source):
                yield _Candidate((path,), "file gone", partial(_gone, source))
            elif rules.unused(found.st_mtime):
                yield _Candidate((path,), "unused", _unused(rules, path))


def _gone(source: str) -> bool:
    return not os.path.lexists(source)


# --- run/, gateways/ -----------------------------------------------------------------

_OF_PROCESS = (
    r"^(?:importmap-(?:spare-deno-)?|deno-)(?P<pid>[0-9]+)-[0-9a-f]+(?:\.json)?(?:\..+\.tmp)?$"
)


def _of_processes(rules: _Rules, folder: Path) -> Iterator[_Candidate]:
    """One process's files (a run's import map, its ``DENO_DIR``): once it is gone."""
    for entry in _entries(folder):
        matched = re.match(_OF_PROCESS, entry.name)
        if matched and not _pid_runs(int(matched["pid"])):
            path = Path(entry.path)
            if not rules.young(_newest(path)):
                pid = int(matched["pid"])
                yield _Candidate((path,), "process ended", partial(_pid_ended, pid))


_STATE = r"^(?P<key>[0-9a-f]{24})\.json$"
_LOCK = r"^(?P<key>[0-9a-f]{24})\.lock$"


def _gateways(rules: _Rules, folder: Path) -> Iterator[_Candidate]:
    """A gateway's state once its process is gone; its lock when unused for ``keep_days``
    and no process holds it (``_remove`` takes it first)."""
    for entry in _entries(folder):
        path = Path(entry.path)
        if re.match(_STATE, entry.name) and not _state_runs(path):
            if not rules.young(_newest(path)):
                yield _Candidate((path,), "gateway ended", partial(_state_ended, path))
        elif (
            re.match(_LOCK, entry.name)
            and rules.unused(_newest(path))
            and not _state_runs(path.with_suffix(".json"))
        ):
            yield _Candidate((path,), "unused", _unused(rules, path))


def _state_runs(path: Path) -> bool:
    try:
        state = json.loads(_read_small(path))
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return False
    pid = state.get("pid") if isinstance(state, dict) else None
    return isinstance(pid, int) and _pid_runs(pid)


def _state_ended(path: Path) -> bool:
    return not _state_runs(path)


def _pid_ended(pid: int) -> bool:
    return not _pid_runs(pid)


_LARGEST_PID = 0x7FFFFFFF  # (a pid_t: a larger number is no process's)


def _pid_runs(pid: int) -> bool:
    """Whether process ``pid`` runs; a number no pid can be counts as running: what names
    it is not toolscript's, and is kept."""
    from toolscript.plumbing.processes import pid_exists

    return pid > _LARGEST_PID or pid_exists(pid)


# Each folder of the cache this prune looks in, and the rule that finds what may go there.
RULES: tuple[tuple[str, Callable[[_Rules, Path], Iterator[_Candidate]]], ...] = (
    ("models", _models),
    ("modules", _by_hash(_HASHED)),
    ("checker", _by_hash(_CHECKER)),
    ("check", _by_hash(_CHECK)),
    ("scripts", _scripts),
    ("valid-configs", _hex_named(_CONFIG_CHECK)),
    ("deno/gen/file", _emitted),
    ("run", _of_processes),
    ("gateways", _gateways),
)


# --- removal -------------------------------------------------------------------------


def _remove(
    folder: str, candidate: _Candidate, rules: _Rules, report: PruneReport, dry_run: bool
) -> None:
    size = sum(_size(path) for path in candidate.paths)
    if dry_run:
        report.removed.append(Removal(folder, candidate.paths[0], size, candidate.reason))
        return
    if not candidate.still():  # used (or changed) since it was found
        return
    removed = False
    for path in candidate.paths:
        try:
            if path.suffix == ".lock":
                removed |= _remove_lock(path)
                continue
            if stat.S_ISDIR(path.lstat().st_mode):
                shutil.rmtree(path, onerror=_gone_or(report.errors))
            else:
                path.unlink()
            removed = True
        except FileNotFoundError:
            continue  # another prune (another gateway's) took it first
        except OSError as exc:
            report.errors.append(f"{path}: {exc.strerror or exc}")
    if removed:
        report.removed.append(Removal(folder, candidate.paths[0], size, candidate.reason))


def _remove_lock(path: Path) -> bool:
    """Remove a gateway's lock only while holding it (``gateway/state.claim_project`` checks
    that the file it locked is still the one at the path)."""
    import fcntl

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a gateway holds it
        if os.fstat(descriptor).st_ino != path.lstat().st_ino:
            return False
        path.unlink()
        return True
    finally:
        os.close(descriptor)


def _gone_or(errors: list[str]) -> Callable[[Any, str, Any], None]:
    """``rmtree``'s error handler: what vanished meanwhile is no error, the rest is kept."""

    def failed(_function: Any, path: str, info: Any) -> None:
        exc = info[1]
        if not isinstance(exc, FileNotFoundError):
            errors.append(f"{path}: {getattr(exc, 'strerror', None) or exc}")

    return failed


def _size(path: Path) -> int:
    """Bytes a file or folder takes (links and what they name not counted)."""
    try:
        found = path.lstat()
    except OSError:
        return 0
    if not stat.S_ISDIR(found.st_mode):
        return found.st_size
    total = 0
    for parent, _folders, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


def _log_once(errors: list[str]) -> None:
    global _logged_errors
    if errors and not _logged_errors:
        _logged_errors = True
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        log.warning("cache: could not remove %s%s", errors[0], more)
