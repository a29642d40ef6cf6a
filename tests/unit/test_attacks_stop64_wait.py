"""``toolscript approve RUN_ID`` asked while the run is still running: the question showed
no call (there was none yet), and a command that waits first (``sleep 5; toolscript
approve RUN_ID``, ``toolscript runs wait RUN_ID; toolscript approve RUN_ID``) approved the
call the run stopped at after the person allowed it, a call nobody saw. The question says
the run is not waiting, and that what it would approve is not known yet."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.unit.test_attacks_stop61_hook import _reason, _stopped_run
from toolscript.gateway.runbook import RunBook
from toolscript.plumbing.paths import project_state_dir
from toolscript.store.runlog import RunLog, runlog_path


def _running_run(project: Path) -> str:
    runs = RunBook(
        RunLog(runlog_path(project_state_dir(project))), lambda: (), lambda qualified: "ask"
    )

    async def scenario() -> str:
        run = await runs.register(script_hash="h", script="code")
        await runs.flush()
        return run.id

    return anyio.run(scenario)


def test_approving_a_run_not_stopped_for_an_approval_says_nobody_saw_the_call(
    repo: Path,
) -> None:
    (repo / ".toolscript.json").write_text("{}")
    running = _running_run(repo)
    for command in (
        f"sleep 5; toolscript approve {running}",
        f"toolscript runs wait {running}; toolscript approve {running}",
    ):
        reason = _reason(command, repo)
        assert f"Run {running} is running, not waiting for an approval" in reason, reason
        assert "nobody has seen" in reason and f"toolscript runs show {running}" in reason
    unknown = _reason("sleep 9 && toolscript approve 20990101-000000-abcdef", repo)
    assert "Run 20990101-000000-abcdef is unknown here, not waiting" in unknown, unknown


def test_a_run_waiting_for_an_approval_still_shows_its_call(repo: Path) -> None:
    (repo / ".toolscript.json").write_text("{}")
    stopped = _stopped_run(repo, {"command": "ls"})
    reason = _reason(f"toolscript approve {stopped}", repo)
    assert f"Run {stopped} stopped at shell.run with " in reason
    assert "not waiting" not in reason
