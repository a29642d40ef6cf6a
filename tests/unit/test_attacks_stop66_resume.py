"""Stop 66's attack on a resume released after a failed check: the person approved, the
resume's script failed its check (nothing called, the run waits again), and the answers the
gateway kept whole for that run (a server's echoed token) were gone: the next resume
replayed the log's ``***`` and diverged. Still one approved call: a released resume's next
one makes it once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.unit.test_runs import FakeServer, book


def test_a_released_resume_keeps_the_answers_kept_whole(tmp_path: Path) -> None:
    server = FakeServer()
    sent = {"k": "topsecret-value"}

    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register(script_hash="one", script="code")
        answer = await runs.call(run, "s__read", sent, 7, server.make)
        await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
        await runs.end(run.id, 120)
        runs.runlog.approve_call(run.id)
        failed = await runs.register(resume=run.id)
        await runs.end(failed.id, 1)  # its check failed: it called nothing
        assert failed.ended_answer()["resume_kept"] is True
        again = await runs.register(resume=run.id)
        replayed: Any = await runs.call(again, "s__read", sent, 7, server.make)
        assert replayed == answer and b"topsecret-value" in replayed[2]
        made = len(server.made)
        await runs.call(again, "s__delete", {"k": 1}, 7, server.make)  # the approved call
        assert len(server.made) == made + 1
        await runs.end(again.id, 0)
        assert runs.runlog.run(run.id)["status"] == "resumed"

    anyio.run(scenario)
