"""A table on a narrow terminal (COLUMNS=40, a split pane): the names a user copies into
the next command stay whole; the free text wraps."""

from __future__ import annotations

import sys

import pytest

from toolscript.cli import output


def test_names_stay_whole_on_a_narrow_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`list-servers` at 40 columns showed "ti…" for the server `time` and "gi…" for
    `github-issues`: names no one can type from."""
    monkeypatch.setattr(output, "stdout_is_terminal", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setenv("COLUMNS", "40")
    output.print_rows(
        ["server", "transport", "state", "tools", "reason", "description", "source"],
        [
            ["github-issues", "stdio", "connected", "41", "", "GitHub issues", ".toolscript.json"],
            ["time", "stdio", "connected", "2", "", "Current time and zones", ".toolscript.json"],
        ],
        names=("server",),
    )
    shown = capsys.readouterr().out
    assert "github-issues" in shown and " time " in shown, shown
