"""Output that does not fit: the whole of it kept in the run's directory, and a preview.

When a script prints more than its cap, what was not printed is kept with the rest in
``<project state>/runs/<run id>/output.txt`` (its stderr, cut in the MCP face, in
``errors.txt`` beside it; 0600; the newest ``KEEP`` such directories
and at most ``MAX_BYTES``, or ``TOOLSCRIPT_KEPT_OUTPUT_MB``, are kept), and a preview takes its place: valid JSON when the
output is JSON (the first items of each array and keys of each object, with counts of
what was left out), else the first lines.

A script's output shown to a person (a terminal, the MCP face's text) has its control
characters made visible (``visible_controls``): a script must not set the terminal's title,
write its clipboard (OSC 52) or clear the screen.

Stdlib only: the exec path imports it.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "KEEP",
    "MAX_BYTES",
    "VisibleControls",
    "error_lines",
    "errors_file",
    "json_preview",
    "kept_output",
    "kept_output_limit",
    "open_output",
    "output_file",
    "preview",
    "prune_outputs",
    "visible_controls",
    "write_shown",
]

KEEP = 20
MAX_BYTES = 512 * 1024 * 1024
MORE_KEY = "…"  # the key that counts an object's keys left out
# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional formatting
# characters (which reorder what a terminal shows after them: "Trojan Source"); shown as
# JSON escapes (\u001b), which keep a JSON text valid and its value the same where one
# stood in one of its strings.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible_controls(text: str) -> str:
    """``text`` with its control characters (ESC, BEL, CR, C1, bidi overrides...) as
    visible escapes."""
    return _CONTROLS.sub(lambda found: f"\\u{ord(found[0]):04x}", text)


def write_shown(text: str, stream: TextIO) -> None:
    """Write ``text`` to ``stream``: on a terminal with its control characters as escapes,
    as what a server or a repository's file says is shown, never obeyed (a ``\\r`` and an
    erased line would hide the command ``trust`` names); elsewhere as it is."""
    stream.write(visible_controls(text) if stream.isatty() else text)


def error_lines(message: str, hint: str | None, terminal: bool) -> str:
    """An error as the CLI writes it on stderr (``toolscript: error: ...`` and its hint); on
    a ``terminal`` with its control characters as escapes: it may quote what a server sent
    or a repository's file names."""
    if terminal:
        message, hint = visible_controls(message), hint and visible_controls(hint)
    return f"toolscript: error: {message}\n" + (f"hint: {hint}\n" if hint else "")


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


def errors_file(output: Path) -> Path:
    """Where the whole stderr of the run whose output is ``output`` goes, when it is cut
    (the MCP face's runs)."""
    return output.with_name("errors.txt")


def kept_output_limit() -> int:
    """Bytes that kept outputs may take in all: ``MAX_BYTES``, or
    ``TOOLSCRIPT_KEPT_OUTPUT_MB`` megabytes when that is set (a number)."""
    chosen = os.environ.get("TOOLSCRIPT_KEPT_OUTPUT_MB", "").strip()
    try:
        return max(0, int(float(chosen) * 1024 * 1024)) if chosen else MAX_BYTES
    except ValueError:
        return MAX_BYTES


def open_output(path: Path) -> Any:
    """A run's output file (``output_file``) opened for binary writing, readable by its user
    only (its folder 0700), once the outputs of older runs past the retention are dropped.
    Raises ``OSError`` when the folder cannot hold it (read-only, full, not a folder)."""
    prune_outputs(path.parent.parent, keep=KEEP - 1)  # with this one: KEEP
    for attempt in range(3):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")
        except FileNotFoundError:  # another run's pruning took the new folder: make it again
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def kept_output(path: Path) -> None:
    """A run's output file is whole: outputs past the retention are dropped, counting this
    one first (concurrent runs made others while it was written)."""
    prune_outputs(path.parent.parent, mine=path.parent)


def prune_outputs(
    root: Path, keep: int = KEEP, max_bytes: int | None = None, mine: Path | None = None
) -> None:
    """Drop the oldest run directories of ``root`` (the state's ``runs`` folder) past ``keep``
    or past ``max_bytes`` in all (``kept_output_limit()`` when None); ``mine`` counts first
    and is never dropped. Other runs prune at the same time: a folder that went meanwhile
    is simply not counted."""
    limit = kept_output_limit() if max_bytes is None else max_bytes
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    folders: list[tuple[float, Path]] = []
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                folders.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
        except OSError:  # pruned by another run since it was listed
            continue
    folders.sort(key=lambda found: (found[1] != mine, -found[0]))
    total = 0
    for number, (_, folder) in enumerate(folders):
        total += _size(folder)
        if folder != mine and (number >= keep or total > limit):
            shutil.rmtree(folder, ignore_errors=True)


def _size(folder: Path) -> int:
    """Bytes of the files in ``folder``; what another run deletes meanwhile counts nothing."""
    size = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                size += entry.stat(follow_symlinks=False).st_size
    return size


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
    except (ValueError, RecursionError):  # nested past Python's limit ("[[[[..."): text
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
