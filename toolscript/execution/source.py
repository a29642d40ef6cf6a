"""Prepare a toolscript's source for Deno: top-level ``return`` without moving any line.

Code without ``return`` runs as the module it is. Code with ``return`` is wrapped
in an async function whose value is printed as JSON; static imports (and
re-exports) are hoisted onto the first line and ``export`` keywords dropped, so
every statement keeps its line number and errors point at the user's lines.
"""

from __future__ import annotations

import re

__all__ = ["RESULT_VARIABLE", "SCRIPT_SUFFIXES", "prepare_source"]

SCRIPT_SUFFIXES = (".ts", ".mts", ".tsx", ".js", ".mjs", ".jsx")

RESULT_VARIABLE = "__toolscriptResult"

_RETURN = re.compile(r"\breturn\b")
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


def prepare_source(code: str) -> str:
    """The code Deno runs; identical to ``code`` when it has no ``return``."""
    if not _RETURN.search(code):
        return code
    lines = code.split("\n")
    hoisted: list[str] = []
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
            hoisted.append(" ".join(part.strip() for part in statement))
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
                hoisted.append(line.strip())
            lines[index] = ""
        else:
            line = _EXPORT_DEFAULT.sub(r"\1", line)
            lines[index] = _EXPORT_DECLARATION.sub(r"\1", line)
        index += 1
    prefix = " ".join(
        statement if statement.endswith(";") else statement + ";" for statement in hoisted
    )
    lines[0] = f"{prefix} const {RESULT_VARIABLE} = await (async () => {{ {lines[0]}".lstrip()
    lines.append("})();")
    lines.append(
        f"if ({RESULT_VARIABLE} !== undefined) console.log(JSON.stringify({RESULT_VARIABLE}));"
    )
    return "\n".join(lines)
