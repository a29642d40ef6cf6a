"""Where toolscript keeps per-project state: the cache directory and the gateway state file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from toolscript.processes import pid_exists

CONFIG_FILENAME = ".toolscript.json"

__all__ = [
    "CONFIG_FILENAME",
    "find_config_path",
    "gateway_state_file",
    "project_cache_dir",
    "read_gateway_state",
    "remove_gateway_state",
    "restore_gateway_state",
    "user_cache_dir",
    "write_gateway_state",
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
    chosen = os.environ.get("TOOLSCRIPT_HOME")
    if chosen:
        path = Path(chosen).expanduser().resolve()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "toolscript"
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except OSError:
        pass  # not ours to change: the commands that write there say so
    return path


def gateway_state_file(directory: Path) -> Path:
    """Where the gateway of the project whose cache is ``directory`` records its URL.

    In the user's own 0700 cache, keyed by the project: never inside the project, where a
    cloned repository could plant a state file that sends every tool call elsewhere.
    """
    key = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:24]
    return user_cache_dir() / "gateways" / f"{key}.json"


def write_gateway_state(directory: Path, state: dict[str, Any]) -> Path:
    """Write the state file readable by the user only (it holds the secret URL)."""
    path = gateway_state_file(directory)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(state, handle, indent=2)
    os.replace(partial, path)
    return path


def read_gateway_state(directory: Path) -> dict[str, Any] | None:
    """The state of a gateway whose process is still alive, else None."""
    try:
        state: dict[str, Any] = json.loads(gateway_state_file(directory).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not _loopback_url(state.get("url")):
        return None
    pid = state.get("pid")
    # A pid that exists may still be a zombie or another program by now: callers confirm
    # that a gateway answers at the URL before they use it.
    if not isinstance(pid, int) or not pid_exists(pid):
        return None
    return state


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
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme == "http" and host in ("127.0.0.1", "::1", "localhost")


def restore_gateway_state(directory: Path, state: dict[str, Any]) -> None:
    """Write back an earlier gateway's state, if that gateway still runs."""
    pid = state.get("pid")
    if isinstance(pid, int) and pid_exists(pid):
        write_gateway_state(directory, state)
