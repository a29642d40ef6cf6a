"""Which Deno binary toolscript runs (the sandbox and the gateway's type checker)."""

from __future__ import annotations

import os

from toolscript.errors import ExecutionError

__all__ = ["deno_binary"]


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
