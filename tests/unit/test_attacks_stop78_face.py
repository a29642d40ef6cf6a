"""Stop 78: the MCP face refuses executes past the runs its gateway holds before it spends a
thread or a Deno on them (tests/integration/test_attacks_stop78.py floods a real face), and
get-types (the CLI's, the face's) refuses more names than one request carries."""

from __future__ import annotations

import pytest

from toolscript.codegen.naming import check_type_names
from toolscript.errors import UsageError
from toolscript.gateway.runbook import MAX_LIVE_RUNS
from toolscript.mcpface.backend import RUNS_AT_ONCE


def test_the_face_holds_as_many_executes_as_its_gateway_holds_runs() -> None:
    assert RUNS_AT_ONCE == MAX_LIVE_RUNS


def test_get_types_names_past_the_cap_are_refused_saying_so() -> None:
    """Before: 50,000 names went in one URL, which the gateway's HTTP server answered 400:
    exec and the face said 'another program listens there' of the project's own gateway."""
    check_type_names(["github__create_issue"] * 100)
    with pytest.raises(UsageError, match="at most 16,384 characters of names at once"):
        check_type_names([f"fx__t{i}" for i in range(50_000)])
