"""Where toolscript keeps things: the config file, the project cache, the user's own cache."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_FILENAME = ".toolscript.json"

__all__ = [
    "CONFIG_FILENAME",
    "find_config_path",
    "module_cache_file",
    "project_cache_dir",
    "project_state_dir",
    "user_cache_dir",
    "user_state_dir",
]


def find_config_path(explicit: str | os.PathLike[str] | None, cwd: Path | None = None) -> Path:
    """``--config`` / ``TOOLSCRIPT_CONFIG`` when given, else ``./.toolscript.json``."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    return (cwd or Path.cwd()).resolve() / CONFIG_FILENAME


def project_cache_dir(project_dir: Path, explicit: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory of the project whose config lives in ``project_dir``."""
    chosen = explicit or os.environ.get("TOOLSCRIPT_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser().resolve()
    return project_dir / ".toolscript"


def user_cache_dir() -> Path:
    """toolscript's own cache for Deno, modules and prepared scripts (``TOOLSCRIPT_HOME``
    overrides); only its user may enter it, whatever its children's modes (Deno's are 0644)."""
    return _private_user_dir("XDG_CACHE_HOME", Path(".cache"))


def user_state_dir() -> Path:
    """What toolscript keeps for its user beyond any cache (sign-ins): ``TOOLSCRIPT_HOME``
    when set, else ``$XDG_STATE_HOME/toolscript`` (``~/.local/state/toolscript``); only
    its user may enter it."""
    return _private_user_dir("XDG_STATE_HOME", Path(".local") / "state")


def _private_user_dir(variable: str, under_home: Path) -> Path:
    """``TOOLSCRIPT_HOME``, else ``$variable/toolscript`` (``~/under_home/toolscript``),
    made 0700 when it is ours to change."""
    chosen = os.environ.get("TOOLSCRIPT_HOME")
    if chosen:
        path = Path(chosen).expanduser().resolve()
    else:
        base = os.environ.get(variable) or str(Path.home() / under_home)
        path = Path(base) / "toolscript"
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except OSError:
        pass  # not ours to change: the commands that write there say so
    return path


def module_cache_file(digest: str) -> Path:
    """Where a gateway's generated module is kept, named by its content hash: the same tools
    give the same file whatever gateway served them (exec runs it; the type checker reads it)."""
    return user_cache_dir() / "modules" / f"{digest}.ts"


def project_state_dir(project_dir: Path) -> Path:
    """What toolscript keeps for one project beyond its cache (the run log, approvals): in the
    user's own state directory, keyed by the project's folder, never inside the project,
    where a cloned repository could plant approvals of its own."""
    import hashlib

    key = hashlib.sha256(str(project_dir.resolve()).encode()).hexdigest()[:24]
    path = user_state_dir() / "projects" / key
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
