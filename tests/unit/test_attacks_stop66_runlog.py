"""Stop 66's attack on the run log's retention: an agent running many trivial scripts, one
after another, evicted the person's history, the run awaiting their approval included (the
log kept the newest 1,000 runs and 50 MB, of any status)."""

from __future__ import annotations

from pathlib import Path

from toolscript.store.runlog import RunLog


def _run(number: int, status: str = "ok", by_agent: int = 1, big: int = 0) -> dict[str, object]:
    return {
        "id": f"r{number:05}",
        "script_hash": f"h{number}",
        "origin": "cli",
        "started": float(number),
        "ended": number + 0.5,
        "status": status,
        "calls": 0,
        "script": "x" * big,
        "by_agent": by_agent,
    }


def test_a_flood_of_trivial_runs_never_evicts_a_run_awaiting_approval(tmp_path: Path) -> None:
    runlog = RunLog(tmp_path / "runs.sqlite", keep=5)
    runlog.write(runs=[_run(0, "awaiting_approval", by_agent=0)])
    for number in range(1, 40):  # the agent's flood: many more than ``keep``
        runlog.write(runs=[_run(number)])
    assert runlog.run("r00000")["status"] == "awaiting_approval"
    runlog.approve_call("r00000")  # still approvable
    assert runlog.claim_resume("r00000")
    kept = [run["id"] for run in runlog.recent(limit=100)]
    assert len(kept) == 6 and "r00039" in kept  # the others still kept to ``keep``


def test_a_flood_of_large_runs_evicts_the_others_first(tmp_path: Path) -> None:
    runlog = RunLog(tmp_path / "runs.sqlite", keep=10_000, max_bytes=300_000)
    runlog.write(runs=[_run(0, "awaiting_approval", by_agent=0)])
    for number in range(1, 60):
        runlog.write(runs=[_run(number, big=20_000)])
    assert runlog.run("r00000")["status"] == "awaiting_approval"
    assert runlog.run("r00001") is None  # the flood's own oldest went


def test_runs_awaiting_approval_are_bounded_apart(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("toolscript.store.runlog.AWAITING_KEEP", 3)
    runlog = RunLog(tmp_path / "runs.sqlite", keep=5)
    runlog.write(runs=[_run(0, "awaiting_approval", by_agent=0)])
    for number in range(1, 10):  # the agent's URL's runs stopping for approval
        runlog.write(runs=[_run(number, "awaiting_approval")])
    waiting = {run["id"] for run in runlog.recent(limit=100)}
    assert waiting == {"r00000", "r00007", "r00008", "r00009"}  # the owner's kept apart
