"""Stop 76: the JSON values of tool calls under way (``gateway.call_values``). Two runs'
slow calls of 1,000,000 values each filled the 4,000,000 of every caller together: every
other session's call, ``{}`` too, was refused (413), told its own run held too much."""

from __future__ import annotations

from toolscript.gateway.connections import (
    RUN_VALUES,
    SMALL_CALL_VALUES,
    TOTAL_VALUES,
    BodyBudget,
)
from toolscript.gateway.toolcall import too_many_values


def _full() -> BodyBudget:
    held = BodyBudget(RUN_VALUES, TOTAL_VALUES, small=SMALL_CALL_VALUES)
    for run in ("a", "b"):
        assert held.take(run, RUN_VALUES)
    return held


def test_a_small_call_is_not_refused_for_what_other_runs_hold() -> None:
    held = _full()
    assert held.take("c", 1) and held.take("c", SMALL_CALL_VALUES)
    held.give_back("c", 1)
    held.give_back("c", SMALL_CALL_VALUES)
    assert not held.take("c", SMALL_CALL_VALUES + 1)  # a large one waits for room
    assert not held.take("a", 1)  # its own run's bound holds for any call
    for run in ("a", "b"):
        held.give_back(run, RUN_VALUES)
    assert held.held == 0 and not held.runs


def test_the_refusal_names_the_bound_that_was_passed() -> None:
    held = _full()
    theirs = too_many_values("arguments", SMALL_CALL_VALUES + 1, held, "c").args[0]
    assert f"more than {TOTAL_VALUES:,} JSON values at once; try again later" in theirs
    own = too_many_values("arguments", 1, held, "a").args[0]
    assert f"more than {RUN_VALUES:,} JSON values for one run" in own


def test_a_budget_without_small_refuses_past_its_total() -> None:
    bodies = BodyBudget(10, 20)
    assert bodies.take("a", 10) and bodies.take("b", 10)
    assert not bodies.take("c", 1)
