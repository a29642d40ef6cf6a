"""Which toolscript a process runs: its version and a hash of its installed code, read once
at start. A gateway started before an upgrade (``pip install -U``, a ``git pull`` of an
editable install) goes on running the code it loaded; ``gateway status`` compares."""

from __future__ import annotations

import functools
import hashlib
import threading
from importlib import resources
from pathlib import Path

__all__ = ["code_build", "installed_build"]


_reading = threading.Lock()


def code_build() -> str:
    """The hash of toolscript's code as this process first read it (call it at start: the
    files may be replaced by an upgrade later), read once: a caller meanwhile waits."""
    with _reading:
        return _first_read()


@functools.cache
def _first_read() -> str:
    return installed_build()


def installed_build() -> str:
    """A hash of toolscript's installed code now: its Python files, templates and schemas."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    files = [(path.relative_to(package).as_posix(), path) for path in package.rglob("*.py")]
    for folder in ("templates", "schemas"):
        for item in resources.files(f"toolscript.{folder}").iterdir():
            if item.is_file():
                files.append((f"{folder}/{item.name}", Path(str(item))))
    for name, path in sorted(files):
        try:
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
        except OSError:  # removed mid-upgrade: its absence is part of what runs now
            digest.update(name.encode() + b"\0-\0")
    return digest.hexdigest()[:16]
