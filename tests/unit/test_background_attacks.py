"""Background runs and progress under attack: a cap on runs at once, and what a hostile
script or server can make a run's output, progress or the gateway do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from toolscript.gateway import background
from toolscript.gateway.core import Gateway
from toolscript.gateway.runbook import Run


def test_the_gateway_runs_a_bounded_number_of_background_runs_at_once(
    gateway: Gateway, client: TestClient[Any], tmp_path: Path
) -> None:
    """The agent's token starts a run with one request: a loop of them (a script the agent
    was talked into) must not start a runner and a Deno each, without end."""
    runs = gateway.background
    live = {
        f"live-{number}": background._Runner(_run(f"live-{number}"), tmp_path)
        for number in range(background.MAX_LIVE)
    }
    runs._runners.update(live)
    try:
        answer = client.post("/runs/start", json={"script": "1"})
    finally:
        for key in live:
            runs._runners.pop(key, None)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "usage_error"
    assert f"already runs {background.MAX_LIVE} background runs" in answer.json()["message"]
    assert "toolscript runs stop" in answer.json()["hint"]
    assert gateway.runs.live == 0  # refused before any run was registered


def _run(run_id: str) -> Run:
    return Run(
        id=run_id,
        token="",
        script_hash="",
        origin="background",
        interactive=False,
        max_calls=1,
        started=0.0,
    )


def test_a_servers_progress_numbers_no_float_holds_are_dropped_not_raised() -> None:
    """A server's notifications/progress is read off the stream every call of that server
    shares: a number that fails to convert (an integer of 400 digits) ended it, failing
    the calls under way ("went away during a call"); NaN and Infinity are no progress."""
    import mcp_types

    from toolscript.config import ServerConfig
    from toolscript.upstream.server import RAW_ID_PREFIX, UpstreamServer

    server = UpstreamServer(ServerConfig(name="evil", transport="stdio", command="x"))
    reported: list[tuple[float, float | None, str | None]] = []
    token = f"{RAW_ID_PREFIX}1"
    server._raw_progress[token] = lambda done, total, text: reported.append((done, total, text))

    def sent(progress: object, total: object = None) -> bool:
        params = {"progressToken": token, "progress": progress, "total": total, "message": "m"}
        notification = mcp_types.JSONRPCNotification(
            jsonrpc="2.0", method="notifications/progress", params=params
        )
        return server._take_raw_progress(notification)

    assert sent(10**400, 2)
    assert sent(float("nan"))
    assert sent(float("inf"))
    assert sent(True)
    assert reported == []
    assert sent(1, 10**400)  # a total no float holds: the report stands without it
    assert sent(0.5, 2)
    assert reported == [(1.0, None, "m"), (0.5, 2.0, "m")]


@pytest.mark.parametrize("run_id", ["../../health", "a/b", "x?stdout=9", "..", ""])
def test_runs_wait_and_stop_say_what_is_wrong_with_an_id_that_names_another_route(
    run_id: str,
) -> None:
    """A run id went into the route as typed: `runs wait a/b` answered "Not Found" and
    `runs wait ..` "unauthorized", neither saying the id is wrong."""
    from toolscript.errors import UsageError
    from toolscript.execution.background import stop_background, wait_background

    unreachable = "http://127.0.0.1:9/token"  # never asked: the id is refused first
    with pytest.raises(UsageError, match="is not a run id"):
        wait_background(unreachable, run_id)
    with pytest.raises(UsageError, match="is not a run id"):
        stop_background(unreachable, run_id)


def test_runs_wait_refuses_a_timeout_of_nan() -> None:
    """`--timeout nan` passed typer's min=0 and compared false with every clock: the wait
    asked the gateway again and again, without pause and without end."""
    from toolscript.errors import UsageError
    from toolscript.execution.background import wait_background

    with pytest.raises(UsageError, match="not nan"):
        wait_background("http://127.0.0.1:9/token", "20261126-010000-abcdef", float("nan"))


def _closed_port() -> int:
    import socket

    with socket.socket() as listener:  # bound, then closed: nothing listens there
        listener.bind(("127.0.0.1", 0))
        port: int = listener.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("row", "code", "said"),
    [
        ({"status": "ok", "exit": 0}, 0, ""),
        ({"status": "error", "exit": 1}, 1, ""),
        ({"status": "stopped", "exit": 143}, 143, "was stopped"),
        ({"status": "died", "exit": None}, 1, "died with its runner"),
    ],
)
def test_a_wait_whose_gateway_is_gone_ends_as_the_run_log_says(
    row: dict[str, Any], code: int, said: str
) -> None:
    import io

    from toolscript.execution.background import wait_background

    url = f"http://127.0.0.1:{_closed_port()}/token"
    notes = io.BytesIO()
    run_id = "20261126-010000-abcdef"
    ended = wait_background(url, run_id, notes=notes, logged=lambda: {"id": run_id, **row})
    assert ended == code
    assert "by the run log" in notes.getvalue().decode()
    assert said in notes.getvalue().decode()


@pytest.mark.parametrize("row", [None, {"status": "running", "exit": None}])
def test_a_wait_whose_gateway_is_gone_and_the_log_does_not_know_says_what_next(
    row: dict[str, Any] | None,
) -> None:
    from toolscript.errors import GatewayError
    from toolscript.execution.background import wait_background

    url = f"http://127.0.0.1:{_closed_port()}/token"
    run_id = "20261126-010000-abcdef"
    with pytest.raises(GatewayError) as gone:
        wait_background(url, run_id, logged=lambda: row)
    assert "does not say how it ended" in gone.value.message
    assert f"toolscript runs show {run_id}" in (gone.value.hint or "")
