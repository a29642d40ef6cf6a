"""A server's questions (MCP elicitation) during a call of an interactive run: asked one at
a time, at most ``QUESTIONS_WAITING`` more held, and only while the call is under way. A
server asking 20,000 at once had each held by the gateway (117 MB to 268 MB in 16 s), the
person asked on after its call had ended, and the gateway's stop took 80 s, logging a line
for each question it dropped."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolscript.errors import UsageError
from toolscript.gateway.runbook import QUESTIONS_WAITING, RunBook
from toolscript.store.runlog import RunLog

SCHEMA = {"type": "object", "properties": {}}


def test_a_flood_of_questions_is_refused_past_the_few_a_run_holds(tmp_path: Path) -> None:
    runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")
    outcomes: list[Any] = []

    async def ask(run: Any, number: int) -> None:
        try:
            outcomes.append(await runs.elicit(run, "fl", f"question {number}", SCHEMA))
        except UsageError as exc:
            outcomes.append(exc.message)

    async def answer_the_one_asked(run: Any) -> str:
        while run.prompt is None:
            await anyio.sleep(0)
        asked = str(run.prompt.call["message"])
        assert runs.answer(run.id, run.prompt.call["seq"], "decline")
        return asked

    async def scenario() -> list[str]:
        run = await runs.register(interactive=True, script="code")
        run.calling["fl"] = 1  # its call of the server is under way
        asked = []
        async with anyio.create_task_group() as group:
            for number in range(20):
                group.start_soon(ask, run, number)
            await anyio.sleep(0.05)
            refused = [o for o in outcomes if isinstance(o, str)]
            assert len(refused) == 20 - 1 - QUESTIONS_WAITING, outcomes
            assert "more questions at once than a person answers" in refused[0]
            asked.append(await answer_the_one_asked(run))
            asked.append(await answer_the_one_asked(run))
            while run.prompt is None:  # the third is asked
                await anyio.sleep(0)
            run.calling["fl"] = 0  # the call ended: the questions still held are refused
            await answer_the_one_asked(run)
        return asked

    asked = anyio.run(scenario)
    assert asked[0] == "question 0" and asked[1] != asked[0]
    ended = [o for o in outcomes if isinstance(o, str) and "after its call" in o]
    assert len(ended) == QUESTIONS_WAITING - 2, outcomes
    assert sum(o == {"action": "decline"} for o in outcomes) == 3


@pytest.mark.parametrize("held", [1, QUESTIONS_WAITING])
def test_questions_within_the_bound_are_each_asked(tmp_path: Path, held: int) -> None:
    runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")

    async def scenario() -> list[Any]:
        run = await runs.register(interactive=True, script="code")
        run.calling["fl"] = 1
        answers: list[Any] = []

        async def ask(number: int) -> None:
            answers.append(await runs.elicit(run, "fl", f"q{number}", SCHEMA))

        async with anyio.create_task_group() as group:
            for number in range(held + 1):
                group.start_soon(ask, number)
            for _ in range(held + 1):
                while run.prompt is None:
                    await anyio.sleep(0)
                runs.answer(run.id, run.prompt.call["seq"], "decline")
                await anyio.sleep(0)
        return answers

    assert anyio.run(scenario) == [{"action": "decline"}] * (held + 1)


def test_the_question_asked_is_withdrawn_when_the_call_ends(tmp_path: Path) -> None:
    runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")

    async def scenario() -> tuple[Any, Any]:
        run = await runs.register(interactive=True, script="code")
        asked: list[Any] = []

        async def asks_then_answers(tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
            async def ask() -> None:
                asked.append(await runs.elicit(run, "fl", "still there?", SCHEMA))

            task = asyncio.get_running_loop().create_task(ask())
            while run.prompt is None:
                await anyio.sleep(0)
            asked.append(task)
            return "json", {}  # the call ends, its question unanswered

        await runs.call(run, "fl__hi", {}, 2, asks_then_answers)
        with anyio.fail_after(60):  # (before: asked on until PROMPT_LIMIT, 600 s)
            await asked[0]
        return asked[1], run.prompt

    answer, prompt = anyio.run(scenario)
    assert answer == {"action": "cancel"} and prompt is None
