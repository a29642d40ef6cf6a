"""Output that does not fit: the whole of it kept in the run's directory, and a preview.

When a script prints more than its cap, what was not printed is kept with the rest in
``<project state>/runs/<run id>/output.txt`` (0600; the newest ``KEEP`` such directories
and at most ``MAX_BYTES`` are kept), and a preview takes its place: valid JSON when the
output is JSON (the first items of each array and keys of each object, with counts of
what was left out), else the first lines.

A script's output shown to a person (a terminal, the MCP face's text) has its control
characters made visible (``visible_controls``): a script must not set the terminal's title,
write its clipboard (OSC 52) or clear the screen.

Stdlib only: the exec path imports it.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

__all__ = [
    "KEEP",
    "MAX_BYTES",
    "VisibleControls",
    "json_preview",
    "open_output",
    "output_file",
    "preview",
    "prune_outputs",
    "visible_controls",
]

KEEP = 20
MAX_BYTES = 512 * 1024 * 1024
MORE_KEY = "…"  # the key that counts an object's keys left out
# C0 controls but newline and tab, DEL, C1 controls; shown as JSON escapes (\u001b), which
# keep a JSON text valid where a raw C1 character stood in one of its strings.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible_controls(text: str) -> str:
    """``text`` with its control characters (ESC, BEL, CR, C1...) as visible escapes."""
    return _CONTROLS.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


class VisibleControls:
    """``visible_controls`` over a byte stream that arrives in pieces (UTF-8; what is not
    UTF-8 becomes U+FFFD, so no stray byte can act as a C1 control either)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data: bytes, final: bool = False) -> bytes:
        return visible_controls(self._decoder.decode(data, final)).encode()


def output_file(state_dir: Path, run_id: str) -> Path:
    """Where the whole output of ``run_id`` goes (nothing is made until it is written)."""
    return state_dir / "runs" / run_id / "output.txt"


def open_output(path: Path) -> Any:
    """A run's output file (``output_file``) opened for binary writing, readable by its user
    only (its folder 0700), once the outputs of older runs past the retention are dropped."""
    prune_outputs(path.parent.parent, keep=KEEP - 1)  # with this one: KEEP
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def prune_outputs(root: Path, keep: int = KEEP, max_bytes: int = MAX_BYTES) -> None:
    """Drop the oldest run directories of ``root`` (the state's ``runs`` folder) past ``keep``
    or past ``max_bytes`` in all."""
    try:
        folders = sorted(
            (entry for entry in root.iterdir() if entry.is_dir()),
            key=lambda entry: entry.stat().st_mtime,
            reverse=True,
        )
    except OSError:
        return
    total = 0
    for number, folder in enumerate(folders):
        size = sum(item.stat().st_size for item in folder.iterdir() if item.is_file())
        total += size
        if number >= keep or total > max_bytes:
            shutil.rmtree(folder, ignore_errors=True)


def _shrunk(value: Any, width: int, depth: int) -> Any:
    """``value`` with at most ``width`` items per array and keys per object, ``depth`` deep."""
    if isinstance(value, list):
        if depth == 0:
            return f"[{len(value)} items]" if value else []
        kept = [_shrunk(item, width, depth - 1) for item in value[:width]]
        if len(value) > width:
            kept.append(f"{MORE_KEY} {len(value) - width} more items")
        return kept
    if isinstance(value, dict):
        if depth == 0:
            return f"{{{len(value)} keys}}" if value else {}
        keys = list(value)[:width]
        shown = {key: _shrunk(value[key], width, depth - 1) for key in keys}
        if len(value) > width:
            shown[MORE_KEY] = f"{len(value) - width} more keys"
        return shown
    if isinstance(value, str) and len(value) > 200:
        return value[:200] + f"{MORE_KEY} ({len(value) - 200} more characters)"
    return value


def json_preview(value: Any, budget: int) -> str:
    """The largest preview of ``value`` that fits in ``budget`` bytes, as JSON text."""
    best = json.dumps(_shrunk(value, 1, 1), ensure_ascii=False)
    for depth in (2, 3, 4, 6, 8):
        for width in (3, 5, 10, 20, 50):
            text = json.dumps(_shrunk(value, width, depth), ensure_ascii=False)
            if len(text.encode()) > budget:
                break
            best = text
    return best


def preview(data: bytes, budget: int) -> tuple[str, bool]:
    """A preview of ``data`` within about ``budget`` bytes: ``(text, whether it is JSON)``."""
    text = data.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    else:
        if isinstance(value, dict | list):
            return json_preview(value, budget), True
    lines = text.splitlines()
    shown: list[str] = []
    used = 0
    for line in lines:
        piece = line if len(line) <= 500 else line[:500] + f"{MORE_KEY} ({len(line) - 500} more)"
        if used + len(piece) + 1 > budget:
            break
        shown.append(piece)
        used += len(piece) + 1
    if len(shown) < len(lines):
        shown.append(f"{MORE_KEY} {len(lines) - len(shown)} more lines")
    return "\n".join(shown), False
