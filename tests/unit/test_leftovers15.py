"""Mend 15's leftovers that are pure logic: `approve --list` names the runs waiting for an
approval, and the run log names its project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.plumbing.paths import project_state_dir
from toolscript.store.runlog import RunLog, runlog_path

runner = CliRunner()


PROJECT_CONFIG = {"mcpServers": {}}  # the project fixture writes it (tests/unit/conftest.py)
pytestmark = pytest.mark.usefixtures("project")  # (tests/unit/conftest.py)


def _stopped(project: Path, run_id: str, tool: str) -> None:
    """A run of the log stopped at a call of ``tool`` that waits for approval (no project
    given: as a log another process opened)."""
    RunLog(runlog_path(project_state_dir(project))).write(
        runs=[
            {
                "id": run_id,
                "script_hash": "h",
                "origin": "cli",
                "started": 1_800_000_000.0,
                "ended": 1_800_000_001.0,
                "exit": 120,
                "status": "awaiting_approval",
                "calls": 0,
                "stopped": {
                    "message": "needs approval",
                    "call": {"seq": 1, "tool": tool, "arguments": {"id": 7}, "digest": "d"},
                },
            }
        ]
    )


def test_approve_list_names_the_runs_waiting_and_how_a_person_approves_them(
    project: Path,
) -> None:
    """It said "no approvals on record" while `runs` showed runs awaiting approval."""
    _stopped(project, "20261128-020000-aaaaaa", "records__delete_record")
    listed = runner.invoke(app, ["approve", "--list"])
    assert listed.exit_code == 0, listed.output
    assert "no approvals on record" not in listed.stdout
    row = listed.stdout.splitlines()[-1].split()
    assert row[:3] == ["waiting", "records.delete_record", "20261128-020000-aaaaaa"]
    assert "toolscript approve 20261128-020000-aaaaaa" in listed.stderr
    assert "toolscript exec --resume 20261128-020000-aaaaaa" in listed.stderr
    as_json = json.loads(runner.invoke(app, ["approve", "--list", "--json"]).stdout)
    assert [(a["scope"], a["tool"], a["run_id"]) for a in as_json] == [
        ("waiting", "records__delete_record", "20261128-020000-aaaaaa")
    ]
    assert "toolscript approve 20261128-020000-aaaaaa" in as_json[0]["approve_with"]
    # approved: a call approval on record, no longer waiting
    assert runner.invoke(app, ["approve", "20261128-020000-aaaaaa"]).exit_code == 0
    after = json.loads(runner.invoke(app, ["approve", "--list", "--json"]).stdout)
    assert [(a["scope"], a["run_id"]) for a in after] == [("call", "20261128-020000-aaaaaa")]


def test_approve_list_with_nothing_says_so(project: Path) -> None:
    listed = runner.invoke(app, ["approve", "--list"])
    assert listed.exit_code == 0
    assert listed.stdout == "no approvals on record, and no run waits for one\n"
    assert json.loads(runner.invoke(app, ["approve", "--list", "--json"]).stdout) == []


def test_runs_and_runs_show_name_the_project_the_log_belongs_to(project: Path) -> None:
    """The log lives under the user's state in a hashed folder; it said nothing of its
    project. Opened for the project, it records it in its meta table."""
    _stopped(project, "20261128-020000-bbbbbb", "records__delete_record")
    shown = runner.invoke(app, ["runs", "show", "20261128-020000-bbbbbb"])
    assert shown.exit_code == 0, shown.output
    assert f"project   {project}\n" in shown.stdout
    as_json = json.loads(runner.invoke(app, ["runs", "show", "20261128", "--json"]).stdout)
    assert as_json["project"] == str(project)
    assert runner.invoke(app, ["runs"]).stderr == f"project: {project}\n"
    listed = json.loads(runner.invoke(app, ["runs", "--json"]).stdout)
    assert [run["project"] for run in listed] == [str(project)]
    assert RunLog(runlog_path(project_state_dir(project))).project() == str(project)


def test_a_kept_tool_list_not_vouched_for_is_said_once_when_its_server_is_away(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A cloned repository's `.toolscript/servers/<s>.json` for a server not reachable was
    set aside in silence: its server offered no tools and nothing said why."""
    import logging

    from toolscript.config import Config, ServerConfig
    from toolscript.pipeline.artifacts import CacheLayout, listed_json
    from toolscript.pipeline.sources import SnapshotSource
    from toolscript.pipeline.tasks import run_pipeline

    servers = (
        ServerConfig(name="time", transport="stdio", command="x"),
        ServerConfig(name="github", transport="http", url="https://example.invalid/mcp"),
    )
    config = Config(path=tmp_path / ".toolscript.json", project_dir=tmp_path, servers=servers)
    layout = CacheLayout(tmp_path / ".toolscript")
    planted = layout.server_tools("github")
    planted.parent.mkdir(parents=True)
    planted.write_text(listed_json([{"name": "search_code", "inputSchema": {"type": "object"}}]))
    only_time = SnapshotSource({"time": [{"name": "now", "inputSchema": {"type": "object"}}]})
    with caplog.at_level(logging.WARNING, logger="toolscript.pipeline"):
        assert run_pipeline(config, layout, only_time).code == 0
        assert run_pipeline(config, layout, only_time).code == 0  # said once
    said = [record.getMessage() for record in caplog.records if "github" in record.getMessage()]
    assert len(said) == 1, said
    assert "not reachable" in said[0] and "not written by your own build" in said[0]
    assert "1 tool)" in said[0] and "gateway status" in said[0]
    assert json.loads(planted.read_text()) == []
