"""Which Deno binary toolscript runs, and the environment it runs in (the sandbox and the
gateway's type checker alike: one cache, so a check warms the other's)."""

from __future__ import annotations

import os
from pathlib import Path

from toolscript.errors import ExecutionError
from toolscript.paths import user_cache_dir

__all__ = ["deno_binary", "deno_cache_dir", "deno_environment"]


def deno_binary() -> str:
    """``TOOLSCRIPT_DENO``, else the binary of the ``deno`` package."""
    chosen = os.environ.get("TOOLSCRIPT_DENO")
    if chosen:
        return chosen
    try:
        import deno
    except ImportError as exc:
        raise ExecutionError(
            "the deno package is not installed", hint="pip install deno, or set TOOLSCRIPT_DENO"
        ) from exc
    return str(deno.find_deno_bin())


def deno_cache_dir() -> Path:
    """``DENO_DIR``: toolscript's own, never the user's."""
    return user_cache_dir() / "deno"


def deno_environment() -> dict[str, str]:
    """The whole environment Deno gets: its cache, and no update checks or prompts."""
    return {
        "DENO_DIR": str(deno_cache_dir()),
        "DENO_NO_UPDATE_CHECK": "1",
        "DENO_NO_PROMPT": "1",
    }
