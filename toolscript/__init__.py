"""toolscript: MCP code mode for AI agents."""

__version__ = "0.1.0"  # the single source: pyproject reads it (importlib.metadata costs 15 ms)

from typing import Any

__all__ = ["__version__", "tool"]


def __getattr__(name: str) -> Any:
    """``from toolscript import tool``: the decorator for local tool files, imported lazily
    (the exec path imports this package and needs none of it)."""
    if name == "tool":
        from toolscript.upstream.worker import tool

        return tool
    raise AttributeError(name)
