"""Printing for the CLI: JSON for scripts, tables for people, plain text for pipes."""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["print_json", "print_rows", "stdout_is_terminal"]


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def print_rows(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
    header: bool = False,
    whole: Collection[str] = (),
) -> None:
    """A rich table on a terminal; tab-separated lines in a pipe, the same columns in every
    row, headed by the column names with ``header`` (``--header``). Columns named in
    ``whole`` (ids) are never cut or wrapped, however narrow the terminal."""
    if not stdout_is_terminal():
        lines = [list(headers), *rows] if header else rows
        for row in lines:
            sys.stdout.write("\t".join(cell.replace("\n", " ") for cell in row) + "\n")
        return
    from rich.console import Console
    from rich.table import Column, Table

    columns = [
        Column(
            name,
            no_wrap=name in whole,
            min_width=max((len(row[index]) for row in rows), default=0) if name in whole else None,
        )
        for index, name in enumerate(headers)
    ]
    table = Table(*columns, title=title or None, title_justify="left")
    for row in rows:
        table.add_row(*row)
    Console().print(table)
