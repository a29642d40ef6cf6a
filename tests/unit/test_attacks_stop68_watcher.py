"""Stop 68: when exec (and the MCP face) take a run as ended at its gateway, and stop its
sandbox (``runhandle.ProgressWatcher``'s ``on_gone``, ``SandboxOfRun``).

A script that calls no tool after its run ended lived on to its timeout: a run ended at the
gateway (``runs stop``, the gateway stopping or gone) stops the sandbox now. A gateway that
is only slow, or answers once after a dropped connection, stops nothing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolscript.errors import (
    GatewayResponseError,
    GatewayTimeoutError,
    GatewayUnreachableError,
)
from toolscript.execution.runhandle import ProgressWatcher, RunHandle, SandboxOfRun
from toolscript.gateway.runbook import RunBook
from toolscript.store.runlog import RunLog

HANDLE = RunHandle("http://127.0.0.1:1/t", "run-1", "http://127.0.0.1:1/r", None)
Answer = dict[str, Any] | None | BaseException


def watch(answers: list[Answer], done: bool = False) -> tuple[bool, int]:
    """Whether the watcher called ``on_gone`` after the gateway answered ``answers`` in turn
    (then: the run ended, to end the watch), and how many it asked."""
    asked: list[float] = []
    ends = [*answers, {"progress": [], "next": 0, "ended": True}]

    def ask(run_id: str, after: int, wait: float) -> dict[str, Any] | None:
        asked.append(wait)
        answer = ends[min(len(asked), len(ends)) - 1]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    gone: list[bool] = []
    watcher = ProgressWatcher(HANDLE, lambda report: None, ask, on_gone=lambda: gone.append(True))
    if done:
        watcher.done.set()
    watcher.run()
    return bool(gone) and watcher.gone.is_set(), len(asked)


RUNNING = {"progress": [], "next": 0, "ended": False}


def response_error(status: int) -> GatewayResponseError:
    return GatewayResponseError("no", status_code=status, body={})


@pytest.mark.parametrize(
    "answers",
    [
        [],  # ended at the gateway: runs stop, or the gateway stopping
        [None, None],  # nothing listens there, asked twice
        [response_error(401), response_error(401)],  # another gateway at that port
        [response_error(404), response_error(404)],  # one restarted: the run is not its
        [GatewayUnreachableError("cut off"), None],  # an answer cut off, then nothing
        [ValueError("not JSON"), ValueError("not JSON")],  # not a gateway's answer
    ],
    ids=["ended", "nothing-listens", "401", "404", "cut-off", "garbled"],
)
def test_a_run_ended_or_gone_at_its_gateway_stops_the_sandbox(answers: list[Answer]) -> None:
    gone, _ = watch(answers)
    assert gone


def test_a_failing_gateway_stops_nothing() -> None:
    gone, asked = watch([response_error(500)])  # nothing said of the run: the watch ends
    assert not gone
    assert asked == 1


def test_a_long_poll_past_its_timeout_is_asked_again_and_shows_what_follows() -> None:
    """Before: the first timeout (a slow tool holding the poll open) ended the watch, and
    the person saw no more progress for the rest of the run."""
    report = {"message": "halfway", "source": "script"}
    shown: list[dict[str, Any]] = []
    answers: list[Answer] = [
        GatewayTimeoutError("busy"),
        GatewayTimeoutError("busy"),
        {"progress": [report], "next": 1, "ended": False},
        {"progress": [], "next": 1, "ended": True},
    ]

    def ask(run_id: str, after: int, wait: float) -> dict[str, Any] | None:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    ProgressWatcher(HANDLE, shown.append, ask).run()
    assert shown == [report]
    assert answers == []


def test_a_connection_dropped_once_is_asked_again_and_the_run_goes_on() -> None:
    # (a busy gateway gives a connection's place to another: the look is made again)
    gone, asked = watch([None, RUNNING, RUNNING])
    assert gone  # the end the test's gateway says at last
    assert asked == 4


def test_a_run_that_ended_first_stops_nothing() -> None:
    gone, _ = watch([], done=True)
    assert not gone


@pytest.fixture
def sleeper() -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_the_sandbox_is_killed_when_its_run_ends_elsewhere(
    sleeper: Callable[[], subprocess.Popen[bytes]],
) -> None:
    seen: list[int] = []
    sandbox = SandboxOfRun(lambda pid, **how: seen.append(pid))
    process = sleeper()
    sandbox.started(process.pid, group=True)
    sandbox.stop()
    assert process.wait(30) < 0  # killed
    sandbox.finish()
    assert sandbox.stopped and seen == [process.pid]


def test_a_stop_before_the_sandbox_starts_kills_it_as_it_starts(
    sleeper: Callable[[], subprocess.Popen[bytes]],
) -> None:
    sandbox = SandboxOfRun()
    sandbox.stop()  # the gateway stopped while the script was being checked
    process = sleeper()
    sandbox.started(process.pid, group=True)
    assert process.wait(30) < 0
    assert sandbox.stopped


def test_a_sandbox_that_finished_is_never_signalled(
    sleeper: Callable[[], subprocess.Popen[bytes]],
) -> None:
    sandbox = SandboxOfRun()
    process = sleeper()
    sandbox.started(process.pid, group=True)
    sandbox.finish()  # (its pid may be another process's by now)
    sandbox.stop()
    assert process.poll() is None
    assert not sandbox.stopped


def test_a_stopping_gateway_tells_every_progress_watcher_at_once_that_its_run_ended(
    tmp_path: Path,
) -> None:
    """Before: a watcher waiting for progress looked at the gateway stopping only every
    CLOSING_CHECK seconds, and was answered ``ended: false``: its exec saw no end, while the
    gateway let its port go to whichever process took it first (the script, listening)."""

    async def scenario() -> dict[str, Any]:
        runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")
        run = await runs.register(script="x")
        answer: dict[str, Any] = {}
        async with anyio.create_task_group() as tasks:

            async def waiting() -> None:
                answer.update(await runs.wait_progress(run.id, 0, 3600))

            tasks.start_soon(waiting)
            await anyio.wait_all_tasks_blocked()
            runs.close()
            for _ in range(100):  # woken by the close itself, not by a look CLOSING_CHECK later
                if answer:
                    break
                await anyio.sleep(0)
            tasks.cancel_scope.cancel()
        return answer

    # the run's calls said with it: its script is told what it did before the gateway stopped
    assert anyio.run(scenario) == {
        "progress": [],
        "next": 0,
        "ended": True,
        "closing": True,
        "calls": 0,
        "calling": 0,
    }


def test_a_script_stopped_with_its_gateway_is_told_what_its_run_did_and_what_to_do() -> None:
    """The message of a script stopped because its run ended at its gateway: `runs stop`,
    a gateway that said it stopped (the calls and those under way), one that went unanswering."""
    stopped = SandboxOfRun.message({"ended": True}, "Run it again.")
    assert "`toolscript runs stop`" in stopped and "Run it again" not in stopped
    said = SandboxOfRun.message({"ended": True, "closing": True, "calls": 3, "calling": 1}, "X.")
    assert "gateway stopped while the script ran" in said
    assert "3 tool calls, 1 still under way: whether the server did it is not known. X." in said
    done = SandboxOfRun.message({"ended": True, "closing": True, "calls": 1, "calling": 0}, "X.")
    assert done.endswith("it had asked for 1 tool call. X.")
    gone = SandboxOfRun.message(None, "X.")
    assert "whether its tool calls were made is not known. X." in gone
    failed_first = SandboxOfRun.message(None, "X.", stopped=False)
    assert "process ended); whether" in failed_first and "stopped with it" not in failed_first
