"""A tool call's arguments are counted in JSON values before they are decoded, and the
calls under way hold at most so many (stop 75): 8 MB of ``[{},{},...]`` decoded to 186 MB
of the gateway, and one script's dozen slow calls of it held 2 GB as long as they ran."""

from __future__ import annotations

import types
from typing import Any

import anyio
import msgspec

from toolscript.gateway.connections import MAX_CALL_VALUES, BodyBudget
from toolscript.gateway.toolcall import call_tool_bytes
from toolscript.plumbing.jsonvalues import json_values


def test_values_are_counted_by_commas_and_openers_at_least() -> None:
    assert json_values(b"{}") == 1
    assert json_values(b'{"a": [1, 2, {}], "b": "x"}') >= 5
    assert json_values(b"[" + b"{}," * 999 + b"{}]") == 1 + 999 + 1000


def _gateway(per_run: int = 2 * MAX_CALL_VALUES, total: int = 4 * MAX_CALL_VALUES) -> Any:
    """No gateway past the count: a call let through fails at once (it has no servers)."""
    return types.SimpleNamespace(call_values=BodyBudget(per_run, total))


def _call(gateway: Any, body: bytes, run: str | None = "run") -> tuple[int, dict[str, Any]]:
    status, _, payload = anyio.run(call_tool_bytes, gateway, "fx__echo", body, run)
    return status, msgspec.json.decode(payload)


def test_one_call_of_too_many_values_is_refused_before_it_is_decoded() -> None:
    gateway = _gateway()
    status, answer = _call(gateway, b'{"x": [' + b"{}," * MAX_CALL_VALUES + b"{}]}")
    assert status == 413 and answer["error"] == "request_too_large"
    assert "hold more than 1,000,000 JSON values" in answer["message"]
    assert gateway.call_values.held == 0


def test_calls_under_way_hold_no_more_than_a_runs_share() -> None:
    gateway = _gateway(per_run=100, total=1000)
    assert gateway.call_values.take("run", 95)  # another call of the run, under way
    status, answer = _call(gateway, b'{"x": [' + b"1," * 9 + b"1]}")
    assert status == 413
    assert "more than 100 JSON values for one run" in answer["message"]
    assert gateway.call_values.runs == {"run": 95}
    status, _ = _call(gateway, b'{"x": [' + b"1," * 9 + b"1]}", run="other")
    assert status != 413  # another run's share is its own
    assert gateway.call_values.runs == {"run": 95}, "a finished call gives its values back"


def test_commas_in_a_string_argument_are_not_counted() -> None:
    """A CSV file of 1.5 million commas written by a tool is one string value, not 1.5
    million: it is let through (and fails at once here, for want of a server)."""
    gateway = _gateway()
    status, answer = _call(gateway, b'{"content": "' + b"a," * 1_500_000 + b'"}')
    assert status != 413 and answer.get("error") != "request_too_large"
    assert gateway.call_values.held == 0
