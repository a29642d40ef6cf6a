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
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from toolscript.paths import user_cache_dir
from toolscript.privatefile import write_private
from toolscript.processes import pid_exists

__all__ = [
    "gateway_state_file",
    "owner_url",
    "read_gateway_state",
    "ready_gateway_state",
    "remove_gateway_state",
    "restore_gateway_state",
    "sessions_dir",
    "write_gateway_state",
]

START_WAIT = 120.0  # seconds a command waits for a gateway that is still starting


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
    try:
        state: dict[str, Any] = json.loads(gateway_state_file(directory).read_text())
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


def ready_gateway_state(directory: Path, wait: float = START_WAIT) -> dict[str, Any] | None:
    """The state of a running gateway; one that is still starting (its servers connecting)
    is waited for, up to ``wait`` seconds, so `gateway start &` then a command just works."""
    import time

    deadline = time.monotonic() + wait
    state = read_gateway_state(directory)
    while state is not None and state.get("starting") and time.monotonic() < deadline:
        time.sleep(0.1)
        state = read_gateway_state(directory)
    if state is not None and state.get("starting"):
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


def sessions_dir() -> Path:
    """Where the Claude Code hooks keep each session's files (``<id>.url``: the owner URL)."""
    return user_cache_dir() / "sessions"


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
