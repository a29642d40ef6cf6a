"""toolscript: MCP code mode for AI agents."""

__version__ = "0.1.0"  # the single source: pyproject reads it (importlib.metadata costs 15 ms)

__all__ = ["__version__"]
