"""What the gateway holds per tool: one compact copy of each thing it serves (issue 45)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from toolscript.pipeline.artifacts import Artifacts, CacheLayout


def test_the_module_is_held_as_the_utf8_it_is_served_as(tmp_path: Path) -> None:
    """A str of a module with one emoji in a tool's description takes four bytes a
    character (4 MB at 1,600 tools); the gateway keeps the UTF-8 it sends, the same bytes
    and hash as the file's text gave before."""
    layout = CacheLayout(tmp_path)
    text = "export const tools = {\n  /** Say hi 👋 */\n  hi: () => 1,\n};\n" + "// x\n" * 1000
    layout.module.parent.mkdir(parents=True, exist_ok=True)
    layout.module.write_text(text, encoding="utf-8")
    artifacts = Artifacts.load(layout, [])
    assert artifacts.module == text.encode()
    assert artifacts.module_hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert len(artifacts.module) < 2 * len(text)  # not four bytes a character
