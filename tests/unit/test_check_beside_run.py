"""A new script run beside its check (issue 45): the run's requests wait at the guard for the
verdict and are refused when it failed, a reissued token retires the old one, and what the
script prints is kept until the verdict, then shown or dropped."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toolscript.execution import sandbox
from toolscript.execution.sandbox import (
    DEFAULT_ADVICE,
    EXIT_OUTPUT,
    Limits,
    Script,
    _Checked,
    _Gated,
    _run_while_checked,
    _Streams,
)
from toolscript.execution.source import prepare
from toolscript.gateway.runbook import RunBook
from toolscript.store.outputs import KEEP, errors_file, output_file
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


def test_a_run_that_ended_or_is_unknown_is_not_held(tmp_path: Path) -> None:
    """Its script is then checked first, as without a gate (an unknown run raised instead,
    and an ended one was said held)."""

    async def scenario() -> tuple[bool, bool]:
        book = _book(tmp_path)
        run = await book.register(script_hash="h", origin="mcp")
        await book.end(run.id, 0)
        return book.hold(run.id), book.hold("no-such-run")

    assert asyncio.run(scenario()) == (False, False)


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


# A "script" that prints past the budget on both streams (within a pipe's buffer: it never
# waits for a reader) and ends at once.
LOUD = "import sys; sys.stdout.write('out\\n' * 2000); sys.stderr.write('err\\n' * 1000)"


class _Spare:
    """A spare whose handed-over process is a Python program (the real one is a Deno)."""

    def __init__(self, tmp_path: Path, program: str) -> None:
        self.script_path = tmp_path / "spare" / "inline.ts"
        self.program = program
        self.process: subprocess.Popen[bytes] | None = None

    def fits(self, gateway_url: str, module: Path, memory_mb: int) -> bool:
        return True

    def hand_over(self, code: str, script_url: str) -> subprocess.Popen[bytes]:
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.program],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        return self.process

    def discard(self) -> None: ...

    def close(self) -> None: ...


class _Gate:
    def __init__(self) -> None:
        self.settled: list[bool] = []

    def hold(self) -> bool:
        return True

    def settle(self, passed: bool) -> None:
        self.settled.append(passed)

    def reissue(self) -> str | None:
        return None


def _once_ended(spare: _Spare, verdict: str) -> Any:
    """A checker that gives its ``verdict`` once the script's process ended and was reaped."""

    def checker(request: dict[str, str], wait: float) -> dict[str, str]:
        deadline = time.monotonic() + 60
        while spare.process is None or spare.process.returncode is None:
            assert time.monotonic() < deadline, "the script never ended"
            time.sleep(0.01)
        return {"status": verdict, "output": "inline.ts:1:7 - error TS2322: not a number\n"}

    return checker


def _run_beside(
    tmp_path: Path, spare: _Spare, spill: Path | None, verdict: str = "failed"
) -> tuple[int | str, bytes]:
    module = tmp_path / "tools.ts"
    module.write_text("export const tools = {};\n")
    out, err = io.BytesIO(), io.BytesIO()
    gate = _Gate()
    ran = _run_while_checked(
        _Checked(
            "http://127.0.0.1:9/t",
            tmp_path / "inline.ts",
            "const n: number = 'x';\n",
            module,
            "hash",
            _once_ended(spare, verdict),
        ),
        gate,
        spare,
        Script("const n: number = 'x';\n", "inline.ts"),
        "http://127.0.0.1:9/t",
        None,
        Limits(timeout=60, max_output=1000, errors_kept=500),
        _Streams(out, err, DEFAULT_ADVICE),
        prepare("const n: number = 'x';\n").map,
        spill,
    )
    assert gate.settled == [verdict == "passed"]
    return ran, out.getvalue() + err.getvalue()


def test_a_script_failing_its_check_makes_no_output_file_and_prunes_none(tmp_path: Path) -> None:
    """What it printed past the budget is in no file (readable by the run's output URI while
    it ran), and making one dropped the oldest kept output of an earlier run."""
    state = tmp_path / "state"
    earlier = [output_file(state, f"earlier-{number:02}") for number in range(KEEP)]
    for path in earlier:
        path.parent.mkdir(parents=True)
        path.write_text("an earlier run's output\n")
    spill = output_file(state, "unchecked")
    ran, shown = _run_beside(tmp_path, _Spare(tmp_path, LOUD), spill)
    assert ran == 1 and b"TS2322" in shown
    assert b"out\n" not in shown and b"err\n" not in shown
    assert [path for path in earlier if not path.exists()] == []
    assert not spill.exists() and not errors_file(spill).exists()
    assert not spill.parent.exists()


def test_a_failed_verdict_after_the_script_ended_signals_no_freed_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process ended and was reaped before the verdict: its pid (its group's id) may be
    another process's by then, which must not be killed."""
    signalled: list[int] = []

    def recorded(pid: int, sig: int, *, group: bool = False) -> None:
        signalled.append(pid)  # (sending nothing: the pid may be another process's)

    monkeypatch.setattr(sandbox, "signal_quietly", recorded)
    spare = _Spare(tmp_path, "pass")
    ran, shown = _run_beside(tmp_path, spare, None)
    assert ran == 1 and b"TS2322" in shown
    assert spare.process is not None
    assert spare.process.pid not in signalled


def test_a_script_passing_its_check_keeps_its_whole_output_as_before(tmp_path: Path) -> None:
    """Its output past the budget waited for the verdict, then went to its file whole."""
    spill = output_file(tmp_path / "state", "checked")
    ran, shown = _run_beside(tmp_path, _Spare(tmp_path, LOUD), spill, "passed")
    assert ran == EXIT_OUTPUT and b"TS2322" not in shown
    assert spill.read_bytes() == b"out\n" * 2000
    assert errors_file(spill).read_bytes() == b"err\n" * 1000
