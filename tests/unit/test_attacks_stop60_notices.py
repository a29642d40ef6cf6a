"""A server's notifications past ``NOTICE_RATE`` a second are dropped as its stdio is read
(upstream/stdio.py), before the SDK checks them; the budget starts again each second."""

from __future__ import annotations

from toolscript.upstream.limits import NOTICE_RATE, RateWindow
from toolscript.upstream.stdio import _is_notification


def test_notifications_past_the_rate_of_a_second_are_dropped_and_counted() -> None:
    budget = RateWindow()
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


def test_a_listing_change_said_amid_a_flood_still_comes_through_once_a_second() -> None:
    # a server sending progress past the rate, then saying its tools changed: dropped, the
    # change was never listed (no later list_changed came to trigger it)
    budget = RateWindow()
    for i in range(NOTICE_RATE + 10):
        budget.admit(20.0 + i / 10_000, "notifications/progress")
    assert budget.admit(20.5, "notifications/tools/list_changed")
    assert not budget.admit(20.6, "notifications/tools/list_changed")  # one a second
    assert budget.admit(20.6, "notifications/prompts/list_changed")  # each kind its own
    assert not budget.admit(20.7, "notifications/progress")
    assert not budget.admit(20.7, ["notifications/tools/list_changed"])  # a method no string
    assert budget.admit(21.5, "notifications/progress")  # a new second
