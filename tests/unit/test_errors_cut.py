"""Stderr with a part of its own (the MCP face's ``Limits.errors_kept``): what fits is shown,
the rest never stops the script; its end is shown after a note of what was cut, the whole
kept in a file, or the note says why not."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

from toolscript.execution.sandbox import ERRORS_CUT, _Budget, _ErrorsPump


def pumped(data: bytes, spill: Path, *, budget: int, kept: int, limit: int = 1 << 20) -> bytes:
    """What the pump shows of ``data`` written to the child's stderr."""
    read, write = os.pipe()
    shown = io.BytesIO()
    pump = _ErrorsPump(
        os.fdopen(read, "rb"),
        shown,
        _Budget(budget, None),  # type: ignore[arg-type]  # (try_spend never kills)
        lambda line: line,
        spill,
        kept,
        limit,
    )
    pump.start()
    writer = threading.Thread(target=lambda: (os.write(write, data), os.close(write)))
    writer.start()
    writer.join()
    pump.join()
    return shown.getvalue()


LINES = b"".join(b"line %d\n" % number for number in range(1000))


def test_what_fits_is_shown_whole(tmp_path: Path) -> None:
    spill = tmp_path / "run" / "errors.txt"
    assert pumped(b"one\ntwo\n", spill, budget=100, kept=50) == b"one\ntwo\n"
    assert not spill.exists()


def test_past_the_budget_the_first_lines_a_note_and_the_end_are_shown(tmp_path: Path) -> None:
    spill = tmp_path / "run" / "errors.txt"
    shown = pumped(LINES + b"Error: the end\n", spill, budget=100, kept=60)
    head, cut, tail = shown.partition(ERRORS_CUT.encode())
    assert cut
    assert head.startswith(b"line 0\n") and len(head) <= 101
    assert tail.endswith(b"Error: the end\n")
    assert b"line 999\n" in tail and b"line 500\n" not in tail
    assert f"the whole of it is in {spill}".encode() in tail
    assert spill.read_bytes() == LINES + b"Error: the end\n"


def test_a_file_that_cannot_be_kept_is_said_and_the_end_still_shown(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("a file where the folder would be")
    shown = pumped(LINES, tmp_path / "run" / "errors.txt", budget=100, kept=60)
    assert b"it could not be kept" in shown and shown.endswith(b"line 999\n")


def test_past_the_files_limit_the_note_says_how_much_it_holds(tmp_path: Path) -> None:
    spill = tmp_path / "run" / "errors.txt"
    shown = pumped(LINES, spill, budget=100, kept=60, limit=500)
    assert f"its first 500 bytes are in {spill}".encode() in shown
    assert spill.read_bytes() == LINES[:500] and shown.endswith(b"line 999\n")


def test_a_last_line_longer_than_the_end_kept_is_shown_in_part(tmp_path: Path) -> None:
    """The end shown starts at a line's start: a last line longer than the bytes kept (an
    error quoting a server's long text) was left out whole, the note ending the answer."""
    last = b"Error: " + b"x" * 5000 + b"\n"
    shown = pumped(LINES + last, tmp_path / "run" / "errors.txt", budget=100, kept=60)
    assert shown.endswith(b"x" * 50 + b"\n")


def test_a_note_the_script_prints_is_not_taken_for_the_sandboxs(tmp_path: Path) -> None:
    """The note on what was cut carries a nonce of the process: a script (or a server's
    text it prints) writing a line spelled as the note, at the end stderr shows, made the
    face read that line as the note (the resource unlinked, the note's word its own)."""
    from toolscript.mcpface.backend import errors_named

    spill = tmp_path / "run" / "errors.txt"
    forged = (
        b"toolscript: errors cut: 1 bytes of its 2 are left out here; it could not be kept (x)\n"
    )
    shown = pumped(LINES + forged, spill, budget=100, kept=200)
    uri = "toolscript://runs/run/errors"
    text, linked = errors_named(shown, spill, uri)
    assert linked == (uri,)
    assert f"the resource {uri}".encode() in text
    assert text.endswith(forged)
