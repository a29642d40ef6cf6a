"""The MCP face asks its own gateway (served in its process) for each run's registration, end
and module hash on that gateway's loop, not over HTTP (issue 45: the fixed cost of an
execute), and for its progress reports, with the promises of the HTTP routes: the run log
holds the run when execute answers, a run the gateway stopped is told from its end, the
reports come in order, a refusal is the gateway's own error, and a gateway gone is looked
for again. The script's tool calls and prompts stay HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from tests.helpers import python_bin
from tests.integration.test_policy import WRITE_THEN_DELETE, journal_tools, records_config
from toolscript.errors import GatewayResponseError
from toolscript.execution import locate, runhandle
from toolscript.execution.lifeline import Lifeline
from toolscript.gateway.inprocess import InProcessGateway
from toolscript.mcpface.backend import Backend
from toolscript.plumbing.paths import project_state_dir
from toolscript.store.runlog import RunLog, runlog_path

TIME_SCRIPT = """import { tools } from "toolscript";
const now = await tools.time.getCurrentTime({ timezone: "UTC" });
return now.timezone;
"""


@pytest.fixture
def requested(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The routes the face asked of a gateway over HTTP (each still asked)."""
    routes: list[str] = []
    real = locate.gateway_request

    def recording(url: str, route: str, timeout: float, **options: Any) -> bytes | None:
        routes.append(("POST " if options.get("json_body") is not None else "GET ") + route)
        return real(url, route, timeout, **options)

    monkeypatch.setattr(locate, "gateway_request", recording)
    monkeypatch.setattr(runhandle, "gateway_request", recording)
    return routes


def _project(tmp_path: Path, config: dict[str, Any]) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / ".toolscript.json").write_text(json.dumps(config))
    return directory


@pytest.fixture
def face(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """A face with its own gateway served in this process, in front of the time server and
    a records server whose writes ask for approval."""
    config = records_config(tmp_path / "journal.jsonl") | {"policy": {"ask": "writes"}}
    config["mcpServers"]["time"] = {"command": python_bin("mcp-server-time")}
    directory = _project(tmp_path, config)
    monkeypatch.chdir(directory)
    with Lifeline(catch_signals=False) as lifeline:
        backend = Backend(None, None, lifeline, cwd=directory, early=InProcessGateway(None, None))
        backend.spares = False  # a fresh Deno a run: nothing left running after the test
        try:
            yield backend
        finally:
            backend.close()


def _runs(directory: Path) -> list[dict[str, Any]]:
    return RunLog(runlog_path(project_state_dir(directory))).recent()


def test_a_run_is_registered_and_ended_on_the_gateway_s_loop_and_logged_by_its_answer(
    face: Backend, requested: list[str]
) -> None:
    answer = anyio.run(face.execute, TIME_SCRIPT, 60.0)
    assert answer.structured == {"result": "UTC"}, answer.text
    (run,) = _runs(face.cwd)  # written before execute answered, as the end route promises
    assert run["status"] == "ok" and run["origin"] == "mcp" and run["ended"]
    assert run["script_name"] == ["script.ts", "script.ts"]
    # (the module itself is read once over HTTP, then from the cache; progress is polled)
    asked = [route.split("?")[0] for route in requested]
    assert not [route for route in asked if route in ("GET /runtime/hash", "POST /runs")]
    assert not [route for route in asked if route.endswith(("/end", "/progress"))]


def test_a_new_script_s_check_is_asked_on_the_gateway_s_loop(
    face: Backend, requested: list[str]
) -> None:
    """The warm checker's verdict on a new script, failed or passed, comes from the loop:
    the type error as deno check prints it, nothing run; then a new script that checks runs."""
    wrong = 'import { tools } from "toolscript";\nconst n: number = "one";\nreturn n;\n'
    for attempt in range(2):  # the first may come before the checker started (deno checks)
        refused = anyio.run(face.execute, wrong + f"// {attempt}\n", 60.0)
        assert refused.is_error and "TS2322" in refused.text, refused.text
    assert face._local(face.gateway_url()) is not None
    answer = anyio.run(face.execute, TIME_SCRIPT + "// new\n", 60.0)
    assert answer.structured == {"result": "UTC"}, answer.text
    assert "POST /runtime/check" not in requested


def test_a_script_s_progress_reaches_the_face_from_its_gateway_s_loop(
    face: Backend, requested: list[str]
) -> None:
    """The long poll of a run's progress, on the loop too: the reports in order, the last
    one (sent just before the script ends) included."""
    code = """import { progress } from "toolscript";
await progress("one of three", 1 / 3);
await new Promise((resolve) => setTimeout(resolve, 300));
await progress("two of three", 2 / 3);
await progress("three of three", 1);
return "done";
"""
    seen: list[dict[str, Any]] = []

    async def report(found: dict[str, Any]) -> None:
        seen.append(found)

    answer = anyio.run(lambda: face.execute(code, 60.0, report=report))
    assert answer.structured == {"result": "done"}, answer.text
    assert [found["message"] for found in seen] == [
        "one of three",
        "two of three",
        "three of three",
    ]
    assert seen[0]["fraction"] == pytest.approx(1 / 3)
    assert not [route for route in requested if "/progress" in route]


def test_a_run_the_gateway_stopped_is_told_from_its_end_on_the_loop(
    face: Backend, requested: list[str], tmp_path: Path
) -> None:
    """No client to ask (no elicitation): the write that needs approval stops the run, and
    the face's answer says so, as it did from the end route's answer."""
    answer = anyio.run(face.execute, WRITE_THEN_DELETE, 60.0)
    assert answer.structured is not None and answer.structured.get("stopped"), answer.text
    assert "approval" in answer.text
    assert journal_tools(tmp_path / "journal.jsonl") == []
    (run,) = _runs(face.cwd)
    assert run["status"] == "awaiting_approval"
    assert not [route for route in requested if route.split("?")[0].endswith("/end")]


def test_a_refusal_on_the_loop_is_the_gateway_s_own_error(face: Backend) -> None:
    """A run ended twice, one unknown: the error each answer of the route stands for."""
    url = face.gateway_url()
    local = face._local(url)
    assert local is not None
    answer = local.register(
        "return 1",
        script_hash="",
        origin="mcp",
        script_name=("script.ts", "script.ts"),
        interactive=False,
    )
    assert answer is not None and set(answer) == {"id", "token", "resumed_from"}
    assert local.end(answer["id"], 0) == local.end(answer["id"], 0)  # (ends once)
    assert local.end("20260101-000000-000000", 0) is None  # unknown: as end_run's None
    with pytest.raises(GatewayResponseError) as refused:
        local._call(
            local._answered(lambda: local.gateway.register_run(resume="20260101-000000-000000"))
        )
    assert refused.value.status_code == 404
    assert "no run" in str(refused.value)


def test_a_gateway_gone_is_looked_for_again(face: Backend) -> None:
    """Its loop closed: nothing answers on it (None, as nothing listening over HTTP), and
    the next execute starts the face a gateway again, as before."""
    url = face.gateway_url()
    owned = face._owned
    assert isinstance(owned, InProcessGateway)
    local = owned.local
    assert local is not None
    owned.stop(20)
    assert local.module_hash() is None
    assert (
        local.register(
            "return 1",
            script_hash="",
            origin="mcp",
            script_name=("script.ts", "script.ts"),
            interactive=False,
        )
        is None
    )
    answer = anyio.run(face.execute, TIME_SCRIPT, 60.0)
    assert answer.structured == {"result": "UTC"}, answer.text
    assert face.gateway_url() != url


def test_a_request_waits_for_its_run_without_a_worker_thread(face: Backend) -> None:
    """execute and wait_run wait on the face's loop, woken by the run's thread: none of
    anyio's worker threads is held blocked on the run's end meanwhile (one more thread to
    wake per execute, and the pool's 40 were shared by every run waited for). A run yielded
    by one request is ended by a wait_run on another loop, its result given once."""
    slow = 'await new Promise((resolve) => setTimeout(resolve, 1500));\nreturn "slow";\n'
    borrowed: list[float] = []

    async def sampled(request: Any) -> Any:
        limiter = anyio.to_thread.current_default_thread_limiter()
        answers: list[Any] = []

        async def ask() -> None:
            answers.append(await request())

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            while not answers:
                borrowed.append(limiter.borrowed_tokens)
                await anyio.sleep(0.02)
        return answers[0]

    assert anyio.run(sampled, lambda: face.execute(TIME_SCRIPT, 60.0)).structured == {
        "result": "UTC"
    }
    yielded = anyio.run(sampled, lambda: face.execute(slow, 60.0, yield_after=0.3))
    assert yielded.structured is not None and yielded.structured.get("running"), yielded.text
    run_id = yielded.structured["run"]
    answer = anyio.run(sampled, lambda: face.wait_run(run_id, 30.0))
    assert answer.structured == {"result": "slow"}, answer.text
    assert borrowed and max(borrowed) == 0
