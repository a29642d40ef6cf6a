"""Options shared by several commands."""

from __future__ import annotations

from typing import Annotated, Any

from toolscript.cli.lazy import typer
from toolscript.execution.execoptions import EXEC_OPTIONS

__all__ = [
    "CacheDirOption",
    "ConfigOption",
    "HeaderOption",
    "JsonOption",
    "MaxCallsOption",
    "MaxOutputOption",
    "MemoryOption",
    "TimeoutOption",
]

ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config",
        "-c",
        envvar="TOOLSCRIPT_CONFIG",
        help="Path of the config file [default: .toolscript.json here or in the nearest folder above].",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
HeaderOption = Annotated[
    bool,
    typer.Option("--header", help="Piped (tab-separated) output: a first row naming the columns."),
]
CacheDirOption = Annotated[
    str | None,
    typer.Option(
        "--cache-dir",
        envvar="TOOLSCRIPT_CACHE_DIR",
        help="Where generated artifacts and gateway state go [default: .toolscript/ beside the config].",
        show_default=False,
    ),
]


def _limit(name: str) -> Any:
    """The option of the sandbox's limit ``EXEC_OPTIONS[name]`` (exec's and run's alike): its
    flags, help and range; left out, it is the resumed run's, else its fallback."""
    option = EXEC_OPTIONS[name]
    fallback = option.fallback  # an int as it is (10485760, not 1.04858e+07)
    shown = f"{fallback:g}" if isinstance(fallback, float) else str(fallback)
    return typer.Option(
        *option.flags,
        help=option.help,
        min=option.minimum,
        max=option.maximum,
        show_default=f"{shown}, or the resumed run's",  # (docs/policy.md)
    )


TimeoutOption = Annotated[float | None, _limit("timeout")]
MemoryOption = Annotated[int | None, _limit("memory")]
MaxOutputOption = Annotated[int | None, _limit("max_output")]
MaxCallsOption = Annotated[int | None, _limit("max_calls")]
