"""Policy decisions, the run log, and a run's checks (replay, approval, limits), in-process."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from toolscript.cli.hooks import approval_decision
from toolscript.config import parse_config
from toolscript.errors import ConfigError, RunLogError
from toolscript.gateway.runbook import DEFAULT_MAX_CALLS, RunBook, digest
from toolscript.gateway.telemetry import Telemetry, telemetry_from_environment
from toolscript.plumbing.redact import redact_value, secret_name
from toolscript.policy import decide, matching, timeout_for
from toolscript.store.runlog import SCHEMA_VERSION, RunLog

DESTRUCTIVE = {"destructiveHint": True}
READ_ONLY = {"readOnlyHint": True}


def test_rules_beat_annotations_and_specific_patterns_beat_general_ones() -> None:
    rules = {"*": "allow", "delete_*": "deny", "delete_draft": "ask"}
    assert decide(rules, "destructive", "delete_repo", None) == "deny"
    assert decide(rules, "destructive", "delete_draft", None) == "ask"
    assert decide(rules, "destructive", "drop", DESTRUCTIVE) == "allow"  # "*" names it
    assert matching({"a*": 1, "ab*": 2}, "abc") == 2
    assert matching({"x": 1}, "y") is None


def test_the_ask_setting_reads_annotations() -> None:
    assert decide({}, "destructive", "t", DESTRUCTIVE) == "ask"
    assert decide({}, "destructive", "t", {"destructiveHint": False}) == "allow"
    assert decide({}, "destructive", "t", None) == "allow"  # only an explicit true asks
    assert decide({}, "writes", "t", None) == "ask"
    assert decide({}, "writes", "t", READ_ONLY) == "allow"
    assert decide({}, "never", "t", DESTRUCTIVE) == "allow"
    assert decide({"t": "ask"}, "never", "t", None) == "ask"  # an explicit rule still asks


def test_tool_timeouts_follow_the_same_patterns() -> None:
    assert timeout_for({"slow_*": 300, "slow_one": 5}, "slow_one", 60) == 5
    assert timeout_for({"slow_*": 300}, "slow_two", 60) == 300
    assert timeout_for({}, "fast", 60) == 60


def test_config_reads_policy_timeouts_and_runs(tmp_path: Path) -> None:
    text = json.dumps(
        {
            "policy": {"ask": "writes"},
            "runs": {"keep": 10, "maxMegabytes": 2},
            "mcpServers": {
                "gh": {
                    "command": "x",
                    "policy": {"delete_*": "deny"},
                    "toolTimeouts": {"search_*": 5},
                }
            },
        }
    )
    config = parse_config(text, tmp_path / ".toolscript.json", {})
    server = config.server("gh")
    assert config.asking == "writes" and config.runs.keep == 10
    assert server.denies("delete_repo") and not server.allows_tool("delete_repo")
    assert server.timeout_for("search_code") == 5 and server.timeout_for("x") == 60
    assert config.decision(server, "create_issue", None) == "ask"
    assert config.decision(server, "get_issue", READ_ONLY) == "allow"


def test_a_wrong_policy_value_names_file_line_and_field(tmp_path: Path) -> None:
    text = '{\n  "mcpServers": {\n    "gh": {"command": "x", "policy": {"*": "maybe"}}\n  }\n}\n'
    with pytest.raises(ConfigError) as raised:
        parse_config(text, tmp_path / ".toolscript.json", {})
    assert ".toolscript.json:3:" in raised.value.message
    assert "mcpServers.gh.policy" in raised.value.message and '"maybe"' in raised.value.message


def test_arguments_are_redacted_by_value_and_by_name() -> None:
    value = {"q": "key sk-abcdef123456 here", "apiKey": "x", "max_tokens": 5, "n": [{"pin": 1}]}
    assert redact_value(value, ["sk-abcdef123456"]) == {
        "q": "key *** here",
        "apiKey": "***",
        "max_tokens": 5,
        "n": [{"pin": "***"}],
    }
    assert secret_name("access_token") and secret_name("Authorization")
    assert not secret_name("maxTokens") and not secret_name("author")


def test_the_run_log_migrates_approves_and_prunes(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    runlog = RunLog(path, keep=2)
    for number in range(4):
        runlog.write(
            runs=[
                {
                    "id": f"run{number}",
                    "script_hash": "h",
                    "origin": "cli",
                    "started": float(number),
                    "ended": float(number) + 1,
                    "exit": 0,
                    "status": "ok",
                    "calls": 1,
                    "resumed_from": "",
                    "stopped": "",
                    "script": "",
                    "script_name": "",
                }
            ],
            calls=[
                {
                    "run_id": f"run{number}",
                    "seq": 1,
                    "tool": "a__b",
                    "arguments": "{}",
                    "arguments_bytes": 2,
                    "result_bytes": 3,
                    "started": float(number),
                    "ms": 1.0,
                    "outcome": "ok",
                    "error": "",
                }
            ],
        )
    assert [run["id"] for run in runlog.recent()] == ["run3", "run2"]
    assert runlog.run("run1") is None and runlog.run("run3")["calls_made"][0]["tool"] == "a__b"
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert path.stat().st_mode & 0o777 == 0o600
    assert runlog.approve_tool("a__b", "one") and not runlog.approve_tool("a__b", "one")
    assert runlog.tool_approved("a__b", "one")
    assert runlog.revoke_tool("a__b") and not runlog.tool_approved("a__b", "one")
    with pytest.raises(ValueError):
        runlog.approve_call("run3")  # it did not stop for approval
    with pytest.raises(KeyError):
        runlog.approve_call("nothing")


def test_the_run_log_stays_under_its_size(tmp_path: Path) -> None:
    runlog = RunLog(tmp_path / "runs.sqlite", keep=10_000, max_bytes=300_000)
    big = "x" * 20_000
    for number in range(60):
        runlog.write(
            runs=[
                {
                    "id": f"r{number:03}",
                    "origin": "cli",
                    "started": float(number),
                    "ended": number + 1.0,
                    "status": "ok",
                    "calls": 1,
                }
            ],
            calls=[
                {
                    "run_id": f"r{number:03}",
                    "seq": 1,
                    "tool": "a__b",
                    "arguments": big,
                    "arguments_bytes": len(big),
                    "result_bytes": 0,
                    "started": float(number),
                    "ms": 1.0,
                    "outcome": "ok",
                    "error": "",
                }
            ],
        )
    kept = [run["id"] for run in runlog.recent(100)]
    assert 5 < len(kept) < 20 and kept[0] == "r059"  # the newest stay, the oldest went
    assert (tmp_path / "runs.sqlite").stat().st_size < 2_000_000


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    RunLog(path).recent()
    sqlite3.connect(path).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RunLogError, match="newer toolscript"):
        RunLog(path).recent()


def _written_by_sqlite_utils(path: Path, version: int) -> None:
    """A run log as toolscript wrote it with sqlite_utils' ``create`` (schema ``version``)."""
    import sqlite_utils

    db = sqlite_utils.Database(path)
    db["runs"].create(
        {
            "id": str, "script_hash": str, "origin": str, "started": float, "ended": float,
            "exit": int, "status": str, "calls": int, "resumed_from": str, "stopped": str,
            "script": str, "script_name": str,
        },
        pk="id",
    )  # fmt: skip
    db["runs"].create_index(["started"])
    db["runs"].create_index(["script_hash"])
    db["calls"].create(
        {
            "run_id": str, "seq": int, "tool": str, "arguments": str, "arguments_bytes": int,
            "result_bytes": int, "started": float, "ms": float, "outcome": str, "error": str,
        },
        pk=("run_id", "seq"),
    )  # fmt: skip
    db["replay"].create(
        {"run_id": str, "seq": int, "tool": str, "digest": str, "status": int, "shape": str,
         "body": bytes},
        pk=("run_id", "seq"),
    )  # fmt: skip
    db["approvals"].create(
        {"id": int, "scope": str, "tool": str, "run_id": str, "digest": str,
         "created": float, "used_by": str},
        pk="id",
    )  # fmt: skip
    db["approvals"].create_index(["scope", "tool"])
    if version >= 2:
        db["runs"].add_column("owner", str, not_null_default="")
        db["runs"].add_column("client", str, not_null_default="")
    if version >= 3:
        db["runs"].add_column("by_agent", int, not_null_default=0)
    if version >= 4:
        db["approvals"].add_column("server", str, not_null_default="")
        db["runs"].add_column("limits", str, not_null_default="")
    if version >= 5:
        db["meta"].create({"key": str, "value": str}, pk="key", not_null={"value"})
    if version >= 6:
        db["replay"].add_column("masked", int, not_null_default=0)
    db["runs"].insert({"id": "old", "origin": "cli", "started": 1.0, "status": "ok"})
    db.execute(f"PRAGMA user_version = {version}")
    db.conn.close()


def _schema(path: Path) -> list[tuple[str, str, str | None]]:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return list(connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name"))


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6])
def test_the_run_log_reads_and_upgrades_a_file_sqlite_utils_wrote(
    tmp_path: Path, version: int
) -> None:
    """The run log's tables are now made in plain SQL: a new file's are the very ones
    sqlite_utils made, and a file it wrote, at either schema, is read and brought up to date."""
    old, new = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    _written_by_sqlite_utils(old, version)
    RunLog(new).recent()
    runlog = RunLog(old)
    assert [run["id"] for run in runlog.recent()] == ["old"]
    assert runlog.run("old")["status"] == "ok"
    assert _schema(old) == _schema(new)
    reference = tmp_path / "reference.sqlite"
    _written_by_sqlite_utils(reference, SCHEMA_VERSION)
    assert _schema(new) == _schema(reference)


def test_a_tool_approval_holds_for_the_server_it_was_given_for(tmp_path: Path) -> None:
    """An "always" approval is bound to its server's identity: another server of the same
    name asks again; one stored before identities (schema 3) asks once more, then binds."""
    path = tmp_path / "runs.sqlite"
    _written_by_sqlite_utils(path, 3)
    with contextlib.closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(
            "INSERT INTO approvals (scope, tool, run_id, digest, created, used_by) "
            "VALUES ('tool', 'a__b', '', '', 1.0, '')"
        )
    runlog = RunLog(path)
    assert not runlog.tool_approved("a__b", "first")  # an old approval: asked once more
    assert not runlog.tool_approved("a__b", "")  # a server the config does not have
    assert runlog.approve_tool("a__b", "first")
    assert runlog.tool_approved("a__b", "first")
    assert not runlog.tool_approved("a__b", "second")  # the entry now runs something else
    assert runlog.approve_tool("a__b", "second")
    assert runlog.tool_approved("a__b", "second") and not runlog.tool_approved("a__b", "first")
    assert [a["tool"] for a in runlog.approvals()] == ["a__b"]


class FakeServer:
    """Stands in for the gateway's calls: counts them, answers with the arguments."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []

    async def make(self, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        self.made.append((tool, arguments))
        return "json", {"echo": arguments, "n": len(self.made)}


def book(tmp_path: Path, telemetry: Any = None) -> RunBook:
    decisions = {"s__delete": "ask"}
    return RunBook(
        RunLog(tmp_path / "runs.sqlite"),
        lambda: ("topsecret-value",),
        lambda qualified: decisions.get(qualified, "allow"),
        telemetry,
    )


async def stopped_run(
    runs: RunBook, server: FakeServer, read: dict[str, Any], script_hash: str = "h"
) -> tuple[Any, tuple[int, str, bytes]]:
    """A run that read ``read``, then stopped for approval at ``s__delete``; its read's answer."""
    run = await runs.register(script_hash=script_hash, script="code")
    answer = await runs.call(run, "s__read", read, 7, server.make)
    await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
    await runs.end(run.id, 120)
    return run, answer


def test_retention_keeps_a_long_run_that_ended_after_shorter_ones(tmp_path: Path) -> None:
    """keep=2: a run started first that ends after two short ones is kept, as they are; the
    oldest to end goes. (Ordered by start, the long run was dropped by its own end.)"""
    runlog = RunLog(tmp_path / "runs.sqlite", keep=2)

    def ended(name: str, started: float, ended: float) -> None:
        runlog.write(
            runs=[
                {
                    "id": name,
                    "script_hash": "h",
                    "origin": "cli",
                    "started": started,
                    "ended": ended,
                    "exit": 0,
                    "status": "ok",
                    "calls": 0,
                }
            ]
        )

    ended("short1", 10.0, 11.0)
    ended("short2", 12.0, 13.0)
    ended("long", 1.0, 20.0)
    assert {run["id"] for run in runlog.recent()} == {"long", "short2"}
    assert runlog.run("long") is not None and runlog.run("short1") is None


def test_a_resume_keeps_the_limits_it_does_not_set(tmp_path: Path) -> None:
    """The stopped run's limits go to its resume (explicit or by the same script), each one
    the resume gives replacing the kept one; a run that resumes nothing has its own alone."""
    server = FakeServer()

    async def scenario() -> None:
        runs = book(tmp_path)
        limits = {"timeout": 5.0, "memory_mb": 64, "max_output": None}
        first = await runs.register(script_hash="h", max_calls=3, limits=limits)
        await runs.call(first, "s__delete", {"k": 1}, 7, server.make)
        await runs.end(first.id, 120)
        runs.runlog.approve_call(first.id)
        second = await runs.register(script_hash="h", limits={"memory_mb": 128})
        assert second.resumed_from == first.id
        assert second.max_calls == 3
        assert second.limits == {"timeout": 5.0, "memory_mb": 128}
        await runs.end(second.id, 0)
        fresh = await runs.register(script_hash="other", max_calls=None)
        assert fresh.max_calls == DEFAULT_MAX_CALLS and fresh.limits == {}

    anyio.run(scenario)


def test_a_stopped_run_resumes_from_its_log_and_makes_the_approved_call_once(
    tmp_path: Path,
) -> None:
    server = FakeServer()

    async def scenario() -> None:
        runs = book(tmp_path)
        first = await runs.register(script_hash="h", script="code")
        ok = await runs.call(first, "s__read", {"k": 1}, 7, server.make)
        stopped = await runs.call(first, "s__delete", {"k": 1}, 7, server.make)
        later = await runs.call(first, "s__read", {"k": 2}, 7, server.make)
        assert ok[0] == 200 and stopped[0] == 403 and later[0] == 403  # stopped for good
        assert json.loads(stopped[2])["error"] == "approval_required"
        await runs.end(first.id, 120)
        assert len(server.made) == 1
        # Not approved: re-running the same script is a fresh run.
        assert runs.runlog.resumable("h", runs.identity) is None
        runs.runlog.approve_call(first.id)
        second = await runs.register(script_hash="h")
        assert second.resumed_from == first.id
        again = await runs.call(second, "s__read", {"k": 1}, 7, server.make)
        assert again == ok  # the same answer, from the log
        made = await runs.call(second, "s__delete", {"k": 1}, 7, server.make)
        assert made[0] == 200
        await runs.call(second, "s__read", {"k": 2}, 7, server.make)
        await runs.end(second.id, 0)
        assert [tool for tool, _ in server.made] == ["s__read", "s__delete", "s__read"]
        shown = runs.runlog.run(second.id)
        assert [c["outcome"] for c in shown["calls_made"]] == ["replayed", "ok", "ok"]
        assert runs.runlog.run(first.id)["status"] == "resumed"

    anyio.run(scenario)


def test_an_ended_run_keeps_none_of_its_answers_in_memory(tmp_path: Path) -> None:
    """The gateway keeps its last ENDED_KEPT ended runs; their results (up to REPLAY_BYTES
    each) are not kept with them: a run stopped for approval resumes from the log."""
    server = FakeServer()
    big = {"text": "x" * 100_000}

    async def scenario() -> None:
        runs = book(tmp_path)
        done = await runs.register(script_hash="done", script="code")
        assert (await runs.call(done, "s__read", big, 7, server.make))[0] == 200
        assert done.answered  # kept while the run goes on: a stop would need them
        await runs.end(done.id, 0)
        stopped = await runs.register(script_hash="stopped", script="code")
        first = await runs.call(stopped, "s__read", big, 7, server.make)
        await runs.call(stopped, "s__delete", {"k": 1}, 7, server.make)
        await runs.end(stopped.id, 120)
        assert done.answered == [] and stopped.answered == []
        runs.runlog.approve_call(stopped.id)
        resumed = await runs.register(script_hash="stopped")
        assert resumed.resumed_from == stopped.id
        assert await runs.call(resumed, "s__read", big, 7, server.make) == first
        assert len(server.made) == 2  # the read answered again from the log

    anyio.run(scenario)


def test_an_answer_holding_a_secret_is_masked_on_disk_and_whole_for_a_resume_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log keeps a result that held a configured secret as ``***``; the gateway that ran
    the script gives a resume the answer as it came (else a script that passed it on
    diverges), another gateway the log's, and the oldest run's go past their bound."""
    from toolscript.gateway import runbook

    server = FakeServer()
    sent = {"k": "topsecret-value"}

    async def stop(runs: RunBook, name: str) -> tuple[Any, Any]:
        run, answer = await stopped_run(runs, server, sent, name)
        runs.runlog.approve_call(run.id)
        return run, answer

    async def scenario() -> None:
        runs = book(tmp_path)
        first, answer = await stop(runs, "one")
        assert b"topsecret-value" in answer[2]
        on_disk = runs.runlog.replay(first.id)
        assert b"topsecret-value" not in on_disk[0]["body"] and b"***" in on_disk[0]["body"]
        resumed = await runs.register(script_hash="one")
        assert await runs.call(resumed, "s__read", sent, 7, server.make) == answer
        # another gateway (a restart) has only the log's
        await stop(runs, "two")
        elsewhere = await book(tmp_path).register(script_hash="two")
        replayed = await runs.call(elsewhere, "s__read", sent, 7, server.make)
        assert b"***" in replayed[2] and b"topsecret-value" not in replayed[2]
        monkeypatch.setattr(runbook, "SECRET_ANSWERS_TOTAL", len(answer[2]) + 10)
        await stop(runs, "three")
        fourth, _ = await stop(runs, "four")
        assert list(runs._secret_answers) == [fourth.id]

    anyio.run(scenario)


def test_a_stopped_runs_answers_are_searched_for_secrets_once_and_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searching an answer for every spelling and run of a secret costs about 50 ms a MB,
    and a stopped run keeps up to REPLAY_BYTES of them: searched on the event loop (to keep
    them whole in memory), every call of every run waited seconds; they are searched once,
    by the thread that writes the log."""
    from toolscript.gateway import runbook

    searched: list[threading.Thread] = []
    search = runbook.may_hold_secret

    def watched(text: Any, known: Any, **options: Any) -> bool:
        if isinstance(text, bytes):  # an answer (the kept script is searched too)
            searched.append(threading.current_thread())
        return search(text, known, **options)

    monkeypatch.setattr(runbook, "may_hold_secret", watched)
    server = FakeServer()
    sent = {"k": "topsecret-value"}

    async def scenario() -> None:
        runs = book(tmp_path)
        loop = threading.current_thread()
        run = await runs.register(script_hash="h", script="code")
        answer = await runs.call(run, "s__read", sent, 7, server.make)
        await runs.call(run, "s__read", {"k": 2}, 7, server.make)
        await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
        await runs.end(run.id, 120)
        assert len(searched) == 2 and loop not in searched, searched
        assert list(runs._secret_answers[run.id]) == [1]
        runs.runlog.approve_call(run.id)
        resumed = await runs.register(script_hash="h")
        assert await runs.call(resumed, "s__read", sent, 7, server.make) == answer

    anyio.run(scenario)


def test_an_answer_holding_a_secret_only_in_base64_or_in_part_is_masked_on_disk(
    tmp_path: Path,
) -> None:
    """The log's copy of an answer is redacted when it holds a whole secret in any spelling
    (a server's base64 of its token was written as it came), and then so is a run of it,
    the run having been handed the secret whole."""
    import base64

    server = FakeServer()
    spelled = [base64.b64encode(b"topsecret-value").decode(), "opsecret-valu"]

    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register(script_hash="h", script="code")
        await runs.call(run, "s__read", {"k": spelled}, 7, server.make)
        await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
        await runs.end(run.id, 120)
        kept = runs.runlog.replay(run.id)[0]["body"]
        assert b"***" in kept and spelled[0].encode() not in kept, kept
        # the echo handed the run the secret (its base64): its runs are masked too (stop 74;
        # test_attacks_stop72_written keeps a run never handed it as written)
        assert spelled[1].encode() not in kept, kept
        runs.runlog.approve_call(run.id)
        resumed = await runs.register(script_hash="h")
        answer = await runs.call(resumed, "s__read", {"k": spelled}, 7, server.make)
        assert all(form.encode() in answer[2] for form in spelled)  # whole, for this gateway

    anyio.run(scenario)


def test_a_diverging_replay_and_too_many_calls_stop_the_run(tmp_path: Path) -> None:
    server = FakeServer()

    async def scenario() -> None:
        runs = book(tmp_path)
        first, _ = await stopped_run(runs, server, {"k": 1})
        resumed = await runs.register(resume=first.id)
        diverged = await runs.call(resumed, "s__read", {"k": 99}, 8, server.make)
        assert diverged[0] == 409 and json.loads(diverged[2])["error"] == "replay_diverged"
        assert (await runs.call(resumed, "s__read", {"k": 1}, 7, server.make))[0] == 409
        limited = await runs.register(max_calls=2)
        statuses = [
            (await runs.call(limited, "s__read", {"i": i}, 7, server.make))[0] for i in range(4)
        ]
        assert statuses == [200, 200, 429, 429]
        assert len(server.made) == 3  # the first run's read and the limited run's two

    anyio.run(scenario)


def test_interactive_runs_ask_and_take_the_answer(tmp_path: Path) -> None:
    server = FakeServer()

    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register(interactive=True)

        async def user() -> None:
            prompt = await runs.wait_prompt(run.id, 5)
            assert prompt is not None and prompt["tool"] == "s__delete"
            assert prompt["arguments"] == {"password": "***", "k": 1}
            assert runs.answer(run.id, prompt["seq"], "no")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(user)
            refused = await runs.call(run, "s__delete", {"password": "p", "k": 1}, 9, server.make)
        assert refused[0] == 403 and json.loads(refused[2])["error"] == "call_refused"
        assert server.made == [] and run.stopped is None  # the script goes on

    anyio.run(scenario)


def test_an_answered_prompt_is_not_shown_again_while_the_run_log_is_slow(
    tmp_path: Path,
) -> None:
    # A run that asks is flushed as 'prompting' while it asks; under load that write can
    # outlast the answer, and a watcher polling meanwhile must not see the call again (the MCP
    # face asked its client five times for one call).
    server = FakeServer()
    written = threading.Event()

    class SlowLog(RunLog):
        def write(self, **rows: Any) -> None:
            written.wait(10)
            super().write(**rows)

    async def scenario() -> None:
        runs = RunBook(
            SlowLog(tmp_path / "runs.sqlite"),
            lambda: (),
            lambda qualified: "ask" if qualified == "s__delete" else "allow",
        )
        run = await runs.register(interactive=True)
        shown: list[Any] = []

        async def user() -> None:
            prompt = await runs.wait_prompt(run.id, 5)
            assert prompt is not None
            assert runs.answer(run.id, prompt["seq"], "yes")
            shown.append(await runs.wait_prompt(run.id, 0))  # the flush still writes
            written.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(user)
            made = await runs.call(run, "s__delete", {"k": 1}, 9, server.make)
        assert made[0] == 200 and shown == [None]
        assert len(server.made) == 1

    anyio.run(scenario)


def test_the_log_keeps_no_configured_secret(tmp_path: Path) -> None:
    server = FakeServer()

    async def scenario() -> None:
        runs = book(tmp_path)
        run = await runs.register(script="const key = 'topsecret-value';")
        await runs.call(run, "s__delete", {"note": "uses topsecret-value"}, 9, server.make)
        await runs.end(run.id, 120)

    anyio.run(scenario)
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("runs.sqlite*"))
    assert b"topsecret-value" not in stored


def test_a_script_holding_a_secret_in_base64_or_in_part_is_not_kept_for_its_resume(
    tmp_path: Path,
) -> None:
    """The stopped run's script is kept for ``--resume`` only when it holds no whole
    configured secret in any spelling masking knows (base64 keeps it out of the log, as the
    whole secret does); a run of one is the script's own text (refusing it told the script
    which of its guesses were runs, one bit a resume)."""
    server = FakeServer()
    scripts = {
        "plain": "const key = 'nothing to hide';",
        "base64": "const key = atob('dG9wc2VjcmV0LXZhbHVl');",
        "part": "const key = 'topsecret-' + 'value';",
    }

    async def scenario() -> dict[str, str]:
        runs = book(tmp_path)
        kept = {}
        for name, script in scripts.items():
            run = await runs.register(script=script)
            await runs.call(run, "s__delete", {"k": 1}, 7, server.make)
            await runs.end(run.id, 120)
            kept[name] = (runs.runlog.run(run.id) or {}).get("script", "")
        return kept

    kept = anyio.run(scenario)
    assert kept == {"plain": scripts["plain"], "base64": "", "part": scripts["part"]}


def test_digest_names_the_tool_and_the_exact_arguments() -> None:
    assert digest("a__b", {"x": 1, "y": 2}) == digest("a__b", {"y": 2, "x": 1})
    assert digest("a__b", {"x": 1}) != digest("a__c", {"x": 1})
    assert digest("a__b", {"x": 1}) != digest("a__b", {"x": 2})
    assert msgspec.json.decode(msgspec.json.encode({"x": 1})) == {"x": 1}


@pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.sdk") is None, reason="needs opentelemetry-sdk"
)
def test_runs_and_calls_are_spans(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    server = FakeServer()

    async def scenario() -> None:
        runs = book(tmp_path, Telemetry(provider))
        run = await runs.register(origin="cli")
        await runs.call(run, "s__read", {}, 2, server.make)
        await runs.call(run, "s__delete", {}, 2, server.make)
        await runs.end(run.id, 120)

    anyio.run(scenario)
    spans = exporter.get_finished_spans()
    [root] = [span for span in spans if span.parent is None]
    calls = [span for span in spans if span.parent is not None]
    assert root.name == "toolscript run"
    assert root.attributes["toolscript.run.status"] == "awaiting_approval"
    assert [span.name for span in calls] == ["tool s__read", "tool s__delete"]
    assert all(span.parent.span_id == root.context.span_id for span in calls)
    assert calls[1].attributes["toolscript.call.outcome"] == "approval_required"


def test_without_otel_variables_the_sdk_is_not_imported() -> None:
    # (the mcp SDK imports the opentelemetry API for its own use; the SDK stays out)
    assert telemetry_from_environment({}) is None
    probe = (
        "import sys; from toolscript.gateway.telemetry import telemetry_from_environment as t;"
        "import toolscript.gateway.core; assert t({'PATH': '/bin'}) is None;"
        "print(any(name.startswith('opentelemetry.sdk') for name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_hook_asks_before_commands_that_approve() -> None:
    def decision(command: str) -> Any:
        return approval_decision({"tool_name": "Bash", "tool_input": {"command": command}})

    assert decision("toolscript approve 1")["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert decision("python -m toolscript approve --tool a.b") is not None
    assert decision("sqlite3 ~/.local/state/toolscript/projects/x/runs.sqlite") is not None
    assert decision("toolscript runs") is None
    assert approval_decision({"tool_name": "Read", "tool_input": {"file_path": "x"}}) is None


def test_a_resume_that_called_nothing_leaves_the_run_resumable(tmp_path: Path) -> None:
    """A resumed run whose script never called anything (its type check failed) does not use
    the resume up: the approved run waits again, and the next resume makes its call once."""
    server = FakeServer()

    async def scenario() -> None:
        runs = book(tmp_path)
        first, _ = await stopped_run(runs, server, {"k": 1})
        runs.runlog.approve_call(first.id)
        failed = await runs.register(resume=first.id)
        ended = await runs.end(failed.id, 1)  # the check failed: the script never ran
        assert ended.ended_answer()["resume_kept"] is True
        assert runs.runlog.run(first.id)["status"] == "awaiting_approval"
        second = await runs.register(resume=first.id)
        assert (await runs.call(second, "s__read", {"k": 1}, 7, server.make))[0] == 200
        assert (await runs.call(second, "s__delete", {"k": 1}, 7, server.make))[0] == 200
        await runs.end(second.id, 0)
        assert second.ended_answer()["resume_kept"] is False
        assert [tool for tool, _ in server.made] == ["s__read", "s__delete"]
        assert runs.runlog.run(first.id)["status"] == "resumed"
        # A resume that called something and then failed has used it (its answers replayed).
        third = await runs.register(script_hash="h2", script="code")
        await runs.call(third, "s__delete", {"k": 2}, 7, server.make)
        await runs.end(third.id, 120)
        runs.runlog.approve_call(third.id)
        spent = await runs.register(resume=third.id)
        assert (await runs.call(spent, "s__delete", {"k": 2}, 7, server.make))[0] == 200
        await runs.end(spent.id, 1)
        assert runs.runlog.run(third.id)["status"] == "resumed"

    anyio.run(scenario)


def test_a_resume_that_called_nothing_leaves_the_secret_answers_for_the_next_one(
    tmp_path: Path,
) -> None:
    """The answers of a stopped run that held a secret, kept whole in memory, are used up
    only by a resume that used the approval: after one whose script failed its check, the
    next resume replays them as they came, not as the log's ``***``."""
    server = FakeServer()
    sent = {"k": "topsecret-value"}

    async def scenario() -> None:
        runs = book(tmp_path)
        first, answer = await stopped_run(runs, server, sent)
        runs.runlog.approve_call(first.id)
        failed = await runs.register(resume=first.id)
        await runs.end(failed.id, 1)  # the check failed: the script never ran
        assert failed.ended_answer()["resume_kept"] is True
        second = await runs.register(resume=first.id)
        assert await runs.call(second, "s__read", sent, 7, server.make) == answer
        assert (await runs.call(second, "s__delete", {"k": 1}, 7, server.make))[0] == 200
        await runs.end(second.id, 0)
        assert first.id not in runs._secret_answers  # used: let go

    anyio.run(scenario)


@pytest.mark.parametrize("approval", ["tool", "policy"])
def test_a_resume_approved_for_the_tool_goes_on_past_the_approved_call(
    tmp_path: Path, approval: str
) -> None:
    """`approve --tool` (or a policy that allows the tool now) instead of `approve RUN_ID`:
    the resumed run makes the call it stopped at, then goes on calling what it likes (it
    was stopped as diverging from its log at its next call)."""
    server = FakeServer()
    decisions = {"s__delete": "ask"}

    async def scenario() -> None:
        runs = RunBook(
            RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda q: decisions.get(q, "allow")
        )
        first, _ = await stopped_run(runs, server, {"k": 1})
        if approval == "tool":
            runs.runlog.approve_tool("s__delete", "any")
        else:
            decisions.clear()
        resumed = await runs.register(resume=first.id)
        statuses = [
            (await runs.call(resumed, tool, arguments, 7, server.make))[0]
            for tool, arguments in [
                ("s__read", {"k": 1}),
                ("s__delete", {"k": 1}),
                ("s__read", {"k": 2}),
                ("s__delete", {"k": 3}),
            ]
        ]
        assert statuses == [200, 200, 200, 200]
        assert server.made[1:] == [
            ("s__delete", {"k": 1}),
            ("s__read", {"k": 2}),
            ("s__delete", {"k": 3}),
        ]

    anyio.run(scenario)
