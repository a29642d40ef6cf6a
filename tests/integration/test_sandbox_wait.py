"""How the sandbox waits for its process: a blocking wait with a timer for the timeout, not
``Popen.wait(timeout)``, which polls (sleeps of up to 50 ms between looks: a run was
noticed late by up to half its length). Real processes (Python's own, not Deno: the wait
is the same for any process)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolscript.execution import sandbox
from toolscript.execution.sandbox import DEFAULT_ADVICE, Limits, Script


def _supervised(code: str, timeout: float) -> tuple[int, bytes, bytes]:
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = io.BytesIO(), io.BytesIO()
    streams = sandbox._Streams(out, err, DEFAULT_ADVICE)
    script = Script(code, "inline.ts")
    exit_code = sandbox._supervise(
        process, script, Path("inline.ts"), "http://127.0.0.1:1/t", Limits(timeout), streams
    )
    return exit_code, out.getvalue(), err.getvalue()


@pytest.fixture
def polls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Each look of ``Popen.wait(timeout)``'s polling loop (it asks the time left each time)."""
    seen: list[Any] = []
    original = subprocess.Popen._remaining_time  # type: ignore[attr-defined]

    def counted(self: Any, endtime: Any) -> Any:
        seen.append(self.args)
        return original(self, endtime)

    monkeypatch.setattr(subprocess.Popen, "_remaining_time", counted)
    return seen


def test_a_run_that_ends_is_waited_for_without_polling(polls: list[Any]) -> None:
    exit_code, out, _ = _supervised("import time; time.sleep(0.3); print('done')", 60)
    assert (exit_code, out) == (0, b"done\n")
    assert polls == []


def test_a_run_past_its_timeout_is_still_stopped_and_told(polls: list[Any]) -> None:
    exit_code, _, err = _supervised("import time; time.sleep(60)", 0.5)
    assert exit_code == sandbox.EXIT_TIMEOUT
    assert b"ran longer than 0.5 s and was stopped" in err
    assert polls == []
