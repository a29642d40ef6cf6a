"""The MCP face's yielded runs belong to the client's session that started them: an HTTP
face serves many clients, and a run's id is in the run log any of them can read."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from toolscript.errors import UsageError
from toolscript.execution.lifeline import Lifeline
from toolscript.mcpface.backend import Backend, FaceRun
from toolscript.mcpface.server import _dispatch


def _ended_run(backend: Backend, owner: object) -> FaceRun:
    run = FaceRun(loop=None, id="20261126-010000-abcdef", owner=owner)
    run.out.write(b"the first client's secret\n")
    run.outcome = (0, b"the first client's secret\n", b"", None)
    run.done.set()
    backend._keep_yielded(run)
    return run


def test_wait_run_of_another_clients_run_is_answered_as_no_such_run() -> None:
    backend = Backend(None, None, Lifeline(catch_signals=False))
    first, second = SimpleNamespace(session=object()), SimpleNamespace(session=object())
    run = _ended_run(backend, first.session)

    async def wait(context: Any) -> Any:
        return await _dispatch(backend, "wait_run", {"run": run.id}, context)

    with pytest.raises(UsageError, match="no running script with run id"):
        anyio.run(wait, second)
    assert run.id in backend._yielded  # still the first client's to collect
    answer = anyio.run(wait, first)
    assert "the first client's secret" in answer.text
    assert run.id not in backend._yielded


def test_run_script_yields_after_the_faces_yield_after_for_its_client() -> None:
    """``--yield-after 25`` (a client that gives up after 30 s) held for execute only: a
    saved script run through run_script answered after the default 45 s."""
    backend = Backend(None, None, Lifeline(catch_signals=False), yield_after=2.5)
    seen: dict[str, Any] = {}

    async def listing(route: str, params: Any = None) -> dict[str, Any]:
        return {"scripts": [{"name": "report", "status": "ok"}]}

    async def execute(code: str, timeout: float, ask: Any = None, **options: Any) -> Any:
        seen.update(options)
        return None

    backend._get = listing  # type: ignore[method-assign]
    backend.execute = execute  # type: ignore[method-assign]
    client = SimpleNamespace(session=object())

    async def run() -> None:
        await _dispatch(backend, "run_script", {"name": "report"}, client)

    anyio.run(run)
    assert seen["yield_after"] == 2.5
    assert seen["owner"] is client.session


def test_two_waits_on_one_run_both_get_its_result() -> None:
    """The client's second wait_run of the same run (a retry, another of its agents) ended
    with "KeyError" when the first took the run off the face's list."""
    backend = Backend(None, None, Lifeline(catch_signals=False))
    client = SimpleNamespace(session=object())
    run = FaceRun(loop=None, id="20261126-010000-abcdef", owner=client.session)
    backend._keep_yielded(run)
    answers: list[Any] = []

    async def wait() -> None:
        answers.append(await _dispatch(backend, "wait_run", {"run": run.id}, client))

    async def both() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            group.start_soon(wait)
            while len(run.waiters) < 2:  # both wait_runs under way
                await anyio.sleep(0.01)
            run.outcome = (0, b"done\n", b"", None)
            run.ended()

    anyio.run(both)
    assert len(answers) == 2
    assert all("done" in answer.text for answer in answers)
