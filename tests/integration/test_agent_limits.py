"""The agent's URL (what an AI agent's shell gets) attacks the gateway's memory and disk:
each route it reaches grows nothing without bound, and an honest exec still runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import GatewayProcess, fixture_server, running_gateway, toolscript_cli
from toolscript.gateway.core import MAX_SAVED_SCRIPTS
from toolscript.gateway.guard import agent_url
from toolscript.gateway.runbook import MAX_LIVE_RUNS
from toolscript.plumbing.paths import project_state_dir
from toolscript.plumbing.processes import identity_alive
from toolscript.store.runlog import RunLog, runlog_path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"mcpServers": {"fx": fixture_server()}}
    with running_gateway(config, tmp_path_factory.mktemp("agent-limits")) as started:
        yield started


@pytest.fixture
def agent(gateway: GatewayProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=agent_url(gateway.url) + "/", timeout=30) as client:
        yield client


def test_runs_registered_and_never_run_stop_at_the_cap_and_an_exec_says_what_to_do(
    gateway: GatewayProcess, agent: httpx.Client, toolscript_home: Path
) -> None:
    """Before: every POST /runs of the agent's URL kept a run (its script too: 1 MB each
    took the gateway past 2 GB in 2000 requests) that no one ever ended: a pid of a process
    that never exits (1) keeps it from ending as "died"."""
    registered: list[str] = []
    try:
        for _ in range(MAX_LIVE_RUNS):
            answer = agent.post("runs", json={"script": "x" * 1000, "pid": 1})
            assert answer.status_code == 200, answer.text
            registered.append(answer.json()["id"])
        refused = agent.post("runs", json={"script": "one more", "pid": 1})
        assert refused.status_code == 429, refused.text
        body = refused.json()
        assert body["error"] == "too_many_runs" and "toolscript runs stop" in body["hint"]

        env = {  # the agent's shell: its exec registers with the agent's URL too
            "TOOLSCRIPT_HOME": str(toolscript_home),
            "TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url),
        }
        code = 'import { tools } from "toolscript";\nconsole.log(await tools.fx.plainText({ text: "honest" }));\n'

        blocked = toolscript_cli("exec", code, cwd=gateway.directory, env=env, timeout=240)
        assert blocked.returncode != 0
        assert f"{MAX_LIVE_RUNS} runs under way" in blocked.stderr

        ended = agent.post(f"runs/{registered.pop()}/end", json={"exit": 0})
        assert ended.status_code == 200, ended.text
        honest = toolscript_cli("exec", code, cwd=gateway.directory, env=env, timeout=240)
        assert honest.returncode == 0, honest.stderr
        assert "honest" in honest.stdout
    finally:
        for run_id in registered:
            agent.post(f"runs/{run_id}/end", json={"exit": 0})


def test_runs_stop_ends_a_run_registered_and_never_run(
    gateway: GatewayProcess, agent: httpx.Client, toolscript_home: Path
) -> None:
    """The hint of a full gateway said to POST /runs/RUN_ID/end: `runs stop` took only
    background runs. It ends any run now; the agent's URL stops only the agent's own."""
    registered = agent.post("runs", json={"script": "x", "pid": 1})
    assert registered.status_code == 200, registered.text
    run_id, token = registered.json()["id"], registered.json()["token"]
    env = {"TOOLSCRIPT_HOME": str(toolscript_home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    stopped = toolscript_cli("runs", "stop", run_id, "--json", cwd=gateway.directory, env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {"id": run_id, "status": "stopped"}
    run_url = gateway.url.rsplit("/", 1)[0] + f"/{token}"
    refused = httpx.post(f"{run_url}/tools/fx/plain_text", json={"text": "late"}, timeout=30)
    assert refused.status_code == 401  # its token reaches nothing now
    again = toolscript_cli("runs", "stop", run_id, cwd=gateway.directory, env=env)
    assert again.returncode == 0 and "stopped" in again.stdout  # stopping twice is no error

    owners = httpx.post(f"{gateway.url}/runs", json={"script": "y", "pid": 1}, timeout=30)
    assert owners.status_code == 200, owners.text
    owner_run = owners.json()["id"]
    # the gateway's process, by which exec's progress watcher tells it gone from busy
    assert identity_alive(owners.json()["gateway"])
    try:
        assert agent.post(f"runs/{owner_run}/stop").status_code == 403
    finally:
        httpx.post(f"{gateway.url}/runs/{owner_run}/stop", timeout=30)


def test_a_pid_no_process_can_have_is_a_usage_error(agent: httpx.Client) -> None:
    """Before: ``"pid": -1`` reached psutil, which raised: an internal error (500)."""
    answer = agent.post("runs", json={"pid": -1})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "usage_error"
    assert "pid" in answer.json()["message"]


def test_a_run_calling_in_a_loop_with_large_arguments_keeps_its_log_small(
    gateway: GatewayProcess, agent: httpx.Client
) -> None:
    """Before: every call's arguments went whole into memory (--trace) and the run log,
    for as many calls as the run's max_calls, which the agent's URL sets (500 calls of
    1 MB: a 478 MB run log, a 700 MB gateway)."""
    answer = agent.post("runs", json={"max_calls": 10**9, "pid": 1})
    assert answer.status_code == 200, answer.text
    run = answer.json()
    base = gateway.url.rstrip("/").rsplit("/", 1)[0]
    text = "y" * 200_000
    try:
        with httpx.Client(base_url=f"{base}/{run['token']}/", timeout=60) as script:
            for _ in range(20):
                called = script.post("tools/fx__plain_text", json={"text": text})
                assert called.status_code == 200, called.text[:300]
    finally:
        ended = agent.post(f"runs/{run['id']}/end", json={"exit": 0})
    assert ended.status_code == 200, ended.text
    trace = ended.json()["calls"]
    assert len(trace) == 20 and all(len(call["arguments"]) < 4000 for call in trace)
    shown = RunLog(runlog_path(project_state_dir(gateway.directory))).run(run["id"])
    assert shown is not None and shown["calls"] == 20
    logged = [call["arguments"]["text"] for call in shown["calls_made"]]
    assert len(logged) == 20 and all(value.startswith("yyy") for value in logged)
    assert all(len(value) < 3000 for value in logged)
    assert all(call["arguments_bytes"] > 200_000 for call in shown["calls_made"])


def test_a_background_run_asking_for_endless_output_is_refused_with_the_bound(
    agent: httpx.Client,
) -> None:
    """Before: POST /runs/start took any max_output: a script printing in a loop with no
    timeout (`"timeout": 0`) wrote its output file in the gateway's state at 90 MB a
    second, 16 such runs at once, until the disk was full."""
    code = 'const s = "z".repeat(1 << 20); for (;;) console.log(s);'
    start = {"script": code, "timeout": 0, "check": False, "max_output": 10**12}
    refused = agent.post("runs/start", json=start)
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["error"] == "usage_error" and "at most 256 MB" in body["message"]


def test_saved_scripts_past_the_size_and_count_the_gateway_keeps_are_refused(
    gateway: GatewayProcess, agent: httpx.Client
) -> None:
    """Before: POST /scripts wrote a 9 MB script (which the gateway then skips when it
    loads the folder: over 512 KB) and any number of new ones, each save checking all of
    them again and the module growing with each."""
    big = "export default async () => 1;\n//" + "x" * 600_000 + "\n"
    refused = agent.post("scripts", json={"name": "big", "code": big})
    assert refused.status_code == 400, refused.text
    assert "over 512 KB" in refused.json()["message"]
    folder = gateway.directory / "toolscripts"
    assert not (folder / "big.ts").exists()

    folder.mkdir(exist_ok=True)
    for number in range(MAX_SAVED_SCRIPTS):
        (folder / f"kept{number}.ts").write_text(f"export default async () => {number};\n")
    try:
        crowded = agent.post("scripts", json={"name": "extra", "code": "export default 1;\n"})
        assert crowded.status_code == 400, crowded.text
        assert f"as many as the gateway saves ({MAX_SAVED_SCRIPTS})" in crowded.json()["message"]
        assert not (folder / "extra.ts").exists()
        replaced = agent.post(
            "scripts",
            json={"name": "kept0", "code": "export default async () => 100;\n", "force": True},
        )
        assert replaced.status_code == 201, replaced.text  # replacing one stays open
    finally:
        for number in range(MAX_SAVED_SCRIPTS):
            (folder / f"kept{number}.ts").unlink(missing_ok=True)
