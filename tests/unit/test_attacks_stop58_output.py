"""Tab-separated rows (``toolscript runs | cut -f6``): a cell holds no tab or line break,
whatever a server or the agent's URL (a run's origin) put in it, so no column shifts."""

from __future__ import annotations

import pytest

from toolscript.cli import output


def test_a_cell_never_shifts_a_column_in_a_pipe(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(output, "stdout_is_terminal", lambda: False)
    output.print_rows(["run", "origin", "status"], [["r1", "agent\tcompleted\nr2", "stopped"]])
    assert capsys.readouterr().out.split("\n")[0].split("\t") == [
        "r1",
        "agent completed r2",
        "stopped",
    ]
