"""What bounds what the agent's URL can make a gateway hold: the runs it registers (one
request each, none need ever start or end: ``RunBook``'s MAX_LIVE_RUNS and
UNCLAIMED_SILENCE), their calls in memory and in the run log, background runs' output, and
the words of its searches."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolscript.errors import TooManyRunsError, UsageError
from toolscript.gateway import background, runbook
from toolscript.gateway.background import BackgroundRuns
from toolscript.gateway.bodies import MAX_BACKGROUND_OUTPUT, BackgroundStart
from toolscript.gateway.runbook import (
    KEPT_SCRIPT_BYTES,
    MAX_LIVE_RUNS,
    TRACES_KEPT,
    UNCLAIMED_SILENCE,
    RunBook,
)
from toolscript.store.runlog import RunLog


def book(tmp_path: Path) -> RunBook:
    return RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")


async def echo(tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    return "json", arguments


def test_past_the_cap_a_registration_is_refused_and_an_ended_run_makes_room(
    tmp_path: Path,
) -> None:
    """Before: every POST /runs added a run (and its script) that nothing ever dropped."""

    async def scenario() -> None:
        runs = book(tmp_path)
        held = [await runs.register(script="x" * 100) for _ in range(MAX_LIVE_RUNS)]
        with pytest.raises(TooManyRunsError) as refused:
            await runs.register(script="one more")
        error = refused.value
        assert error.status_code == 429 and error.kind == "too_many_runs"
        assert f"{MAX_LIVE_RUNS} runs under way" in error.message
        assert error.hint is not None and "toolscript runs stop RUN_ID" in error.hint
        assert runs.live == MAX_LIVE_RUNS
        await runs.end(held[0].id, 0)
        again = await runs.register()  # one ended: room for one
        assert runs.by_token(again.token) == again.id
        with pytest.raises(TooManyRunsError):
            await runs.register()

    anyio.run(scenario)


def test_registrations_at_once_pass_the_cap_no_further(tmp_path: Path) -> None:
    """Each waits on the log (a resumable run of its script) before it is live: counted
    from the check on, many at once cannot all pass it."""

    async def scenario() -> None:
        runs = book(tmp_path)
        for _ in range(MAX_LIVE_RUNS - 2):
            await runs.register()
        outcomes: list[str] = []

        async def register(number: int) -> None:
            try:
                await runs.register(script_hash=f"h{number}")
                outcomes.append("ok")
            except TooManyRunsError:
                outcomes.append("refused")

        async with anyio.create_task_group() as group:
            for number in range(10):
                group.start_soon(register, number)
        assert outcomes.count("ok") == 2 and outcomes.count("refused") == 8
        assert runs.live == MAX_LIVE_RUNS

    anyio.run(scenario)


def test_the_agents_runs_never_take_the_owners_room(tmp_path: Path) -> None:
    """The agent's URL registered MAX_LIVE_RUNS runs claimed by a process that never exits
    (pid 1: the pid is the registrant's word), which never expire: every exec and the MCP
    face of the user were refused (429) until the gateway restarted. The agent's runs are
    bounded apart; the owner's registrations are not refused for them."""

    async def scenario() -> None:
        runs = book(tmp_path)
        for _ in range(MAX_LIVE_RUNS):
            await runs.register(script="x" * 100, client_pid=1, by_agent=True)
        with pytest.raises(TooManyRunsError):
            await runs.register(client_pid=1, by_agent=True)
        await runs.end_orphans(time.monotonic() + 10 * UNCLAIMED_SILENCE)
        owners = await runs.register(client_pid=os.getpid())  # exec's, the face's
        assert runs.by_token(owners.token) == owners.id
        assert runs.live == MAX_LIVE_RUNS + 1

    anyio.run(scenario)


def test_a_run_no_process_claims_expires_once_silent(tmp_path: Path) -> None:
    """Registered with no pid (or with one of a process gone) and never used: it ends as
    "expired" after UNCLAIMED_SILENCE, its token reaching nothing from then on."""

    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register(script="never started")
        await runs.end_orphans(time.monotonic() + UNCLAIMED_SILENCE / 2)
        assert not run.ended  # not yet
        await runs.end_orphans(time.monotonic() + UNCLAIMED_SILENCE + 1)
        assert run.ended and run.status == "expired"
        assert runs.by_token(run.token) is None and runs.live == 0
        logged = runs.runlog.run(run.id)
        assert logged is not None and logged["status"] == "expired"

    anyio.run(scenario)


def test_a_sign_of_life_keeps_an_unclaimed_run(tmp_path: Path) -> None:
    """Its token shown, a call or a progress report counts the silence from then on; a
    call under way, a prompt or a background run never expires."""

    async def scenario() -> None:
        runs = book(tmp_path)
        used = await runs.register()
        called = await runs.register()
        reporting = await runs.register()
        background = await runs.register()
        background.background = True
        for run in (used, called, reporting, background):
            run.seen -= UNCLAIMED_SILENCE + 1
        assert runs.by_token(used.token) == used.id
        await runs.call(called, "s__t", {}, 2, echo)
        runs.report_progress(reporting, "half way", 0.5)
        calling = await runs.register()
        calling.seen -= UNCLAIMED_SILENCE + 1
        calling.calling["s"] = 1  # a call of it under way (a slow tool)
        await runs.end_orphans()
        assert not any(r.ended for r in (used, called, reporting, background, calling))
        await runs.end_orphans(time.monotonic() + UNCLAIMED_SILENCE + 1)
        assert {r.status for r in (used, called, reporting)} == {"expired"}
        assert not background.ended and not calling.ended

    anyio.run(scenario)


def test_a_run_its_living_process_claims_never_expires(tmp_path: Path) -> None:
    """exec and the face give their pid: a script that calls nothing for an hour is theirs
    to end (the gateway ends it as "died" when that process goes)."""

    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register(client_pid=os.getpid())
        await runs.end_orphans(time.monotonic() + 100 * UNCLAIMED_SILENCE)
        assert not run.ended and run.status == "running"

    anyio.run(scenario)


class Echo:
    """A server that answers every call with its arguments."""

    def __init__(self) -> None:
        self.made = 0

    async def make(self, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        self.made += 1
        return "json", {"n": self.made}


def logged_arguments(runs: RunBook, run_id: str) -> list[Any]:
    shown = runs.runlog.run(run_id)
    assert shown is not None
    return [call["arguments"] for call in shown["calls_made"]]


def test_large_arguments_are_logged_trimmed_and_a_resume_still_knows_the_call(
    tmp_path: Path,
) -> None:
    """Before: each call's arguments were kept whole in memory (--trace) and in the log: 500
    calls of 1 MB through the agent's URL took the run log to 478 MB and the gateway to
    700 MB, and a run's calls have no bound (``max_calls``)."""
    server = Echo()
    big = {"path": "notes.txt", "content": "y" * 1_000_000 + "topsecret-value"}

    async def scenario() -> None:
        runs = RunBook(
            RunLog(tmp_path / "runs.sqlite"),
            lambda: ("topsecret-value",),
            lambda qualified: "ask" if qualified == "s__delete" else "allow",
        )
        run = await runs.register(script_hash="h", script="code")
        size = len(json.dumps(big))
        assert (await runs.call(run, "s__write", big, size, server.make))[0] == 200
        await runs.call(run, "s__delete", {"k": 1}, 8, server.make)  # stops for approval
        await runs.end(run.id, 120)
        stopped_big = await runs.register(script_hash="other")
        await runs.call(stopped_big, "s__delete", big, size, server.make)
        await runs.end(stopped_big.id, 120)
        assert stopped_big.stopped is not None  # kept in memory with the run: trimmed
        assert len(json.dumps(stopped_big.stopped.to_dict())) < 2 * runbook.LOGGED_ARGUMENTS
        assert "topsecret" not in json.dumps(stopped_big.stopped.to_dict())
        logged = logged_arguments(runs, run.id)[0]
        assert logged["path"] == "notes.txt"
        assert logged["content"].startswith("yyy") and len(logged["content"]) < 3000
        assert "topsecret" not in json.dumps(runs.trace(run))
        assert runs.runlog.run(run.id)["calls_made"][0]["arguments_bytes"] == size
        runs.runlog.approve_call(run.id)
        again = await runs.register(script_hash="h")
        assert again.resumed_from == run.id
        replayed = await runs.call(again, "s__write", big, size, server.make)
        assert replayed[0] == 200 and server.made == 1  # answered from the log
        other = dict(big, content="z")  # other arguments: not the logged call
        diverged = await runs.call(again, "s__write", other, 20, server.make)
        assert diverged[0] == 409

    anyio.run(scenario)


def test_a_run_itemizes_its_calls_up_to_a_budget_and_counts_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run may call as often as its max_calls lets it; what the log and --trace keep of
    its calls is bounded (RUN_LOG_BYTES), the count stays true."""
    monkeypatch.setattr(runbook, "RUN_LOG_BYTES", 10 * runbook.CALL_RECORD_BYTES + 100)
    server = Echo()

    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register(max_calls=10**9)
        for number in range(25):
            assert (await runs.call(run, "s__t", {"n": number}, 8, server.make))[0] == 200
        assert len(run.records) == 10 and run.unlogged == 15
        await runs.end(run.id, 0)
        shown = runs.runlog.run(run.id)
        assert shown is not None and shown["calls"] == 25 and len(shown["calls_made"]) == 10

    anyio.run(scenario)


def test_only_the_newest_ended_runs_keep_their_calls_in_memory(tmp_path: Path) -> None:
    """ENDED_KEPT ended runs stay (an end asked twice); their calls, written to the log,
    and their progress reports (up to 500 KB a run) only for the newest TRACES_KEPT."""
    server = Echo()

    async def scenario() -> None:
        runs = book(tmp_path)
        ended = []
        for _ in range(TRACES_KEPT + 3):
            run = await runs.register()
            await runs.call(run, "s__t", {"k": 1}, 8, server.make)
            runs.report_progress(run, "p" * 1000)
            await runs.end(run.id, 0)
            ended.append(run)
        assert [len(run.records) for run in ended] == [0] * 3 + [1] * TRACES_KEPT
        assert [len(run.progress) for run in ended] == [0] * 3 + [1] * TRACES_KEPT
        read = await runs.wait_progress(ended[0].id, 0, 0)
        assert read == {"progress": [], "next": 1, "ended": True}
        assert len(logged_arguments(runs, ended[0].id)) == 1  # the log keeps them

    anyio.run(scenario)


def test_a_huge_script_is_not_kept_for_a_resume(tmp_path: Path) -> None:
    """Each live run held its script whole (up to the 10 MB of a request body)."""

    async def scenario() -> None:
        runs = book(tmp_path)
        small = await runs.register(script="console.log(1)")
        huge = await runs.register(script="x" * (KEPT_SCRIPT_BYTES + 1))
        assert small.script == "console.log(1)" and huge.script == ""

    anyio.run(scenario)


def test_ended_background_runs_keep_a_bounded_total_of_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the newest KEEP_FOLDERS ended runs' output was kept whatever its size (each
    up to its max_output, which had no bound either)."""
    monkeypatch.setattr(background, "KEEP_BYTES", 1300)
    runs = BackgroundRuns(book(tmp_path), tmp_path / "state", tmp_path, lambda: "")
    names = [f"20261126-12000{number}-abcdef" for number in range(5)]
    for name in names:
        folder = runs.folder / name
        folder.mkdir(parents=True)
        (folder / "stdout").write_bytes(b"x" * 600)
        (folder / "stderr").write_bytes(b"")
    dropped = runs._prune(live={names[-1]})  # the newest still runs: never counted
    assert sorted(dropped) == names[:2]
    assert sorted(entry.name for entry in runs.folder.iterdir()) == names[2:]
    # however large the newest ended run's output, it is kept
    (runs.folder / names[4] / "stdout").write_bytes(b"x" * 5000)
    assert sorted(runs._prune(live=set())) == names[2:4]
    assert [entry.name for entry in runs.folder.iterdir()] == [names[4]]


def test_a_background_runs_output_file_has_a_bound(tmp_path: Path) -> None:
    """Before: max_output had none: a script printing in a loop with no timeout filled the
    gateway's state at 90 MB a second."""
    runs = book(tmp_path)
    background_runs = BackgroundRuns(runs, tmp_path / "state", tmp_path, lambda: "")
    code = "for (;;) console.log('z'.repeat(1 << 20));"
    too_much = BackgroundStart(script=code, timeout=0, max_output=MAX_BACKGROUND_OUTPUT + 1)
    with pytest.raises(UsageError) as refused:
        anyio.run(background_runs.start, too_much)
    assert "at most 256 MB" in refused.value.message and runs.live == 0


def test_a_searchs_long_made_up_words_are_not_cached() -> None:
    """Before: every word's stem was cached, 65,536 of them: 300 searches of one 60 KB word
    each took 53 MB (a full cache: gigabytes)."""
    from toolscript.search import text

    before = text._cached_stem.cache_info().currsize
    word = "q" * (text.CACHED_WORD + 1) + "ing"
    assert text.stem(word) == "q" * (text.CACHED_WORD + 1)
    assert text._cached_stem.cache_info().currsize == before
    assert text.stem("issues") == "issu" and text.stem("created") == "creat"


def test_an_index_remembers_the_close_words_of_plausible_words_only() -> None:
    """Before: the close words of each unknown token were kept, 10,000 tokens of up to the
    URL's length each, by every index a search asks."""
    from toolscript.search.lexical import LexicalIndex
    from toolscript.search.text import CACHED_WORD, document_for

    tool = {"name": "create_issue", "description": "Create an issue in a repository"}
    index = LexicalIndex([document_for("gh", "", tool)])
    long_word = "x" * (CACHED_WORD + 1)
    assert index.expand(long_word) == []
    assert long_word not in index._close
    assert index.expand("isue") == index._close["isue"]  # a typo: remembered


def test_an_ended_run_keeps_its_script_only_for_a_resume(tmp_path: Path) -> None:
    """ENDED_KEPT ended runs stay in memory: each held its script (up to a request body,
    10 MB), though the log keeps one only for a run stopped for approval."""

    async def scenario() -> None:
        runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "ask")
        done = await runs.register(script="console.log(1)")
        await runs.end(done.id, 0)
        stopped = await runs.register(script="await tools.s.delete()")
        await runs.call(stopped, "s__delete", {}, 2, echo)
        await runs.end(stopped.id, 120)
        assert done.script == "" and stopped.script == "await tools.s.delete()"
        assert (await runs.stopped_script(stopped.id))["code"] == "await tools.s.delete()"

    anyio.run(scenario)


def test_the_answers_all_live_runs_keep_for_a_resume_have_one_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run kept up to REPLAY_BYTES of answers (64 MB): MAX_LIVE_RUNS runs of an echoing
    tool, each calling with large arguments, held that many times over."""
    monkeypatch.setattr(runbook, "REPLAY_TOTAL", 10_000)
    big = {"text": "y" * 3000}

    async def reply(tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        return "json", arguments  # about 3 KB back, and 3 KB of arguments: 6 KB kept

    async def scenario() -> None:
        runs = book(tmp_path)
        first, second = await runs.register(), await runs.register()
        await runs.call(first, "s__echo", big, 3013, reply)
        assert first.resumable and runs.answers_held == first.held > 6000
        await runs.call(second, "s__echo", big, 3013, reply)  # past the total: kept none
        assert not second.resumable and second.answered == [] and second.held == 0
        assert first.resumable and runs.answers_held == first.held
        await runs.end(first.id, 0)
        assert runs.answers_held == 0  # an ended run's answers are let go
        third = await runs.register()
        await runs.call(third, "s__echo", big, 3013, reply)
        assert third.resumable and runs.answers_held == third.held

    anyio.run(scenario)


def test_an_unclaimed_run_stopped_for_approval_stays_approvable_once_expired(
    tmp_path: Path,
) -> None:
    """A client of the HTTP API (no pid) whose run stopped at a call needing approval, and
    that never ended it: its expiry made it "expired", and the approval the stop message
    asked for was refused (`approve RUN_ID`: nothing awaits approval)."""

    async def scenario() -> None:
        runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "ask")
        run = await runs.register(script_hash="h", script="code")
        await runs.call(run, "shell__run", {"command": "ls"}, 20, echo)
        await runs.end_orphans(time.monotonic() + UNCLAIMED_SILENCE + 1)
        assert run.ended and runs.live == 0
        assert run.status == "awaiting_approval"
        approved = runs.runlog.approve_call(run.id)
        assert approved["approval"] == "recorded"
        assert approved["stopped"]["call"]["tool"] == "shell__run"

    anyio.run(scenario)
