"""`toolscript approve RUN_ID` when the stopped call's server entry changed in the config
since the run stopped: the approval would be bound to the server as it was shown, and would
not hold for what runs now. Before, it was recorded without a word, and the resume asked
again (or stopped again) with the person none the wiser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from toolscript.cli.main import app
from toolscript.config import load_config
from toolscript.plumbing.paths import project_state_dir
from toolscript.store.runlog import RunLog, runlog_path

runner = CliRunner()
TIME = {"command": "uvx", "args": ["mcp-server-time"]}


pytestmark = pytest.mark.usefixtures("project")  # (tests/unit/conftest.py)


def _configure(project: Path, servers: dict[str, object]) -> str:
    """Write the config; the identity of its server ``time`` ('' when it has none)."""
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": servers}))
    loaded = load_config(None)
    return next((s.identity for s in loaded.servers if s.name == "time"), "")


def _stopped_run(project: Path, identity: str) -> RunLog:
    """A run stopped for approval at a call of time.convert_time, shown for ``identity``."""
    loaded = load_config(None)
    runlog = RunLog(runlog_path(project_state_dir(loaded.project_dir)))
    call = {"seq": 1, "tool": "time__convert_time", "arguments": {}, "digest": "d"}
    runlog.write(
        runs=[
            {
                "id": "r1",
                "script_hash": "h",
                "origin": "cli",
                "started": 1.0,
                "ended": 2.0,
                "status": "awaiting_approval",
                "calls": 0,
                "by_agent": 0,
                "stopped": {
                    "message": "needs approval",
                    "call": call | {"server_identity": identity},
                },
            }
        ]
    )
    return runlog


def _said(result: Result) -> str:
    error = result.exception
    return result.output + (f"{error} {getattr(error, 'hint', '')}" if error else "")


@pytest.mark.parametrize(
    "now",
    [{"time": TIME | {"args": ["mcp-server-time", "--local-timezone=UTC"]}}, {}],
    ids=["repointed", "removed"],
)
def test_approve_says_the_entry_changed_and_approves_nothing(
    project: Path, now: dict[str, object]
) -> None:
    shown_for = _configure(project, {"time": TIME})
    runlog = _stopped_run(project, shown_for)
    _configure(project, now)
    said = runner.invoke(app, ["approve", "r1"])
    assert said.exit_code != 0, said.output
    assert "server 'time'" in _said(said) and "since" in _said(said)
    assert "exec --resume r1" in _said(said)
    assert runlog.approvals() == []


def test_approve_of_a_call_whose_entry_is_unchanged_is_recorded(project: Path) -> None:
    runlog = _stopped_run(project, _configure(project, {"time": TIME}))
    said = runner.invoke(app, ["approve", "r1"])
    assert said.exit_code == 0, _said(said)
    assert "approved" in said.output
    assert [a["run_id"] for a in runlog.approvals()] == ["r1"]
