"""Where features meet, tenth pass (the others: test_features_meet.py to _meet9.py): real
gateways with the fixture server, `faulty_server.py` (crashing on a timer) and local tool
files; the real Deno and real SQLite, the `mcp` SDK's client and the MCP Inspector's CLI
for the MCP face. `gateway stop --all` while the face's run (one project) and an exec run
(another) each wait in a call: each says the gateway stopped, the calls its run asked for
and the one still under way, and what to do; the reconnect backoff against a server
crashing soon after each start, then past the reset; a tool file raising, printing and
hanging past its timeout while its other tool is called at once (external and internal);
a saved script whose server a config edit renamed (run, run_script, search); a long run
under way while retention prunes the run log; the face's parallel calls to an OAuth server
whose access token expires and is refreshed meanwhile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    clean_env,
    face_call,
    face_parameters,
    fixture_server,
    fx_waits_for,
    gateway_cli,
    inspector_call,
    save_config,
    toolscript_cli,
    wait_until,
)

SERVERS_FAULTY = str(SERVERS / "faulty_server.py")
SLEEPER = (
    'import { tools } from "toolscript";\n'
    'console.log("CALLING");\n'
    "await tools.fx.sleep({ seconds: %s });\n"
    'return "slept";\n'
)


def test_gateway_stop_all_while_a_face_run_and_an_exec_run_wait_in_a_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gateway stop --all` x the MCP face's run (project A, through its running gateway) x
    an exec run (project B): each script waits in a call when every gateway is stopped.
    The face answered "the run was ended at its gateway (`toolscript runs stop`, or the
    gateway stopped)" and "Whether it made tool calls is not known", exec the same line,
    neither what to do. Each now says the gateway stopped, that its run asked for 1 call
    still under way (whether the server did it unknown), and how to run it again."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    home = tmp_path / "home"  # its own gateways alone: --all stops every one of the user's
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    env = {"TOOLSCRIPT_HOME": str(home)}
    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    gateways = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        gateways.append(GatewayProcess(config, tmp_path / name, "--no-warm-checker", env=env))
    face_gateway, exec_gateway = gateways
    results: dict[str, Any] = {}
    try:
        for gateway in gateways:
            gateway.wait_for_health(lambda h: h["servers"]["fx"]["state"] == "connected")
        exec_run = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "exec", "--no-check", SLEEPER % 61],
            cwd=exec_gateway.directory,
            env=clean_env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        face = face_parameters(face_gateway, **env)

        async def work() -> None:
            async with (
                stdio_client(face) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                async with anyio.create_task_group() as group:

                    async def run() -> None:
                        results["face"] = await session.call_tool("execute", {"code": SLEEPER % 60})

                    group.start_soon(run)
                    await anyio.to_thread.run_sync(
                        lambda: fx_waits_for(face_gateway, sleeping=60, timeout=60)
                    )
                    await anyio.to_thread.run_sync(
                        lambda: fx_waits_for(exec_gateway, sleeping=61, timeout=60)
                    )
                    results["stop"] = await anyio.to_thread.run_sync(
                        lambda: toolscript_cli("gateway", "stop", "--all", cwd=tmp_path, env=env)
                    )
                    with anyio.fail_after(60):
                        while "face" not in results:
                            await anyio.sleep(0.05)

        anyio.run(work)
        out, err = exec_run.communicate(timeout=60)
    finally:
        for gateway in gateways:
            gateway.stop()
    assert results["stop"].returncode == 0, results["stop"]
    face_answer = results["face"]
    text = face_answer.content[0].text
    assert face_answer.is_error, text
    assert "gateway stopped while the script ran" in text, text
    assert "1 tool call, 1 still under way" in text, text
    assert "Call execute again" in text, text
    assert "not known: check" not in text, text  # the count is known: the gateway said it
    assert exec_run.returncode == 143, err
    assert out == "CALLING\n", out
    assert "gateway stopped while the script ran" in err, err
    assert "1 tool call, 1 still under way" in err, err
    assert "Run it again" in err, err


def test_a_server_crashing_on_a_timer_waits_more_until_it_stayed_up(tmp_path: Path) -> None:
    """The reconnect backoff's reset x a server that crashes on a timer: twice 0.5 s after
    it connects (never up 30 s: each wait doubles, 1 then 2 s, as health's retry_wait
    shows), then 31 s after (past the reset: the next wait is 1 s, not 4). A server up 31 s
    at each start is so restarted at 1 s for as long as it crashes: kept, as a crash soon
    after a start still doubles the wait (a window counting crashes would keep a server that
    is up 97% of the time down for a minute after each crash, to save one restart a
    half-minute, about 0.3-0.8 s of CPU measured at load 9)."""
    log = tmp_path / "faulty.log"
    crashing = {
        "command": sys.executable,
        "args": [SERVERS_FAULTY, "--exit-after", "0.5,0.5,31", "--log", str(log)],
    }
    gateway = GatewayProcess({"mcpServers": {"crashy": crashing}}, tmp_path, "--no-warm-checker")
    waits: list[float] = []

    def seen(health: dict[str, Any]) -> bool:
        wait = health["servers"]["crashy"].get("retry_wait")
        if wait is not None and (not waits or waits[-1] != wait):
            waits.append(wait)
        return len(waits) >= 3

    try:
        gateway.wait_for_health(seen, timeout=120, what="three reconnect waits")
    finally:
        assert gateway.stop() == []
    assert waits[:3] == [1.0, 2.0, 1.0], waits
    assert log.read_text().split().count("listed") >= 3  # each start connected, then crashed


MISBEHAVING = '''"""Tools that misbehave, beside one that does not."""
import json
import sys
import time


def boom(text: str) -> str:
    """Raise."""
    raise ValueError(f"boom {text}")


def shout(lines: int) -> str:
    """Print to stdout (a line shaped as a worker's reply too), then answer."""
    for i in range(lines):
        print(f"noise {i}")
    print(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"forged": True}}))
    sys.stdout.flush()
    return "shouted"


def hang(seconds: float) -> str:
    """Sleep past the call timeout."""
    time.sleep(seconds)
    return "woke"


def quick(n: int) -> int:
    """Answer at once."""
    return n * 2
'''
HEADER = '# /// script\n# requires-python = ">=3.10"\n# dependencies = []\n# ///\n'
MISBEHAVED = """import { tools } from "toolscript";
const out: Record<string, unknown> = {};
for (const file of ["ext", "inner"] as const) {
  const t = tools[file];
  const calls = {
    boom: t.boom({ text: "x" }),
    shout: t.shout({ lines: 3 }),
    hang: t.hang({ seconds: 20 }),
    quick: Promise.all([1, 2, 3, 4, 5].map((n) => t.quick({ n }))),
  };
  for (const [name, call] of Object.entries(calls)) {
    try {
      out[`${file}.${name}`] = await call;
    } catch (error) {
      out[`${file}.${name}`] = `ERR ${(error as Error).message}`;
    }
  }
  try {  // at once after the hang's timeout
    out[`${file}.after`] = await t.quick({ n: 21 });
  } catch (error) {
    out[`${file}.after`] = `ERR ${(error as Error).message}`;
  }
}
return out;
"""


def test_a_tool_file_raising_printing_and_hanging_while_its_other_tool_is_called(
    tmp_path: Path,
) -> None:
    """localTools x a call timeout x calls in parallel x stdout: one file (external, a PEP
    723 worker; and the same internal, in the gateway) whose tools raise, print to stdout
    (a line shaped as a worker's reply among them) and hang past the 3 s timeout, while its
    fourth tool is called five times at once. Each answer is its own; the prints break
    nothing. The external file's call made at once after the hang's timeout failed: the
    worker killed for it (no other call in it) was handed that call as it died, "the
    worker of ext.py exited (code -9)"; it now goes to a new worker."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "ext.py").write_text(HEADER + MISBEHAVING)
    (tools / "inner.py").write_text(MISBEHAVING)
    config = {"localTools": {"dir": "tools", "timeout": 3}, "search": {"semantic": False}}
    gateway = GatewayProcess(config, tmp_path, "--no-warm-checker")
    try:
        gateway.wait_for_health(
            lambda h: all(h["servers"][name]["state"] == "connected" for name in ("ext", "inner"))
        )
        done = gateway_cli(gateway, "exec", "--no-check", MISBEHAVED)
    finally:
        gateway.stop()
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for file in ("ext", "inner"):
        assert out[f"{file}.boom"] == f"ERR {file}.boom: ValueError: boom x", out
        assert out[f"{file}.shout"] == "shouted", out
        assert out[f"{file}.hang"] == f"ERR {file}.hang timed out after 3 s", out
        assert out[f"{file}.quick"] == [2, 4, 6, 8, 10], out
        assert out[f"{file}.after"] == 42, out


ECHOER = """import { tools } from "toolscript";

/** The zebra echo: plain text back. */
export default async function zebraEcho(input: { text: string }) {
  return await tools.fx.plainText({ text: input.text });
}
"""


def test_a_saved_script_whose_server_a_config_edit_renamed(tmp_path: Path) -> None:
    """Saved scripts x a config edit renaming the server they call x `run`, the face's
    run_script (the `mcp` SDK's client) and search (the CLI's, and the face's search_tools
    through the MCP Inspector's CLI): `run` and run_script say
    the script does not check (the error naming the server's new name) and how to fix it
    (held); search still offered the broken script first, `scripts.zebraEcho`, which no
    script could call (it is out of the module). Renamed back, it is found and runs again."""
    before = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    after = {"mcpServers": {"fx2": fixture_server()}, "search": {"semantic": False}}
    gateway = GatewayProcess(before, tmp_path, "--no-warm-checker")
    try:
        (tmp_path / "zebra.ts").write_text(ECHOER)
        saved = gateway_cli(gateway, "save", "zebraEcho", "zebra.ts")
        assert saved.returncode == 0, saved.stderr
        ran = gateway_cli(gateway, "run", "zebraEcho", "--input", '{"text": "hi"}')
        assert (ran.returncode, ran.stdout) == (0, '"hi"\n'), ran.stderr

        def listed() -> dict[str, Any]:
            shown = gateway_cli(gateway, "list-scripts", "--json")
            return {s["name"]: s for s in json.loads(shown.stdout)["scripts"]}

        def found() -> list[str]:
            searched = gateway_cli(gateway, "search", "--json", "zebra echo plain text")
            return [hit["name"] for hit in json.loads(searched.stdout)["hits"]]

        assert found()[0] == "scripts.zebraEcho"
        save_config(gateway, after, in_place=False)
        wait_until(listed, lambda s: s["zebraEcho"]["status"] == "broken", 60, "broken")
        ran = gateway_cli(gateway, "run", "zebraEcho", "--input", '{"text": "hi"}')
        face_ran = face_call(gateway, "run_script", {"name": "zebraEcho", "input": {"text": "hi"}})
        through = {"TOOLSCRIPT_GATEWAY_URL": gateway.url}
        inspected_found = inspector_call(
            tmp_path,
            gateway.config_path,
            "search_tools",
            "query=zebra echo plain text",
            env=through,
        )
        hits = found()
        save_config(gateway, before, in_place=False)
        wait_until(listed, lambda s: s["zebraEcho"]["status"] == "ok", 60, "checking again")
        again = gateway_cli(gateway, "run", "zebraEcho", "--input", '{"text": "back"}')
        hits_again = found()
    finally:
        gateway.stop()
    assert ran.returncode == 1, ran
    assert "does not type-check against the current tools" in ran.stderr, ran.stderr
    assert "(members: fx2)" in ran.stderr and "save --force zebraEcho" in ran.stderr, ran.stderr
    text = face_ran.content[0].text
    assert face_ran.is_error and "(members: fx2)" in text, text
    assert "save_script with name zebraEcho" in text, text
    assert "scripts.zebraEcho" not in hits and hits[0] == "fx2__plain_text", hits
    inspected_hits = inspected_found["structuredContent"]["hits"]
    assert inspected_hits and "script" not in [hit["server"] for hit in inspected_hits], (
        inspected_hits
    )
    assert (again.returncode, again.stdout) == (0, '"back"\n'), again.stderr
    assert hits_again[0] == "scripts.zebraEcho", hits_again


def test_a_run_under_way_while_retention_prunes_the_log_is_kept_once_it_ends(
    tmp_path: Path,
) -> None:
    """`runs`/`runs show` x the run log's retention (`runs.keep` 3) x a run under way: five
    short execs end while a long one waits in a call. Under way, it is listed and shown
    (held); once it ended, `runs` no longer listed it and `runs show ID` said "no run ... in
    this project's log": retention dropped the oldest started, the run that had just ended.
    It is kept now (the oldest to end goes)."""
    config = {
        "mcpServers": {"fx": fixture_server()},
        "search": {"semantic": False},
        "runs": {"keep": 3},
    }
    gateway = GatewayProcess(config, tmp_path, "--no-warm-checker")
    try:
        gateway.wait_for_health(lambda h: h["servers"]["fx"]["state"] == "connected")
        long_run = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "exec", "--no-check", SLEEPER % 8],
            cwd=tmp_path,
            env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        fx_waits_for(gateway, sleeping=8, timeout=60)
        for number in range(5):
            short = gateway_cli(gateway, "exec", "--no-check", f"return {number}")
            assert short.returncode == 0, short.stderr
        listed = json.loads(gateway_cli(gateway, "runs", "--json").stdout)
        running = [run["id"] for run in listed if run["status"] == "running"]
        assert len(running) == 1, listed
        shown_running = gateway_cli(gateway, "runs", "show", running[0])
        out, err = long_run.communicate(timeout=60)
        after = json.loads(gateway_cli(gateway, "runs", "--json").stdout)
        shown = gateway_cli(gateway, "runs", "show", "--json", running[0])
    finally:
        gateway.stop()
    assert shown_running.returncode == 0, shown_running.stderr
    assert long_run.returncode == 0 and out.endswith('"slept"\n'), err
    assert running[0] in [run["id"] for run in after], after
    assert len(after) == 3, after
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["status"] == "ok", shown.stdout


PARALLEL_SIGNED_IN = """import { tools } from "toolscript";
const failed: string[] = [];
for (let round = 0; round < 5; round++) {
  const got = await Promise.allSettled(
    Array.from({ length: 12 }, (_, i) => tools.secure.echo({ text: `r${round}-${i}` })),
  );
  for (const one of got) if (one.status === "rejected") failed.push(String(one.reason));
  await new Promise((resolve) => setTimeout(resolve, 900));
}
return { failed };
"""


def face_call_with(gateway: GatewayProcess, env: dict[str, str], tool: str, code: str) -> Any:
    """``face_call`` with ``env`` added to the face's environment (its TOOLSCRIPT_HOME: where
    the sign-in and the gateway's state file are)."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    face = face_parameters(gateway, **env)

    async def work() -> Any:
        async with stdio_client(face) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(tool, {"code": code, "timeout": 100})

    return anyio.run(work)


def test_a_face_runs_parallel_calls_to_a_signed_in_server_as_its_token_expires(
    tmp_path: Path,
) -> None:
    """OAuth sign-in x its access token expiring (6 s) x the MCP face's execute x 12 calls at
    once, five rounds (past the early refresh): every call answers, the sign-in is
    refreshed, and the server stays connected (held). With a 2 s token at load 13 a round
    failed whole (a token refreshed 0.7 s early expired on its way, and that 401 dropped
    the session): a token living under 90 s has a third of its life as its margin."""
    from tests.integration.test_oauth import OAuthServer, project

    server = OAuthServer("http", "--token-lifetime", "6")
    try:
        directory, env = project(tmp_path, server)
        signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
        assert signed.returncode == 0, signed.stderr
        config = json.loads((directory / ".toolscript.json").read_text())
        gateway = GatewayProcess(config, directory, "--no-warm-checker", env=env)
        try:
            gateway.wait_for_health(lambda h: h["servers"]["secure"]["state"] == "connected")
            answer = face_call_with(gateway, env, "execute", PARALLEL_SIGNED_IN)
            state = gateway.health()["servers"]["secure"]["state"]
        finally:
            gateway.stop()
        stats = server.stats()
    finally:
        server.stop()
    assert not answer.is_error, answer.content[0].text
    assert answer.structured_content == {"result": {"failed": []}}, answer.structured_content
    assert stats["refreshes"] >= 1 and stats["calls"] >= 60, stats
    assert state == "connected"
