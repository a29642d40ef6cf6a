"""A run's progress reports: kept by the run book (from its script and from the servers it
calls), read by watchers from a number on, and shown as one line on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from toolscript.execution.runhandle import format_progress
from toolscript.gateway.runbook import PROGRESS_KEPT, RunBook
from toolscript.store.runlog import RunLog
from toolscript.upstream.base import CALL_PROGRESS


def book(tmp_path: Path) -> RunBook:
    return RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")


def test_reports_are_read_from_a_number_on_and_a_watcher_wakes_at_the_end(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register()
        runs.report_progress(run, "fetched 40 of 120 issues", 0.33)
        first = await runs.wait_progress(run.id, 0, 0)
        assert first["next"] == 1 and not first["ended"]
        assert first["progress"][0]["fraction"] == 0.33
        assert first["progress"][0]["source"] == "script"
        async with anyio.create_task_group() as group:
            answers: list[dict[str, Any]] = []

            async def watch() -> None:
                answers.append(await runs.wait_progress(run.id, 1, 30))

            group.start_soon(watch)
            await anyio.sleep(0)
            await runs.end(run.id, 0)  # the watcher learns it at once, not after 30 s
        assert answers == [{"progress": [], "next": 1, "ended": True}]

    anyio.run(scenario)


def test_a_server_report_during_a_call_is_the_calling_runs(tmp_path: Path) -> None:
    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register()

        async def make(tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
            report = CALL_PROGRESS.get()
            assert report is not None
            report(1, 4, "step one")
            return "json", {}

        await runs.call(run, "srv__slow_tool", {}, 2, make)
        assert CALL_PROGRESS.get() is None  # set for that call only
        (report,) = (await runs.wait_progress(run.id, 0, 0))["progress"]
        assert report["source"] == "srv__slow_tool"
        assert report["fraction"] == 0.25 and report["message"] == "step one"

    anyio.run(scenario)


def test_a_run_keeps_only_its_newest_reports(tmp_path: Path) -> None:
    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register()
        for number in range(PROGRESS_KEPT + 10):
            runs.report_progress(run, f"r{number}")
        found = await runs.wait_progress(run.id, 0, 0)
        assert found["next"] == PROGRESS_KEPT + 10
        assert len(found["progress"]) == PROGRESS_KEPT
        assert found["progress"][0]["message"] == "r10"

    anyio.run(scenario)


def test_a_report_reads_as_one_line_with_its_share_and_its_tool() -> None:
    assert (
        format_progress({"message": "fetched 40 of 120 issues", "fraction": 0.33})
        == "toolscript: progress: fetched 40 of 120 issues (33%)\n"
    )
    assert (
        format_progress({"message": "", "fraction": 0.5, "source": "everything__long_op"})
        == "toolscript: progress: everything.long_op: 50%\n"
    )
    # a script's control characters are shown, not obeyed; one report is one line
    shown = format_progress({"message": "\x1b]52;c;evil\x07\nsecond"})
    assert "\x1b" not in shown and shown.count("\n") == 1
