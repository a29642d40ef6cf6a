"""Printing for the CLI: JSON for scripts, tables for people, plain text for pipes."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Collection, Sequence
from typing import Any, TextIO

__all__ = [
    "non_ascii_spelling",
    "print_json",
    "print_rows",
    "shown_name",
    "stdout_is_terminal",
    "tools_cell",
    "write_shown",
]

# What would end a cell of a tab-separated row, or the row (a run's origin, a server's text)
_ONE_CELL = re.compile(r"[\t\n\r]")


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def write_shown(text: str, stream: TextIO | None = None) -> None:
    """``store.outputs.write_shown`` to ``stream`` (stdout): escapes on a terminal, the text
    as it is elsewhere (imported when called: the CLI's start does without it)."""
    from toolscript.store.outputs import write_shown as write

    write(text, stream or sys.stdout)


def shown_name(name: str) -> str:
    """A name a server sent (a tool's, a server's, a resource's) as stdout shows it: on a
    terminal with its control, bidi and invisible characters as escapes, zero-width ones
    too (``delete\u200b_all`` is no ``delete_all``; free text keeps them, where they join
    emoji), as an approval shows a tool (``store.approvalview.visible_text``); elsewhere
    as it is."""
    if not stdout_is_terminal():
        return name
    from toolscript.store.approvalview import visible_text

    return visible_text(name)


def non_ascii_spelling(name: str) -> str | None:
    """``name`` with each character past ASCII as a JSON escape (``g\\u0456thub``), when it
    has one: a letter of another script reads as another name (a server named so, its
    ``i`` a Cyrillic letter, beside ``github``). None for an ASCII name."""
    if name.isascii():
        return None
    return "".join(char if char.isascii() else json.dumps(char)[1:-1] for char in name)


NAME_WIDTH = 64  # the widest name a table keeps whole (a longer one is a server's choice)

# Whether this process printed a JSON document on stdout: an error after it (`init --json`'s
# report, then why nothing was written) is not printed as a second one.
json_printed = False


def tools_cell(tools: object, last_known: object = None) -> str:
    """A server's tool count in a table: its live count, else (none listed now: failed,
    connecting) the count of its last listing, marked as such (its tools are still what
    list-tools, search and get-types serve)."""
    if last_known and not tools:
        return f"{last_known} (last known)"
    return str(tools)


def print_json(value: Any) -> None:
    """``value`` as JSON, exactly: a control character in one of its strings is written as
    its JSON escape (``\\u001b``, ``\\u202e``), the same value, shown on a terminal and
    never obeyed."""
    from toolscript.store.outputs import visible_controls

    global json_printed
    json_printed = True
    sys.stdout.write(visible_controls(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")


def print_rows(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
    header: bool = False,
    whole: Collection[str] = (),
    names: Collection[str] = (),
) -> None:
    """A rich table on a terminal; tab-separated lines in a pipe, the same columns in every
    row, headed by the column names with ``header`` (``--header``). Columns named in
    ``whole`` (ids) are never cut or wrapped, however narrow the terminal. Cells are text
    as it is (never rich markup), their control characters shown as escapes; those of the
    columns in ``names`` (a tool's, a server's) as ``shown_name`` shows them."""
    if not stdout_is_terminal():
        lines = [list(headers), *rows] if header else rows
        for row in lines:
            sys.stdout.write("\t".join(_ONE_CELL.sub(" ", cell) for cell in row) + "\n")
        return
    from rich.console import Console
    from rich.table import Column, Table
    from rich.text import Text

    from toolscript.store.approvalview import visible_text
    from toolscript.store.outputs import visible_controls

    console = Console()
    named = {index for index, name in enumerate(headers) if name in names}

    def shown(index: int, cell: str) -> Text:
        return Text(visible_text(cell) if index in named else visible_controls(cell))

    if _too_narrow(headers, rows, whole, names, console.width):
        # A table there gave its ids the width and the other columns none (at COLUMNS=40
        # `runs` showed ids alone): each row as its id, then its other cells by name.
        first = next((index for index, name in enumerate(headers) if name in whole), 0)
        if title:
            console.print(Text(visible_controls(title)))
        for row in rows:
            console.print(shown(first, row[first]))
            for index, name in enumerate(headers):
                if index != first:
                    console.print(Text(f"  {name}: ") + shown(index, row[index]))
        return
    # ids and names are what the next command is typed from: whole on a narrow terminal
    # too, where the free text wraps (a name up to NAME_WIDTH)
    kept = {name: None if name in whole else NAME_WIDTH for name in (*whole, *names)}
    columns = [
        Column(
            name,
            no_wrap=name in kept,
            min_width=min(
                max((len(row[index]) for row in rows), default=0), kept[name] or sys.maxsize
            )
            if name in kept
            else None,
        )
        for index, name in enumerate(headers)
    ]
    # Text, not markup: a cell may hold what a server sent ("[link=...]", a stray "[/b]")
    table = Table(
        *columns, title=Text(visible_controls(title)) if title else None, title_justify="left"
    )
    for row in rows:
        table.add_row(*(shown(index, cell) for index, cell in enumerate(row)))
    console.print(table)


def _too_narrow(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    whole: Collection[str],
    names: Collection[str],
    width: int,
) -> bool:
    """Whether a table cannot give each column the width of its name once the columns kept
    whole (``whole``; ``names`` up to NAME_WIDTH) have theirs (a rich table's borders and
    padding: 3 a column, and 1)."""
    needed = 1
    for index, name in enumerate(headers):
        longest = max((len(row[index]) for row in rows), default=0)
        if name in whole:
            needed += 3 + max(longest, len(name))
        elif name in names:
            needed += 3 + max(min(longest, NAME_WIDTH), len(name))
        else:
            needed += 3 + len(name)
    return needed > width
