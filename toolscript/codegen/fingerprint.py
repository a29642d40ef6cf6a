"""The generator's fingerprint, apart from the generator: reading it imports none of codegen's
code, so a ``doit`` with nothing to build stays cheap."""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from pathlib import Path

__all__ = ["generator_fingerprint"]


@functools.cache
def generator_fingerprint() -> str:
    """A hash of the generator's own code (this package and the runtime template): the
    types task depends on it, so upgrading toolscript rebuilds the types by itself."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(resources.files("toolscript.templates").joinpath("runtime.ts").read_bytes())
    return digest.hexdigest()[:16]
