"""toolscript: MCP code mode for AI agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("toolscript")
except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0"

__all__ = ["__version__"]
