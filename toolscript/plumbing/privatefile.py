"""Write a file only its user may read, whole or not at all (state, trust records, modules)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["write_private"]


def write_private(path: Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` (0600, its folder 0700) through a temporary file and a rename,
    so a reader never sees half of it. Writers in several threads of one process (the MCP
    face runs scripts side by side) each have a temporary file of their own."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)
    os.replace(partial, path)
    return path
