"""Background runs as the CLI sees them: ``exec --background`` starts one in the running
gateway and prints its id; ``runs wait`` streams what it prints and ends with its exit
code; ``runs stop`` stops it. The gateway runs them (``gateway/background.py``).

Stdlib only, like the rest of the exec path.
"""

from __future__ import annotations

import base64
import io
import json
import math
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from toolscript.errors import GatewayError, GatewayResponseError, NotFoundError, UsageError
from toolscript.execution.locate import gateway_request, running_gateway
from toolscript.execution.sandbox import Script

__all__ = [
    "EXIT_STILL_RUNNING",
    "background_gateway",
    "collect_background",
    "start_background",
    "stop_background",
    "wait_background",
]

EXIT_STILL_RUNNING = 3  # `runs wait --timeout` ran out while the run goes on
WAIT_PIECE = 20.0  # seconds one request for output waits at most
STOPPED_EXIT = 143  # a run stopped by `runs stop` (as SIGTERM's)
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")  # what new_run_id makes, and no more


def _checked(run_id: str) -> str:
    """``run_id`` as a path segment of the gateway's routes: one with a "/", "?" or ".."
    would name another route (answered "Not Found" or "unauthorized", saying nothing)."""
    if not _RUN_ID.fullmatch(run_id):
        raise UsageError(
            f"{run_id!r} is not a run id",
            hint="run ids look like 20261124-101500-3f9a1c: `toolscript runs` lists them",
        )
    return run_id


def background_gateway(
    config: str | None, cache: str | None, run_id: str | None = None, *, code: str = ""
) -> str:
    """The URL of the project's running gateway: a background run is the gateway's, so it
    needs one that outlives this command (exec's own ephemeral gateway would not).
    ``run_id``: the run a command would wait for or stop, which none can be running.
    ``code``: the script to start, whose servers alone are waited for of a gateway still
    starting (``running_gateway``); "" waits for every server."""
    if run_id is not None:
        from toolscript.store.runlog import require_run_id

        require_run_id(run_id)
    found = running_gateway(config, cache, code=code)
    if found is None and run_id is not None:
        raise UsageError(
            f"no gateway runs for this project, so run {run_id} is not under way",
            hint=f"`toolscript runs show {run_id}` shows how it ended",
        )
    if found is None:
        raise UsageError(
            "a background run needs a running gateway (it runs the script, so the run "
            "outlives this command)",
            hint="start one first: `toolscript gateway start &`",
        )
    return found[0]


def start_background(
    url: str,
    script: Script,
    *,
    check: bool,
    limits: Mapping[str, float | None],
    max_calls: int | None,
    resume: str | None = None,
) -> str:
    """Start ``script`` as a background run of the gateway at ``url``; its id. ``limits``
    (timeout, memory_mb, max_output) and ``max_calls`` left None are the gateway's to
    choose: the resumed run's, else exec's defaults."""
    from toolscript.execution.runhandle import script_hash

    request: dict[str, Any] = {
        "script": script.code,
        "display_name": script.display_name,
        "file_name": script.file_name,
        "check": check,
        "max_calls": max_calls,
        "resume": resume,
        "script_hash": script_hash(script.code),
    }
    request |= {name: value for name, value in limits.items() if value is not None}
    body = gateway_request(
        url, "/runs/start", 30, json_body=json.dumps(request).encode(), answers=True
    )
    if body is None:
        raise GatewayError("the gateway stopped answering before the run started")
    return str(json.loads(body)["run"])


def parse_offsets(text: str | None) -> tuple[int, int]:
    """``--from STDOUT:STDERR`` (bytes of each already shown) as two offsets."""
    if not text:
        return 0, 0
    out, colon, err = text.partition(":")
    if not (colon and out.isdigit() and err.isdigit()):
        raise UsageError(
            f"--from takes STDOUT:STDERR byte offsets, not {text!r}", hint="e.g. --from 1024:80"
        )
    return int(out), int(err)


def wait_background(
    url: str,
    run_id: str,
    timeout: float | None = None,
    *,
    start: tuple[int, int] = (0, 0),
    stdout: IO[bytes] | None = None,
    stderr: IO[bytes] | None = None,
    outcome: dict[str, Any] | None = None,
    notes: IO[bytes] | None = None,
    logged: Callable[[], dict[str, Any] | None] | None = None,
) -> int:
    """Stream what run ``run_id`` prints (from ``start`` on) until it ends; its exit code.
    With ``timeout`` (seconds), a run still going then leaves with ``EXIT_STILL_RUNNING``
    and says how to go on waiting. ``outcome`` gets how it ended (``ended_answer``), or
    ``{"from": "STDOUT:STDERR"}`` for a run still going. ``notes``: where toolscript's own
    lines go (how to go on waiting, why a run stopped); the run's stderr when not given.
    ``logged``: the run as the project's run log has it, read when its gateway stopped or
    restarted (a background run ends with its gateway): how it ended, if the log knows."""
    _checked(run_id)
    if timeout is not None and not math.isfinite(timeout):
        if math.isnan(timeout):  # it compared false with every clock: a busy loop, no end
            raise UsageError("--timeout takes a number of seconds, not nan", hint="e.g. 100")
        timeout = None  # inf: no timeout
    out = stdout if stdout is not None else sys.stdout.buffer
    err = stderr if stderr is not None else sys.stderr.buffer
    said = notes if notes is not None else err
    shown_out = _shown(out)
    shown_err = _shown(err)
    offsets = list(start)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = WAIT_PIECE if deadline is None else max(0.0, deadline - time.monotonic())
        wait = min(WAIT_PIECE, left)
        route = f"/runs/{run_id}/output?stdout={offsets[0]}&stderr={offsets[1]}&wait={wait:g}"
        unknown = False  # the gateway answers, and has no run by that id
        try:
            body = gateway_request(url, route, wait + 30, answers=True)
        except GatewayResponseError as exc:  # a gateway that restarted holds no such run
            if exc.status_code != 404:
                raise
            body, unknown = None, True
        if body is None:
            return _gone(run_id, logged, outcome, said, unknown=unknown)
        answer = json.loads(body)
        for data, target in ((answer["stdout"], shown_out), (answer["stderr"], shown_err)):
            if data:
                target.write(base64.b64decode(data))
                target.flush()
        offsets = [int(answer["offsets"][0]), int(answer["offsets"][1])]
        if answer.get("ended"):
            if outcome is not None:
                outcome.update(answer.get("result") or {})
            return _ended(answer.get("result") or {}, said)
        if deadline is not None and time.monotonic() >= deadline:
            if outcome is not None:
                outcome["from"] = f"{offsets[0]}:{offsets[1]}"
            said.write(
                f"toolscript: run {run_id} is still running; go on waiting with "
                f"`toolscript runs wait {run_id} --from {offsets[0]}:{offsets[1]}`\n".encode()
            )
            said.flush()
            return EXIT_STILL_RUNNING


def collect_background(
    url: str,
    run_id: str,
    timeout: float | None = None,
    *,
    start: tuple[int, int] = (0, 0),
    logged: Callable[[], dict[str, Any] | None] | None = None,
) -> tuple[int, dict[str, Any]]:
    """``wait_background`` for ``runs wait --json``: its exit code, and one object with how
    the run ended (or ``from``, where a wait on a run still going would go on) and what it
    printed meanwhile (toolscript's own lines, how to go on waiting or why it stopped, go
    to this process's stderr: the object's ``stderr`` is the run's alone)."""
    out, err = io.BytesIO(), io.BytesIO()
    outcome: dict[str, Any] = {}
    code = wait_background(
        url,
        run_id,
        timeout,
        start=start,
        stdout=out,
        stderr=err,
        outcome=outcome,
        notes=sys.stderr.buffer,
        logged=logged,
    )
    still = outcome.pop("from", None)
    answer = {
        "run": run_id,
        "ended": still is None,
        "status": outcome.get("status", "running" if still else None),
        "exit": code,
        "stdout": out.getvalue().decode("utf-8", "replace"),
        "stderr": err.getvalue().decode("utf-8", "replace"),
    }
    if still:
        answer["from"] = still
    return code, answer


def _shown(target: IO[bytes]) -> Any:
    """A terminal sees a script's control characters as escapes, as exec shows them."""
    from toolscript.execution.sandbox import _for_people

    return _for_people(target)


def _gone(
    run_id: str,
    logged: Callable[[], dict[str, Any] | None] | None,
    outcome: dict[str, Any] | None,
    said: IO[bytes],
    *,
    unknown: bool = False,
) -> int:
    """How run ``run_id`` ended by the run log, its gateway gone or restarted under it;
    ``unknown``: a gateway answers that it has no such run."""
    row = logged() if logged is not None else None
    if row is None and logged is not None and unknown:  # a mistyped id: no gateway went
        raise NotFoundError(
            f"no run {run_id!r}: the gateway has none under way by that id, nor the project's log",
            hint="`toolscript runs` lists the runs",
        )
    if row is None or row.get("status") in (None, "running", "prompting"):
        raise GatewayError(
            f"the gateway stopped or restarted before run {run_id} ended (a background run "
            "ends with its gateway), and the run log does not say how it ended yet",
            hint=f"`toolscript runs show {run_id}` once a gateway runs again (`toolscript "
            "gateway start &`): it settles the runs a gone gateway left",
        )
    said.write(
        f"toolscript: run {run_id}'s gateway stopped or restarted; by the run log:\n".encode()
    )
    result = {"id": run_id, "status": row["status"], "exit": row.get("exit")}
    if outcome is not None:
        outcome.update(result)
    if row["status"] == "stopped":  # by its gateway's stop, or a `runs stop`
        said.write(f"toolscript: run {run_id} was stopped\n".encode())
        return STOPPED_EXIT
    return _ended(result, said)


def _ended(result: dict[str, Any], err: IO[bytes]) -> int:
    from toolscript.execution.runhandle import kept_resume_note, stop_message

    stopped = stop_message(result)
    if stopped is not None:
        from toolscript.store.outputs import visible_controls

        err.write(visible_controls(stopped[0]).encode())
        err.flush()
        return stopped[1]
    if result.get("status") == "stopped":
        err.write(
            f"toolscript: run {result.get('id')} was stopped (`toolscript runs stop`)\n".encode()
        )
        err.flush()
        return STOPPED_EXIT
    if result.get("status") == "died":
        err.write(f"toolscript: run {result.get('id')} died with its runner\n".encode())
        return 1
    kept = kept_resume_note(result)
    if kept is not None:
        err.write(kept.encode())
    code = result.get("exit")
    return int(code) if isinstance(code, int) else 1


def stop_background(url: str, run_id: str) -> dict[str, Any]:
    """Stop run ``run_id``; how it ended."""
    body = gateway_request(url, f"/runs/{_checked(run_id)}/stop", 30, json_body=b"{}", answers=True)
    if body is None:
        raise GatewayError("the gateway stopped answering")
    return dict(json.loads(body))
