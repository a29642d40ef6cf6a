"""``cache``: toolscript's own cache in the user's folder, pruned now rather than daily."""

from __future__ import annotations

from typing import Annotated

import typer

from toolscript.cli.options import JsonOption
from toolscript.cli.output import print_json
from toolscript.plumbing.paths import user_cache_path
from toolscript.store.cacheprune import KEEP_DAYS, prune_cache

__all__ = ["app"]

app = typer.Typer(
    help="toolscript's cache in your folder (TOOLSCRIPT_HOME, else ~/.cache/toolscript).\n\n"
    "Examples:\n\n\b\n"
    "    toolscript cache prune --dry-run     # what would go, per folder\n"
    "    toolscript cache prune --older-than 7",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("prune")
def prune(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")
    ] = False,
    older_than: Annotated[
        float,
        typer.Option(
            "--older-than",
            min=0,
            help="Days a file named by a hash is kept after its last use (1 at least: "
            "running gateways mark what they use every 6 hours).",
        ),
    ] = KEEP_DAYS,
    as_json: JsonOption = False,
) -> None:
    """Remove what no toolscript will read again from the user's cache: search models of
    a model folder that is gone or changed, and modules, checker files, prepared scripts
    and config checks unused for --older-than days; files of runs and gateways that ended.
    Nothing a running gateway or run uses is removed. Running gateways do this once a day.

    Examples:

    \b
        toolscript cache prune --dry-run
        toolscript cache prune --older-than 7 --json
    """
    root = user_cache_path()  # a missing cache is not made: there is nothing to prune
    report = prune_cache(root, keep_days=older_than, dry_run=dry_run)
    summary = report.to_dict()
    if as_json:
        print_json({"cache": str(root), **summary})
        return
    verb = "would free" if dry_run else "freed"
    typer.echo(f"{root}: {verb} {_size(report.freed)} ({len(report.removed)} entries)")
    for name, folder in sorted(summary["folders"].items()):
        reasons = ", ".join(f"{count} {why}" for why, count in sorted(folder["reasons"].items()))
        typer.echo(
            f"  {name + '/':<15} {folder['entries']:>6}  {_size(folder['bytes']):>9}  {reasons}"
        )
    for error in report.errors[:5]:
        typer.echo(f"warning: could not remove {error}", err=True)
    if len(report.errors) > 5:
        typer.echo(f"warning: and {len(report.errors) - 5} more", err=True)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB"):
        if value < 1000:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.2f} GB"
