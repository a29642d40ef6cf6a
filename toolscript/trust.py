"""Which project configurations the user has trusted to start their servers.

A cloned repository's ``.toolscript.json`` names programs to run; the Claude Code
plugin's SessionStart hook must not run them before the user has looked. ``toolscript
trust`` records the file's content hash per user (outside every project, 0600);
editing the file makes it untrusted again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from toolscript.privatefile import write_private

__all__ = ["forget", "is_trusted", "trust", "trust_file", "trusted"]


def trust_file() -> Path:
    """``TOOLSCRIPT_CONFIG_HOME``, else ``$XDG_CONFIG_HOME/toolscript``, else
    ``~/.config/toolscript``: ``trusted.json``."""
    chosen = os.environ.get("TOOLSCRIPT_CONFIG_HOME")
    if chosen:
        return Path(chosen).expanduser().resolve() / "trusted.json"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "toolscript" / "trusted.json"


def _fingerprint(config: Path) -> str:
    return hashlib.sha256(config.read_bytes()).hexdigest()


def trusted() -> dict[str, dict[str, Any]]:
    """Every trusted config: its path -> ``{"sha256", "trusted_at"}``."""
    try:
        data = json.loads(trust_file().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_trusted(config: Path) -> bool:
    """Whether ``config``, as it is now, was trusted."""
    record = trusted().get(str(config.resolve()))
    try:
        return isinstance(record, dict) and record.get("sha256") == _fingerprint(config)
    except OSError:
        return False


def needs_trust(config: Path) -> bool:
    """Whether ``config`` may start no servers yet: a project's file the user has not trusted
    as it is now. A config chosen with TOOLSCRIPT_CONFIG is the user's own setting."""
    if os.environ.get("TOOLSCRIPT_CONFIG"):
        return False
    return config.is_file() and not is_trusted(config)


def trust(config: Path) -> None:
    records = trusted()
    records[str(config.resolve())] = {"sha256": _fingerprint(config), "trusted_at": time.time()}
    _save(records)


def forget(config: Path) -> bool:
    """Forget ``config``; False when it was not trusted."""
    records = trusted()
    if records.pop(str(config.resolve()), None) is None:
        return False
    _save(records)
    return True


def _save(records: dict[str, dict[str, Any]]) -> None:
    write_private(trust_file(), json.dumps(records, indent=1))
