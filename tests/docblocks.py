"""The shell blocks of README.md and docs/*.md that are marked runnable.

A page marks a fenced ``bash`` block runnable with a comment on the line right before its
fence, naming where the block runs:

    <!-- runnable -->            in a project whose .toolscript.json names the reference
                                 servers (time, everything, memory), with its gateway running
                                 and TOOLSCRIPT_GATEWAY_URL set, as in a Claude Code session
    <!-- runnable: empty -->     in an empty directory holding one empty folder, my-project
    <!-- runnable: checkout -->  in this repository's checkout, HOME a new empty directory

``tests/test_docs_examples.py`` runs every one of them; ``tests/unit/test_docs_pages.py``
checks the markers and the pages' links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLACES = ("project", "empty", "checkout")
MARKER = re.compile(r"^<!-- runnable(?:: (?P<place>[a-z]+))? -->$", re.M)  # a line of its own
FENCE = re.compile(r"```(?P<language>\w*)\n(?P<code>.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One runnable block: its page, its line, where it runs and its code."""

    page: Path
    line: int
    place: str
    language: str
    code: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def runnable_blocks(page: Path) -> list[Block]:
    """Every block of ``page`` marked runnable, in page order; a marker not followed by a
    fence at once is an error (it would silently test nothing)."""
    text = page.read_text()
    blocks = []
    for marker in MARKER.finditer(text):
        line = text.count("\n", 0, marker.start()) + 1
        fence = FENCE.match(text, marker.end() + 1)
        if fence is None:
            raise ValueError(f"{page.name}:{line}: a runnable marker not right before a fence")
        blocks.append(
            Block(
                page=page,
                line=line,
                place=marker.group("place") or "project",
                language=fence.group("language"),
                code=fence.group("code"),
            )
        )
    return blocks


def every_runnable_block() -> list[Block]:
    return [block for page in pages() for block in runnable_blocks(page)]
