"""The MCP face reads the whole output of the agent's runs only: a person's ``exec`` keeps
its output past the cap in the same state folder, and ``toolscript://runs/ID/output`` read
it for any run id the agent named."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscript.errors import UsageError
from toolscript.execution.lifeline import Lifeline
from toolscript.mcpface.backend import Backend, output_uri
from toolscript.plumbing.paths import project_state_dir
from toolscript.store.outputs import output_file
from toolscript.store.runlog import RunLog, runlog_path

PERSONS, FACES, AGENTS = (
    "20261127-090000-aaaaaa",
    "20261127-090001-bbbbbb",
    "20261127-090002-cccccc",
)


def test_the_face_reads_the_agents_outputs_and_none_of_a_persons(repo: Path) -> None:
    state = project_state_dir(repo)
    RunLog(runlog_path(state)).write(
        runs=[
            {"id": PERSONS, "status": "ok", "started": 1.0, "origin": "cli"},
            {"id": FACES, "status": "ok", "started": 2.0, "origin": "mcp"},
            {"id": AGENTS, "status": "ok", "started": 3.0, "origin": "cli", "by_agent": 1},
        ]
    )
    for run_id in (PERSONS, FACES, AGENTS):
        output_file(state, run_id).parent.mkdir(parents=True)
        output_file(state, run_id).write_text(f"the output of {run_id}\n")
    backend = Backend(None, None, Lifeline(catch_signals=False), cwd=repo)

    with pytest.raises(UsageError, match="no such output"):
        backend.read_output(output_uri(PERSONS))
    assert backend.read_output(output_uri(FACES)) == f"the output of {FACES}\n"
    assert backend.read_output(output_uri(AGENTS)) == f"the output of {AGENTS}\n"
