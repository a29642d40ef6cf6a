"""A server's notifications past ``NOTICE_RATE`` a second are dropped as its stdio is read
(upstream/stdio.py), before the SDK checks them; the budget starts again each second."""

from __future__ import annotations

from toolscript.upstream.limits import NOTICE_RATE
from toolscript.upstream.stdio import _is_notification, _NoticeBudget


def test_notifications_past_the_rate_of_a_second_are_dropped_and_counted() -> None:
    budget = _NoticeBudget()
    admitted = [budget.admit(10.0 + i / 10_000) for i in range(NOTICE_RATE + 50)]
    assert admitted == [True] * NOTICE_RATE + [False] * 50
    assert budget.dropped == 50
    assert budget.admit(11.0)  # a new second
    assert budget.dropped == 50


def test_only_notifications_count_never_answers_or_requests() -> None:
    assert _is_notification({"jsonrpc": "2.0", "method": "notifications/progress"})
    assert not _is_notification({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert not _is_notification({"jsonrpc": "2.0", "id": 2, "method": "elicitation/create"})
    assert not _is_notification(["not", "a", "message"])
