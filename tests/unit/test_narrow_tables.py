"""A table on a narrow terminal (COLUMNS=40, a split pane): the names a user copies into
the next command stay whole; the free text wraps."""

from __future__ import annotations

import sys
import time
from pathlib import Path

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
    lines = [line.strip() for line in shown.splitlines()]
    assert "github-issues" in lines and "time" in lines, shown


def test_runs_on_a_narrow_terminal_show_each_runs_state_and_time(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`toolscript runs` at 40 columns showed the run ids and empty columns: the ids took the
    width and the rest got none. Too narrow for a table, each run is its id, then its other
    columns by name."""
    from typer.testing import CliRunner

    from toolscript.cli.main import app
    from toolscript.plumbing.paths import project_state_dir
    from toolscript.store.runlog import RunLog, runlog_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLSCRIPT_CONFIG", raising=False)
    (tmp_path / ".toolscript.json").write_text('{"mcpServers": {}}')
    state = project_state_dir(tmp_path)
    state.mkdir(parents=True, exist_ok=True)
    RunLog(runlog_path(state)).write(
        runs=[
            {
                "id": "20261124-101500-3f9a1c",
                "origin": "cli",
                "started": 1.0e9,
                "ended": 1.0e9 + 2,
                "status": "awaiting_approval",
                "exit": 120,
                "calls": 3,
            }
        ]
    )
    monkeypatch.setattr(output, "stdout_is_terminal", lambda: True)
    monkeypatch.setenv("COLUMNS", "40")
    shown = CliRunner().invoke(app, ["runs"]).stdout
    lines = [line.strip() for line in shown.splitlines()]
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1.0e9))
    assert lines[:2] == ["20261124-101500-3f9a1c", f"started: {started}"], shown
    assert "status: awaiting_approval" in lines and "exit: 120" in lines, shown
    assert "origin: cli" in shown and "exit: 120" in shown and "origin: cli" in shown
