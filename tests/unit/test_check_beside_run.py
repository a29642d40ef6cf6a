"""A new script run beside its check (issue 45): the run's requests wait at the guard for the
verdict and are refused when it failed, a reissued token retires the old one, and what the
script prints is kept until the verdict, then shown or dropped."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from toolscript.execution.sandbox import _Gated
from toolscript.gateway.runbook import RunBook
from toolscript.store.runlog import RunLog


def _book(tmp_path: Path) -> RunBook:
    return RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")


def test_a_held_run_s_requests_wait_for_a_pass_and_then_go_on(tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        book = _book(tmp_path)
        run = await book.register(script_hash="h", origin="mcp")
        book.hold(run.id)
        waiting = asyncio.ensure_future(book.cleared(run.id))
        await asyncio.sleep(0.01)
        waited = not waiting.done()
        book.settle(run.id, True)
        return waited, await waiting, await book.cleared(run.id)

    waited, first, later = asyncio.run(scenario())
    assert waited and first and later


def test_a_failed_check_refuses_the_held_requests_and_those_after(tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, bool]:
        book = _book(tmp_path)
        run = await book.register(script_hash="h", origin="mcp")
        book.hold(run.id)
        waiting = asyncio.ensure_future(book.cleared(run.id))
        await asyncio.sleep(0)
        book.settle(run.id, False)
        return await waiting, await book.cleared(run.id)

    assert asyncio.run(scenario()) == (False, False)


def test_a_reissued_run_refuses_the_old_token_and_clears_the_new(tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, str | None, str | None, bool]:
        book = _book(tmp_path)
        run = await book.register(script_hash="h", origin="mcp")
        old = run.token
        book.hold(run.id)
        waiting = asyncio.ensure_future(book.cleared(run.id))
        await asyncio.sleep(0)
        fresh = book.settle(run.id, False, reissue=True)
        assert fresh is not None and fresh != old
        return await waiting, book.by_token(old), book.by_token(fresh), await book.cleared(run.id)

    held, by_old, by_new, cleared = asyncio.run(scenario())
    assert held is False  # what the unchecked process asked is not done
    assert by_old is None and by_new is not None and cleared


def test_a_run_ended_before_its_verdict_releases_nobody(tmp_path: Path) -> None:
    async def scenario() -> bool:
        book = _book(tmp_path)
        run = await book.register(script_hash="h", origin="mcp")
        book.hold(run.id)
        waiting = asyncio.ensure_future(book.cleared(run.id))
        await asyncio.sleep(0)
        await book.end(run.id, 137)
        return await waiting

    assert asyncio.run(scenario()) is False


def test_a_run_never_held_is_cleared_at_once(tmp_path: Path) -> None:
    async def scenario() -> bool:
        book = _book(tmp_path)
        run = await book.register(script_hash="h", origin="mcp")
        return await asyncio.wait_for(book.cleared(run.id), 1)

    assert asyncio.run(scenario())


def test_what_a_run_prints_before_its_verdict_is_kept_then_shown_in_order() -> None:
    target = io.BytesIO()
    gated = _Gated(target)
    gated.write(b"one\n")
    gated.flush()
    gated.write(b"two\n")
    assert target.getvalue() == b""
    gated.open(True)
    gated.write(b"three\n")
    assert target.getvalue() == b"one\ntwo\nthree\n"


def test_what_a_run_that_failed_its_check_prints_is_dropped() -> None:
    target = io.BytesIO()
    gated = _Gated(target)
    gated.write(b"unchecked\n")
    gated.open(False)
    assert gated.write(b"after\n") == len(b"after\n")
    gated.flush()
    assert target.getvalue() == b""
