"""The background-run and progress routes through Litestar's test client (no runner is
started here: the integration suite's test_background_runs.py runs real ones)."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from toolscript.gateway.core import Gateway


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "give the script to run, a string"),
        ({"script": "1", "memory_mb": 8}, "memory_mb must be at least 16"),
        ({"script": "1", "timeout": -1}, "timeout must be 0 (none) or more seconds"),
        ({"script": "1", "max_calls": 0}, "max_calls must be a positive integer"),
        ({"script": "1", "max_output": 0}, "max_output must be a positive integer"),
    ],
)
def test_a_background_run_is_refused_limits_exec_would_refuse(
    client: TestClient[Any], body: dict[str, Any], message: str
) -> None:
    answer = client.post("/runs/start", json=body)
    assert answer.status_code == 400
    assert answer.json()["error"] == "usage_error"
    assert answer.json()["message"] == message


def test_only_a_background_run_has_output_to_wait_on(client: TestClient[Any]) -> None:
    answer = client.get("/runs/nope/output")
    assert answer.status_code == 404
    assert "no background run 'nope'" in answer.json()["message"]


def test_a_stop_of_no_run_under_way_says_where_runs_are(client: TestClient[Any]) -> None:
    """(Any run under way stops: a background one's sandbox, another's token.)"""
    answer = client.post("/runs/nope/stop")
    assert answer.status_code == 404
    assert "no run 'nope' under way" in answer.json()["message"]
    assert "toolscript runs show" in answer.json()["hint"]


def test_progress_needs_a_runs_own_url(client: TestClient[Any]) -> None:
    """The owner's (or agent's) URL has no run to report for: only a run's token (the guard
    names its run) does."""
    answer = client.post("/progress", json={"message": "halfway", "fraction": 0.5})
    assert answer.status_code == 400
    assert "with its own URL" in answer.json()["message"]


def test_a_runs_progress_is_read_from_a_number_on(
    client: TestClient[Any], gateway: Gateway
) -> None:
    run_id = client.post("/runs", json={}).json()["id"]
    gateway.runs.report_progress(gateway.runs.get(run_id), "fetched 40 of 120 issues", 0.33)
    found = client.get(f"/runs/{run_id}/progress", params={"after": 0}).json()
    assert [report["message"] for report in found["progress"]] == ["fetched 40 of 120 issues"]
    assert found["next"] == 1 and found["ended"] is False
    assert client.get(f"/runs/{run_id}/progress", params={"after": 1}).json()["progress"] == []
