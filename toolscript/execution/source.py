"""Prepare a toolscript's source for Deno: top-level ``return``, and errors at the user's lines.

Code without ``return`` runs as the module it is. Code with ``return`` is wrapped
in an async function whose value is printed as JSON: one line before the user's code
holds the hoisted static imports (and re-exports) and the function's head, and two
after it close the function, print its value and end the run at once (exit 0: a timer or
call the script left running does not outlive its ``return``); ``export`` keywords are
dropped.
Every user line keeps its text and columns one line down, and ``SourceMap`` maps
Deno's positions and source excerpts back to the user's own lines.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

__all__ = [
    "RESULT_VARIABLE",
    "SCRIPT_SUFFIXES",
    "PreparedSource",
    "SourceMap",
    "prepare",
    "prepare_source",
]

SCRIPT_SUFFIXES = (".ts", ".mts", ".tsx", ".js", ".mjs", ".jsx")

RESULT_VARIABLE = "__toolscriptResult"

_RETURN = re.compile(r"\breturn\b")
_SHEBANG = re.compile("(\ufeff?)#!")  # after a byte order mark too
_IMPORT_START = re.compile(r"^\s*import\s*(?:type\b\s*)?(?:[\w$*{]|[\"'])")
_STATEMENT_END = re.compile(
    r"""(?:\bfrom\s*["'][^"']+["']|^\s*import\s*["'][^"']+["'])\s*(?:with\s*\{[^}]*\}\s*)?;?"""
)
_REEXPORT = re.compile(
    r"""^\s*export\s*(?:type\s*)?(?:\*|\{[^}]*\})\s*(?:from\s*["'][^"']+["'])?\s*;?\s*$"""
)
_EXPORT_DECLARATION = re.compile(
    r"^(\s*)export\s+(?=(?:const|let|var|function|async|class|type|interface|enum|abstract|declare)\b)"
)
_EXPORT_DEFAULT = re.compile(r"^(\s*)export\s+default\s+")


class SourceMap(NamedTuple):
    """Positions in the prepared code back to the user's; the identity without a wrapper."""

    user_lines: list[str]  # never empty: "".split("\n") is [""]
    head: str = ""  # the wrapper's first line; empty when the code runs unwrapped
    # per hoisted statement: its (start, end) columns on the head line, its line and column,
    # and whether it was one line (then columns inside it map one to one)
    hoisted: tuple[tuple[int, int, int, int, bool], ...] = ()
    # lines whose text the wrapper changed but whose columns it kept (an import's remainder,
    # a line that lost `export`): the user's line number and the changed text
    restored: tuple[tuple[int, str], ...] = ()

    @property
    def wrapped(self) -> bool:
        return bool(self.head)

    def position(self, line: int, column: int) -> tuple[int, int]:
        """The user's ``(line, column)`` for a position in the prepared code."""
        if not self.wrapped:
            return line, column
        if line <= 1:
            for start, end, origin_line, origin_column, one_line in self.hoisted:
                if start <= column <= end:
                    return origin_line, origin_column + (column - start if one_line else 0)
            return 1, 1
        if line - 1 <= len(self.user_lines):
            return line - 1, column
        last = len(self.user_lines)
        return last, len(self.user_lines[last - 1]) + 1

    def is_users(self, line: int) -> bool:
        """Whether a prepared line is one of the user's (a stack frame elsewhere is ours)."""
        return not self.wrapped or 2 <= line <= len(self.user_lines) + 1

    def restored_line(self, text: str) -> tuple[int, str] | None:
        """For a changed line quoted in an excerpt: its number and the user's own text (the
        columns are the same)."""
        if not self.wrapped or text in self.user_lines:
            return None
        for line, changed in self.restored:
            if changed == text:
                return line, self.user_lines[line - 1]
        return None

    def original_line(self, text: str) -> tuple[int, str] | None:
        """For a line of the wrapper quoted in an excerpt: the user's line shown instead."""
        if not self.wrapped:
            return None
        if text == self.head:
            line = self.hoisted[0][2] if self.hoisted else 1
            return line, self.user_lines[line - 1]
        if text == _CLOSE:
            return len(self.user_lines), self.user_lines[-1]
        return None


class PreparedSource(NamedTuple):
    code: str
    map: SourceMap


_CLOSE = "})();"
# The script's top level settled: the run is over, whatever timers or calls it left behind
# (an interval would otherwise keep calling tools until --timeout).
_END_RUN = "Deno.exit(0);"
_JSON_VARIABLE = "__toolscriptJson"
_WHY_VARIABLE = "__toolscriptWhy"
# The return value as JSON, or one line saying why it cannot be (a BigInt, a cycle, a
# function) and exit 1: not JSON.stringify's stack at a line the user never wrote, and not
# "undefined" printed as if it were the value. Plain JavaScript that type-checks.
_AS_JSON = (
    f'let {_JSON_VARIABLE}; let {_WHY_VARIABLE} = ""; '
    f"try {{ {_JSON_VARIABLE} = JSON.stringify({RESULT_VARIABLE}); }} catch (e) {{ "
    f'{_WHY_VARIABLE} = String(e instanceof Error ? e.message : e).split("\\n")[0]; }} '
    f'if (typeof {_JSON_VARIABLE} !== "string") {{ console.error("toolscript: error: the '
    f'script\'s return value cannot be written as JSON (" + ({_WHY_VARIABLE} || "it is a " + '
    f'typeof {RESULT_VARIABLE}) + "); return plain data: objects, arrays, strings, numbers, '
    f'booleans or null"); Deno.exit(1); }}'
)


def prepare_source(code: str) -> str:
    """The code Deno runs; identical to ``code`` when it has no ``return``."""
    return prepare(code).code


def _blank_keyword(found: re.Match[str]) -> str:
    return found[1] + " " * (len(found[0]) - len(found[1]))


def prepare(code: str, *, result_marker: str = "") -> PreparedSource:
    """The code Deno runs and the map from its positions to the user's.

    ``result_marker`` goes before the printed value, on its line, so a reader of the output
    can tell the value from what the script printed itself.
    """
    user_lines = code.split("\n")
    if not _RETURN.search(code):
        return PreparedSource(code, SourceMap(user_lines))
    lines = list(user_lines)
    # A shebang (`#!/usr/bin/env toolscript`) is valid only on a module's first line, which
    # the wrapper's head now holds: it becomes a comment of the same width.
    shebang = _SHEBANG.match(lines[0])
    if shebang:
        lines[0] = shebang[1] + "//" + lines[0][shebang.end() :]
    # statement, its line and column (1-based), whether it was one line
    hoisted: list[tuple[str, int, int, bool]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _IMPORT_START.match(line) and not line.lstrip().startswith(("import(", "import.meta")):
            end = index
            while not _STATEMENT_END.search(lines[end]) and end + 1 < len(lines):
                end += 1
            finish = _STATEMENT_END.search(lines[end])
            cut = finish.end() if finish else len(lines[end])
            statement = [*lines[index:end], lines[end][:cut]]
            column = len(line) - len(line.lstrip()) + 1
            written = " ".join(part.strip() for part in statement)
            hoisted.append((written, index + 1, column, end == index))
            rest = lines[end][cut:]
            for blank in range(index, end + 1):
                lines[blank] = ""
            if rest.strip():
                # The remainder of a line like `import ...; return x` stays on its line.
                lines[end] = " " * cut + rest
                index = end
                continue
            index = end + 1
            continue
        if _REEXPORT.match(line):
            if " from " in line or "from'" in line or 'from"' in line:
                column = len(line) - len(line.lstrip()) + 1
                hoisted.append((line.strip(), index + 1, column, True))
            lines[index] = ""
        else:
            # `export` goes, its columns stay: positions on the line are the user's.
            line = _EXPORT_DEFAULT.sub(_blank_keyword, line)
            lines[index] = _EXPORT_DECLARATION.sub(_blank_keyword, line)
        index += 1
    restored = tuple(
        (number, text)
        for number, (text, users) in enumerate(zip(lines, user_lines, strict=True), 1)
        if text != users and text.strip()
    )
    head, spans = "", []
    for written, line_number, column, one_line in hoisted:
        text = written if written.endswith(";") else written + ";"
        spans.append((len(head) + 1, len(head) + len(text), line_number, column, one_line))
        head += text + " "
    head += f"const {RESULT_VARIABLE} = await (async () => {{"
    prepared = [
        head,
        *lines,
        _CLOSE,
        f"if ({RESULT_VARIABLE} !== undefined) {{ {_AS_JSON} "
        f"console.log({json.dumps(result_marker) + ' + ' if result_marker else ''}"
        f"{_JSON_VARIABLE}); }} {_END_RUN}",
    ]
    return PreparedSource(
        "\n".join(prepared),
        SourceMap(user_lines, head=head, hoisted=tuple(spans), restored=restored),
    )
