"""Options shared by several commands."""

from __future__ import annotations

from typing import Annotated

from toolscript.cli.lazy import typer

__all__ = ["CacheDirOption", "ConfigOption", "HeaderOption", "JsonOption"]

ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config",
        "-c",
        envvar="TOOLSCRIPT_CONFIG",
        help="Path of the config file [default: ./.toolscript.json].",
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
