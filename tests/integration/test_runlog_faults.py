"""The run log's faults made for real against a real gateway, records server and Deno: a
damaged or deleted ``runs.sqlite``, approvals and resumes from processes racing each other."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import GatewayProcess, clean_env, toolscript_cli, wait_until
from tests.integration.test_policy import (
    WRITE_THEN_DELETE,
    exec_script,
    journal_tools,
    records_config,
    run_id_of,
)
from toolscript.plumbing.paths import project_state_dir
from toolscript.store.runlog import runlog_path


@pytest.fixture
def project(tmp_path: Path) -> Any:
    journal = tmp_path / "journal.jsonl"
    gateway = GatewayProcess(records_config(journal), tmp_path)
    try:
        yield gateway, journal
    finally:
        gateway.stop()


def _runlog(directory: Path) -> Path:
    return runlog_path(project_state_dir(directory))


def _runs(path: Path) -> set[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        try:
            return set(db.execute("select id, status from runs").fetchall())
        except sqlite3.Error:
            return set()


def _runs_in_the_file_itself(path: Path, copy: Path) -> set[tuple[str, str]] | None:
    """The runs (id, status) the log's file holds without its WAL (a copy of the file alone)
    once they are all the log holds, else None (some are still only in the WAL)."""
    copy.write_bytes(path.read_bytes())
    alone = _runs(copy)
    return alone if alone and alone == _runs(path) else None


def test_a_damaged_run_log_is_set_aside_and_scripts_still_run(project: Any, tmp_path: Path) -> None:
    gateway, _ = project
    first = toolscript_cli("exec", "return 1", cwd=gateway.directory)
    assert first.returncode == 0, first.stderr
    path = _runlog(gateway.directory)
    # The file damaged once every run is in it (the gateway checkpoints a moment after a
    # write): cut before, the file's pages are still whole in the WAL, and nothing is damaged.
    wait_until(
        lambda: _runs_in_the_file_itself(path, tmp_path / "copy.sqlite"),
        lambda runs: runs is not None,
        30,
        "the gateway's checkpoint of every run",
    )
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2] or b"x" * 100)
    ran = toolscript_cli("exec", "return 42", cwd=gateway.directory)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "42"
    listed = toolscript_cli("runs", "--json", cwd=gateway.directory)
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    assert list(path.parent.glob("runs.sqlite.damaged-*")), "the damaged log is kept"
    assert "set aside" in gateway.log


def test_a_run_log_deleted_under_a_running_gateway_is_made_again(project: Any) -> None:
    gateway, _ = project
    assert toolscript_cli("exec", "return 1", cwd=gateway.directory).returncode == 0
    path = _runlog(gateway.directory)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    ran = toolscript_cli("exec", "return 7", cwd=gateway.directory)
    assert ran.returncode == 0, ran.stderr
    listed = toolscript_cli("runs", "--json", cwd=gateway.directory)
    assert listed.returncode == 0, listed.stderr
    assert '"ok"' in listed.stdout


def test_racing_approvals_and_resumes_run_the_approved_call_once(project: Any) -> None:
    gateway, journal = project
    stopped = exec_script(gateway.directory, WRITE_THEN_DELETE)
    assert stopped.returncode == 120, stopped.stderr
    run_id = run_id_of(stopped.stderr)

    def approve(_: int) -> subprocess.CompletedProcess[str]:
        return toolscript_cli("approve", run_id, cwd=gateway.directory)

    with ThreadPoolExecutor(4) as pool:
        approvals = list(pool.map(approve, range(4)))
    assert all(done.returncode == 0 for done in approvals), [a.stderr for a in approvals]
    assert sum("already approved" in done.stdout for done in approvals) == 3

    def resume(_: int) -> subprocess.CompletedProcess[str]:
        return toolscript_cli("exec", "--resume", run_id, cwd=gateway.directory)

    with ThreadPoolExecutor(2) as pool:
        resumes = list(pool.map(resume, range(2)))
    assert sorted(done.returncode for done in resumes)[0] == 0
    assert journal_tools(journal).count("delete_record") == 1
    refused = [done for done in resumes if done.returncode != 0]
    assert all("resumed already" in done.stderr for done in refused), [d.stderr for d in refused]


def test_a_run_whose_exec_was_killed_ends_as_died(project: Any) -> None:
    gateway, _ = project
    script = gateway.directory / "slow.ts"
    script.write_text(
        'import { tools } from "toolscript";\n'
        'await tools.records.writeRecord({ key: "k", text: "t" });\n'
        "console.log('started');\n"
        "await new Promise((done) => setTimeout(done, 120_000));\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", str(script)],
        cwd=gateway.directory,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "started"
        process.kill()
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    deadline = time.monotonic() + 30
    status = ""
    while time.monotonic() < deadline:
        listed = toolscript_cli("runs", "--json", cwd=gateway.directory)
        runs = json.loads(listed.stdout or "[]")
        status = runs[0]["status"] if runs else ""
        if status == "died":
            break
        time.sleep(0.5)
    assert status == "died"
