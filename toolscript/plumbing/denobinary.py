"""Which Deno binary toolscript runs, and the environment it runs in (the sandbox and the
gateway's type checker alike: one type-check cache, so a check warms the other's).

A sandbox run gets a ``DENO_DIR`` of its own (``run_deno_dir``), removed when it ends:
whatever a script makes Deno cache (emitted ``data:`` and gateway modules, code caches) is
gone with the run. Shared through links: the type-check cache, and the JavaScript emitted
for local files (``gen/file``: only toolscript's own, since a script may import no file but
its module and itself: the generated module, saved and prepared scripts), so the module is
transpiled once, not by each run (measured with Deno 2.9.8: 130 ms of each run's start at
1,600 tools); and the read-only npm packages, for a project that declares any. The analysis
caches a run would make are kept in memory (``MEMORY_CACHES``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from toolscript.errors import ExecutionError
from toolscript.plumbing.paths import user_cache_dir
from toolscript.plumbing.processes import pid_exists

__all__ = [
    "SHARED_CACHES",
    "SHARED_FOLDERS",
    "deno_binary",
    "deno_cache_dir",
    "deno_environment",
    "deno_start_error",
    "forget_emitted",
    "run_deno_dir",
]

# What a run's DENO_DIR links to the shared one: check verdicts (hashes), and the emitted
# JavaScript of local files (Deno checks each against its source's hash before use). Not
# all of ``gen``: a script's `data:` imports are emitted there, and a loop of them would
# fill the user's disk; they stay in the run's own ``gen``.
SHARED_CACHES = ("check_cache_v2",)  # files
SHARED_FOLDERS = ("gen/file",)
PACKAGE_CACHES = ("npm",)  # and with packages: the fetched npm packages (read-only)
# SQLite caches Deno makes at a run's start and would fill for nothing (the folder goes with
# the run): a folder in their place makes Deno keep them in memory, silently (measured with
# Deno 2.9.8: 1.5-2.5 ms of CPU of each run's 22-26, the files' creation and writes).
MEMORY_CACHES = ("dep_analysis_cache_v2", "node_analysis_cache_v2")
_RUN_PREFIX = "deno-"


def deno_binary() -> str:
    """``TOOLSCRIPT_DENO``, else the binary of the ``deno`` package."""
    chosen = os.environ.get("TOOLSCRIPT_DENO")
    if chosen:
        return chosen
    return _package_binary()


@functools.cache
def _package_binary() -> str:
    """The ``deno`` package's binary, looked for once a process (its search reads Python's
    install schemes each time, and the MCP face starts a Deno every execute)."""
    try:
        import deno
    except ImportError as exc:
        raise ExecutionError(
            "the deno package is not installed", hint="pip install deno, or set TOOLSCRIPT_DENO"
        ) from exc
    return str(deno.find_deno_bin())


def deno_start_error(exc: OSError) -> ExecutionError:
    """Deno's binary could not start: which one, and what the user changes."""
    chosen = os.environ.get("TOOLSCRIPT_DENO")
    if chosen:
        return ExecutionError(
            f"cannot start deno: TOOLSCRIPT_DENO names {chosen}, which does not run "
            f"({exc.strerror or exc})",
            hint="point TOOLSCRIPT_DENO at a deno binary, or unset it to use the deno package's",
        )
    return ExecutionError(
        f"cannot start deno: {exc}",
        hint="reinstall it with `pip install --force-reinstall deno`, or set TOOLSCRIPT_DENO "
        "to a deno binary",
    )


def deno_cache_dir() -> Path:
    """``DENO_DIR``: toolscript's own, never the user's."""
    return user_cache_dir() / "deno"


def forget_emitted(source: Path) -> None:
    """Remove the JavaScript Deno emitted for the local file ``source`` into the shared
    ``gen/file`` (a script's: it holds what the script holds, a password typed into it)."""
    with contextlib.suppress(OSError):
        (deno_cache_dir() / "gen" / "file" / f"{str(source).lstrip('/')}.js").unlink()


def deno_environment(deno_dir: Path | None = None) -> dict[str, str]:
    """The whole environment Deno gets: its cache (the shared one unless ``deno_dir``), no
    update checks or prompts, and no GPU: WebGPU needs no permission, and a script's
    ``navigator.gpu.requestAdapter()`` would load the machine's graphics drivers into the
    sandbox and hand it the device (memory the sandbox's cap does not count)."""
    return {
        "DENO_DIR": str(deno_dir or deno_cache_dir()),
        "DENO_NO_UPDATE_CHECK": "1",
        "DENO_NO_PROMPT": "1",
        "DENO_WEBGPU_BACKEND": "none",
    }


@contextlib.contextmanager
def run_deno_dir(packages: bool = False, npm: Path | None = None) -> Iterator[Path]:
    """A fresh ``DENO_DIR`` for one sandbox run (0700), removed when the run ends; those of
    runs whose process died without removing theirs are removed first. With ``packages``
    it reads npm packages from ``npm`` (the packages of its lock: ``store/packages.npm_set``),
    else from the shared cache (read-only: ``store/packages.py``)."""
    root = user_cache_dir() / "run"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    _remove_orphans(root)
    shared = deno_cache_dir()
    shared.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = root / f"{_RUN_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    path.mkdir(mode=0o700)
    try:
        for name in SHARED_CACHES:
            (path / name).symlink_to(shared / name)
        for name in SHARED_FOLDERS:
            (shared / name).mkdir(parents=True, exist_ok=True, mode=0o700)
            (path / name).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            (path / name).symlink_to(shared / name)
        if packages or npm is not None:
            (path / PACKAGE_CACHES[0]).symlink_to(npm or shared / PACKAGE_CACHES[0])
        for name in MEMORY_CACHES:
            (path / name).mkdir(mode=0o700)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _remove_orphans(root: Path) -> None:
    for entry in root.glob(f"{_RUN_PREFIX}*"):
        pid = entry.name[len(_RUN_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not pid_exists(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)
