"""Printing for the CLI: JSON for scripts, tables for people, plain text for pipes."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["print_json", "print_rows", "stdout_is_terminal"]


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def print_rows(headers: Sequence[str], rows: Sequence[Sequence[str]], *, title: str = "") -> None:
    """A rich table on a terminal; tab-separated lines (no header) in a pipe."""
    if not stdout_is_terminal():
        for row in rows:
            sys.stdout.write("\t".join(cell.replace("\n", " ") for cell in row) + "\n")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*headers, title=title or None, title_justify="left")
    for row in rows:
        table.add_row(*row)
    Console().print(table)
