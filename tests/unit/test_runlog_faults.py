"""The run log under faults made for real: a damaged or deleted file, a lock held by another
connection, approvals and resumes racing each other."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import wait_until
from toolscript.errors import RunLogError, UsageError
from toolscript.gateway.runbook import RunBook
from toolscript.store import runlog
from toolscript.store.runlog import RunLog

STOPPED = json.dumps({"call": {"tool": "s__delete", "digest": "d1"}})


# The CLI's log opens a connection per call; the gateway's keeps one (``keep_open``): the
# faults below must be survived by both.
KEPT_OR_NOT = pytest.mark.parametrize("keep_open", [False, True], ids=["per-call", "kept"])


def _filled(path: Path, runs: int = 30, keep_open: bool = False) -> RunLog:
    log = RunLog(path, keep_open=keep_open)
    log.write(
        runs=[
            {"id": f"run-{n:03}", "status": "ok", "started": float(n), "script": "x" * 2000}
            for n in range(runs)
        ]
    )
    return log


def _set_aside(path: Path) -> list[Path]:
    found = path.parent.glob(path.name + ".damaged-*")
    return sorted(kept for kept in found if not kept.name.endswith(("-wal", "-shm", "-journal")))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(
            lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
            id="truncated",
        ),
        pytest.param(
            lambda path: path.write_bytes(b"garbage!" * 12 + path.read_bytes()[96:]),
            id="header-overwritten",
        ),
    ],
)
@KEPT_OR_NOT
def test_a_damaged_run_log_is_set_aside_and_a_new_one_started(
    tmp_path: Path, damage: Any, caplog: pytest.LogCaptureFixture, keep_open: bool
) -> None:
    path = tmp_path / "runs.sqlite"
    _filled(path)
    damage(path)
    log = RunLog(path, keep_open=keep_open)
    with caplog.at_level(logging.WARNING, logger="toolscript.cache"):
        assert log.recent() == []  # no traceback: a fresh log
    kept = _set_aside(path)
    assert len(kept) == 1 and kept[0].stat().st_size > 0  # kept for inspection
    assert sum("set aside" in record.getMessage() for record in caplog.records) == 1
    log.write(runs=[{"id": "new", "status": "ok", "started": 1.0}])
    assert [run["id"] for run in log.recent()] == ["new"]


def test_a_log_damaged_under_the_gateway_s_kept_connection_is_set_aside(tmp_path: Path) -> None:
    """Damaged while the gateway holds its connection open (written by another process,
    so changed since the gateway's last call): the next call finds what a new connection
    would, sets the file aside, and goes on with a new one."""
    path = tmp_path / "runs.sqlite"
    log = _filled(path, keep_open=True)
    assert len(log.recent()) == 20
    log.checkpoint()  # the runs in the file itself, as they are soon after a write
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert log.recent() == []
    assert len(_set_aside(path)) == 1
    log.write(runs=[{"id": "new", "status": "ok", "started": 1.0}])
    assert [run["id"] for run in log.recent()] == ["new"]


def _alone(path: Path, tmp_path: Path) -> RunLog:
    """The log as its file alone holds it (a copy without its WAL)."""
    copy = tmp_path / f"copy-{len(list(tmp_path.glob('copy-*')))}.sqlite"
    copy.write_bytes(path.read_bytes())
    return RunLog(copy)


def test_what_the_kept_connection_writes_is_in_the_file_itself_soon_and_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write is not synced into the file on the writer's way (the checkpoint's syncs
    were most of a run's end): the file alone (without its WAL) holds it once its
    checkpoint came, a moment later, or at the log's close, as when every write closed
    its connection."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setattr(runlog, "CHECKPOINT_DELAY", 3600)
    log = RunLog(path, keep_open=True)
    log.write(runs=[{"id": "r1", "status": "ok", "started": 1.0, "ended": 2.0}])
    log.approve_tool("s__t", "any")
    assert log.recent()[0]["id"] == "r1"  # read back through the WAL at once
    assert _alone(path, tmp_path).recent() == []
    log.close()
    alone = _alone(path, tmp_path)
    assert [run["id"] for run in alone.recent()] == ["r1"]
    assert alone.tool_approved("s__t", "any")

    monkeypatch.setattr(runlog, "CHECKPOINT_DELAY", 0.05)
    log.write(runs=[{"id": "r2", "status": "ok", "started": 3.0, "ended": 4.0}])
    wait_until(
        lambda: [run["id"] for run in _alone(path, tmp_path).recent()],
        lambda ids: ids == ["r2", "r1"],
        30,
        "the checkpoint after a write",
    )


def test_the_kept_connection_s_writes_are_in_the_file_at_close_while_another_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close checkpoints what its checkpoint to come would have: a connection closed
    while another one is open (`toolscript runs` reading, a second gateway) is not the
    last, and SQLite checkpoints only at the last one's close."""
    path = tmp_path / "runs.sqlite"
    monkeypatch.setattr(runlog, "CHECKPOINT_DELAY", 3600)
    log = RunLog(path, keep_open=True)
    log.write(runs=[{"id": "r1", "status": "ok", "started": 1.0, "ended": 2.0}])
    reader = sqlite3.connect(path)
    try:
        assert reader.execute("select id from runs").fetchall() == [("r1",)]
        log.close()
        assert [run["id"] for run in _alone(path, tmp_path).recent()] == ["r1"]
    finally:
        reader.close()


def test_the_check_at_start_sets_a_damaged_log_aside(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _filled(path)
    path.write_bytes(path.read_bytes()[:4096])
    assert RunLog(path).check() is not None
    assert len(_set_aside(path)) == 1 and not path.exists()
    assert RunLog(path).check() is None  # a missing file is fine: it is made when needed


@KEPT_OR_NOT
def test_a_run_log_deleted_while_in_use_gets_its_tables_again(
    tmp_path: Path, keep_open: bool
) -> None:
    path = tmp_path / "runs.sqlite"
    log = _filled(path, runs=1, keep_open=keep_open)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    log.write(runs=[{"id": "after", "status": "ok", "started": 2.0}])
    assert [run["id"] for run in log.recent()] == ["after"]


def test_a_locked_run_log_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolscript.store.runlog.BUSY_SECONDS", 0.2)
    path = tmp_path / "runs.sqlite"
    log = _filled(path, runs=1)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(RunLogError, match="locked by another process") as caught:
            log.recent()
        assert caught.value.hint and "try again" in caught.value.hint
        assert _set_aside(path) == []  # held is not damaged
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(log.recent()) == 1


@KEPT_OR_NOT
def test_runs_and_calls_wait_in_memory_while_the_log_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep_open: bool
) -> None:
    monkeypatch.setattr("toolscript.store.runlog.BUSY_SECONDS", 0.2)
    path = tmp_path / "runs.sqlite"
    runs = RunBook(RunLog(path, keep_open=keep_open), lambda: (), lambda qualified: "allow")

    async def made(tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        return "json", {"ok": True}

    async def scenario() -> None:
        await runs.flush()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process writing for a long time
        try:
            run = await runs.register(script_hash="h")
            await runs.call(run, "s__read", {"k": 1}, 7, made)
            await runs.end(run.id, 0)  # must not raise: the run ends, its record waits
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await runs.flush()
        shown = runs.runlog.run(run.id)
        assert shown is not None and shown["status"] == "ok"
        assert [call["tool"] for call in shown["calls_made"]] == ["s__read"]

    anyio.run(scenario)


def test_the_gateways_kept_log_is_read_by_others_at_once_and_closed_whole(
    tmp_path: Path,
) -> None:
    """What the gateway writes with its connection kept is what `toolscript runs` (another
    connection) reads right after; closed, the log is one file again (no WAL left)."""
    path = tmp_path / "runs.sqlite"
    gateway = RunLog(path, keep_open=True)
    reader = RunLog(path)
    for number in range(3):
        gateway.write(
            runs=[{"id": f"r{number}", "status": "ok", "started": float(number), "ended": 9.0}],
            calls=[{"run_id": f"r{number}", "seq": 1, "tool": "s__t", "arguments": "{}"}],
        )
        assert reader.recent()[0]["id"] == f"r{number}"
    shown = reader.run("r2")
    assert shown is not None and [call["tool"] for call in shown["calls_made"]] == ["s__t"]
    gateway.close()
    assert not Path(f"{path}-wal").exists()
    gateway.write(runs=[{"id": "later", "status": "ok", "started": 5.0}])  # opens again
    assert reader.recent()[0]["id"] == "later"


@KEPT_OR_NOT
def test_a_write_is_one_transaction(tmp_path: Path, keep_open: bool) -> None:
    """A write whose calls cannot be stored stores nothing of it (the run row neither), and
    the log goes on."""
    path = tmp_path / "runs.sqlite"
    log = RunLog(path, keep_open=keep_open)
    with pytest.raises(RunLogError):
        log.write(
            runs=[{"id": "half", "status": "ok", "started": 1.0}],
            calls=[{"run_id": "half", "seq": 1, "no_such_column": 1}],
        )
    assert log.recent() == []
    log.write(runs=[{"id": "whole", "status": "ok", "started": 2.0}])
    assert [run["id"] for run in log.recent()] == ["whole"]


def test_an_update_keeps_the_columns_it_does_not_give(tmp_path: Path) -> None:
    """A run written again (its end) keeps what only its first write gave; a list or dict
    value is kept as JSON."""
    log = RunLog(tmp_path / "runs.sqlite")
    log.write(runs=[{"id": "r", "status": "running", "started": 1.0, "script": "code"}])
    log.write(runs=[{"id": "r", "status": "ok", "ended": 2.0, "stopped": ["a", {"b": 1}]}])
    shown = log.run("r")
    assert shown is not None
    assert (shown["status"], shown["script"], shown["ended"]) == ("ok", "code", 2.0)
    assert shown["stopped"] == ["a", {"b": 1}]


def _stopped_log(path: Path) -> RunLog:
    log = RunLog(path)
    log.write(
        runs=[
            {
                "id": "stopped-1",
                "status": "awaiting_approval",
                "stopped": STOPPED,
                "started": 1.0,
                "script": "code",
                "script_hash": "h",
            }
        ]
    )
    return log


def test_concurrent_approvals_of_one_run_record_one(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _stopped_log(path)
    answers: list[str] = []
    threads = [
        threading.Thread(
            target=lambda: answers.append(RunLog(path).approve_call("stopped-1")["approval"])
        )
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == ["already"] * 5 + ["recorded"]
    assert len(RunLog(path).approvals()) == 1


def test_a_stopped_run_is_resumed_at_most_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _stopped_log(path).approve_call("stopped-1")
    outcomes: list[str] = []

    async def resume(book: RunBook) -> None:
        try:
            run = await book.register(script_hash="h", resume="stopped-1")
            outcomes.append(f"resumed:{run.resumed_from}")
        except UsageError as exc:
            outcomes.append("refused" if "resumed already" in exc.message else exc.message)

    async def scenario() -> None:
        books = [RunBook(RunLog(path), lambda: (), lambda q: "ask") for _ in range(3)]
        async with anyio.create_task_group() as tasks:
            for one in books:
                tasks.start_soon(resume, one)

    anyio.run(scenario)
    assert sorted(outcomes) == ["refused", "refused", "resumed:stopped-1"]


def test_runs_of_a_gateway_gone_are_settled_and_pruned_later(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    log = RunLog(path, keep=2)
    log.write(
        runs=[
            {"id": f"dead-{n}", "status": "running", "started": float(n), "owner": "1:0"}
            for n in range(5)
        ]
        + [{"id": "live", "status": "running", "started": 9.0, "owner": "me"}]
    )
    assert log.settle_orphans(lambda owner: owner == "me") == 5
    statuses = {run["id"]: run["status"] for run in log.recent(10)}
    assert statuses.pop("live") == "running"
    assert set(statuses.values()) == {"died"} and len(statuses) == 2  # pruned past keep


def test_a_run_whose_gateway_died_while_asking_can_be_approved_and_resumed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    made: list[str] = []

    async def make(tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        made.append(tool)
        return "json", {"done": tool}

    async def asked_then_gone() -> str:
        runs = RunBook(RunLog(path), lambda: (), lambda q: "ask" if q == "s__delete" else "allow")
        run = await runs.register(script_hash="h", interactive=True, script="code")
        await runs.call(run, "s__read", {}, 2, make)
        with anyio.move_on_after(0.5):  # nobody answers: the gateway is killed meanwhile
            await runs.call(run, "s__delete", {"k": 1}, 7, make)
        return run.id

    run_id = anyio.run(asked_then_gone)
    log = RunLog(path)
    assert log.run(run_id)["status"] == "prompting"
    assert log.settle_orphans(lambda owner: False) == 1
    assert log.run(run_id)["status"] == "awaiting_approval"
    assert log.approve_call(run_id)["approval"] == "recorded"

    async def resumed() -> None:
        runs = RunBook(RunLog(path), lambda: (), lambda q: "ask")
        run = await runs.register(script_hash="h", resume=run_id)
        assert (await runs.call(run, "s__read", {}, 2, make))[0] == 200  # from the log
        assert (await runs.call(run, "s__delete", {"k": 1}, 7, make))[0] == 200
        await runs.end(run.id, 0)

    anyio.run(resumed)
    assert made == ["s__read", "s__delete"]


# Another process: sets the log aside (as its check does a damaged one), starts a new one
# whose writes stay in its WAL (no checkpoint), and holds it open until told to go on.
NEW_LOG_BESIDE = """
import json, sys
from pathlib import Path
from toolscript.plumbing.cachefiles import set_aside
from toolscript.store import runlog
runlog.CHECKPOINT_DELAY = 3600.0
path = Path(sys.argv[1])
set_aside(path, "damaged")
log = runlog.RunLog(path, keep_open=True)
log.write(runs=[{"id": "new", "status": "ok", "started": 2.0}])
print("written", flush=True)
sys.stdin.readline()
print(json.dumps([run["id"] for run in log.recent()]), flush=True)
print(json.dumps([run["id"] for run in runlog.RunLog(path).recent()]), flush=True)
"""


def test_closing_the_kept_connection_to_a_log_set_aside_leaves_the_new_ones_wal(
    tmp_path: Path,
) -> None:
    """Review9's worry, made for real with two processes: the gateway's kept connection to a
    log another process set aside (and replaced) is closed; SQLite deletes the WAL of a
    database by name when its last connection closes, and that name is now the new log's
    WAL. It does not: it sees the file moved and neither checkpoints nor deletes."""
    import subprocess
    import sys

    path = tmp_path / "runs.sqlite"
    kept = RunLog(path, keep_open=True)
    kept.write(runs=[{"id": "old", "status": "ok", "started": 1.0}])
    other = subprocess.Popen(
        [sys.executable, "-c", NEW_LOG_BESIDE, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert other.stdout is not None
    assert other.stdout.readline().strip() == "written"
    kept.close()  # the old file's last connection
    assert Path(f"{path}-wal").exists()
    out, _ = other.communicate("\n", timeout=60)
    assert other.returncode == 0
    assert [json.loads(line) for line in out.splitlines()] == [["new"], ["new"]]
    assert len(_set_aside(path)) == 1
