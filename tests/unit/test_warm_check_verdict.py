"""The warm checker's verdict as exec reads it: whatever fails on the way to it (over HTTP or
on the MCP face's own gateway's loop) leaves the script to deno check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.errors import GatewayResponseError, GatewayUnreachableError, InternalError
from toolscript.execution.sandbox import Checker, _warm_check


def _failing(error: Exception) -> Checker:
    def checker(request: dict[str, str], wait: float) -> dict[str, str] | None:
        raise error

    return checker


@pytest.mark.parametrize(
    "error",
    [
        # what LocalGateway.check raises when check_script failed unexpectedly: the error
        # the HTTP route's 500 stands for (which over HTTP is "unavailable")
        GatewayResponseError.from_response(
            500, json.dumps(InternalError("boom").to_dict()).encode()
        ),
        GatewayUnreachableError("the face's gateway did not answer within 25 s"),
    ],
)
def test_a_local_check_that_fails_leaves_the_script_to_deno_check(
    tmp_path: Path, error: Exception
) -> None:
    script = tmp_path / "s.ts"
    verdict = _warm_check(
        "http://127.0.0.1:9/x", script, "1;\n", tmp_path / "m.ts", "h", _failing(error)
    )
    assert verdict == ("unavailable", "")


def test_a_local_check_s_verdict_is_used(tmp_path: Path) -> None:
    def checker(request: dict[str, str], wait: float) -> dict[str, str] | None:
        return {"status": "failed", "output": "TS2304"}

    verdict = _warm_check(
        "http://127.0.0.1:9/x", tmp_path / "s.ts", "x;\n", tmp_path / "m.ts", "h", checker
    )
    assert verdict == ("failed", "TS2304")
