"""Stop 78: the MCP face refuses executes past the runs its gateway holds before it spends a
thread or a Deno on them (tests/integration/test_attacks_stop78.py floods a real face)."""

from __future__ import annotations

from toolscript.gateway.runbook import MAX_LIVE_RUNS
from toolscript.mcpface.backend import RUNS_AT_ONCE


def test_the_face_holds_as_many_executes_as_its_gateway_holds_runs() -> None:
    assert RUNS_AT_ONCE == MAX_LIVE_RUNS
