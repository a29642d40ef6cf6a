"""The answers holding a configured secret, kept whole in memory for a resume (the log keeps
them as ``***``), are let go once their run can no longer be resumed, not only when the
64 MB cap pushes them out."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio

from toolscript.gateway.runbook import RunBook
from toolscript.store.runlog import RunLog

SECRET = "topsecret-value"


class Echo:
    """Answers each call with its arguments (a secret sent is a secret answered)."""

    def __init__(self) -> None:
        self.made: list[str] = []

    async def make(self, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        self.made.append(tool)
        return "json", {"echo": arguments}


def book(tmp_path: Path, **log: Any) -> RunBook:
    return RunBook(
        RunLog(tmp_path / "runs.sqlite", **log),
        lambda: (SECRET,),
        lambda qualified: "ask" if qualified == "s__delete" else "allow",
    )


async def asked_then(runs: RunBook, answer: str) -> tuple[Any, list[bool]]:
    """An interactive run that read a secret, then was asked about ``s__delete`` and answered
    ``answer``; whether its answers were kept whole while it was asked."""
    server = Echo()
    run = await runs.register(interactive=True, script="code")
    await runs.call(run, "s__read", {"token": SECRET}, 30, server.make)
    kept_while_asked: list[bool] = []

    async def person() -> None:
        prompt = await runs.wait_prompt(run.id, 5)
        assert prompt is not None
        await runs.flush()  # (the prompt shows as its answers are written)
        kept_while_asked.append(run.id in runs._secret_answers)
        assert runs.answer(run.id, prompt["seq"], answer)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(person)
        await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
    return run, kept_while_asked


def test_a_denied_calls_run_lets_its_secret_answers_go_when_it_ends(tmp_path: Path) -> None:
    async def scenario() -> None:
        runs = book(tmp_path)
        run, kept_while_asked = await asked_then(runs, "no")
        assert kept_while_asked == [True]  # (a "stop" would leave it resumable)
        await runs.end(run.id, 0)
        assert run.status == "ok" and run.id not in runs._secret_answers

    anyio.run(scenario)


def test_an_expired_run_lets_its_secret_answers_go(tmp_path: Path) -> None:
    async def scenario() -> None:
        runs = book(tmp_path)
        run, kept_while_asked = await asked_then(runs, "yes")
        assert kept_while_asked == [True]
        await runs.end_orphans(now=time.monotonic() + 24 * 3600)  # no process claimed it
        assert run.status == "expired" and run.id not in runs._secret_answers

    anyio.run(scenario)


def test_a_stopped_run_dropped_from_the_log_lets_its_secret_answers_go(tmp_path: Path) -> None:
    async def scenario() -> None:
        server = Echo()
        kept = book(tmp_path / "kept")
        dropped = book(tmp_path / "dropped", max_bytes=1)  # retention drops every run
        for runs in (kept, dropped):
            run = await runs.register(script="code")
            await runs.call(run, "s__read", {"token": SECRET}, 30, server.make)
            await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
            await runs.end(run.id, 120)
            assert run.status == "awaiting_approval"
            in_log = runs.runlog.run(run.id) is not None
            assert (run.id in runs._secret_answers) == in_log == (runs is kept)

    (tmp_path / "kept").mkdir()
    (tmp_path / "dropped").mkdir()
    anyio.run(scenario)


def test_a_run_asked_twice_resumes_with_every_answer_whole(tmp_path: Path) -> None:
    """Each prompt writes the answers since the last for a resume: the second prompt's were
    numbered from 1 again (overwriting the first prompt's in the log: the resume diverged),
    and those holding a secret replaced the first prompt's in memory (seen as ``***``)."""

    async def scenario() -> None:
        server = Echo()
        runs = book(tmp_path)
        run = await runs.register(interactive=True, script="code")
        first = await runs.call(run, "s__read", {"token": SECRET, "n": 1}, 30, server.make)
        answers = iter(["yes", "stop"])

        async def person() -> None:
            for _ in range(2):
                prompt = await runs.wait_prompt(run.id, 5)
                assert prompt is not None
                assert runs.answer(run.id, prompt["seq"], next(answers))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(person)
            await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
            await runs.call(run, "s__read", {"token": SECRET, "n": 2}, 30, server.make)
            await runs.call(run, "s__delete", {"k": 2}, 7, server.make)
        await runs.end(run.id, 120)
        assert run.status == "awaiting_approval"
        runs.runlog.approve_call(run.id)
        resumed = await runs.register(resume=run.id)
        again = await runs.call(resumed, "s__read", {"token": SECRET, "n": 1}, 30, server.make)
        assert again == first, again

    anyio.run(scenario)
