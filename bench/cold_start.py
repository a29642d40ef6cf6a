"""Cold starts against what the servers themselves need, measured side by side in one run.

Two real servers (mcp-server-time, server-everything), as the issue measured them:
(a) `toolscript gateway start` until its URL is printed, against both servers started
    concurrently by the `mcp` SDK's client up to the end of `initialize` (the slowest one's
    start; the client's own imports are not counted). Target: <= 0.5 s more.
(b) `toolscript exec` of a one-call script with no gateway running, against a fresh Python
    process whose SDK client starts the same servers and makes the same call. Target:
    <= 0.5 s more.
(c) `toolscript mcp` (stdio), first `execute` of the same script with no gateway running,
    from spawning the face to the result, against (b)'s exec. Target: <= 1 s more. The
    client that spawns it is a fresh Python process too: its own start (the `mcp` SDK's
    imports, half a second) is not the face's, and is left out; the whole process's time
    is printed beside it ("mcp, client included").

Each case runs --runs times, interleaved (one round runs every case once, in a rotated
order), after one unmeasured warm-up (Deno's check cache, the module file). Reported: min,
median and max of each case, and each target's added time as the median of the per-round
differences (a case against its baseline of the same round) and min against min. The load
average is printed: on a shared machine read the differences, not the absolute times.

    python bench/cold_start.py [--runs 11]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SERVERS = {
    "time": {"command": str(BIN / "mcp-server-time"), "args": []},
    "everything": {
        "command": str(
            ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-server-everything"
        ),
        "args": [],
    },
}
SCRIPT = (
    'import { tools } from "toolscript";\n'
    'return (await tools.time.getCurrentTime({ timezone: "UTC" })).timezone;\n'
)

# A fresh Python process: the SDK client starts every server concurrently, prints how long
# the slowest took from spawn to the end of `initialize`, then (with "call") makes the call.
SDK_CLIENT = r"""
import json, sys, time
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

servers, call = json.loads(sys.argv[1]), sys.argv[2] == "call"

async def one(name, entry, started, ready, done):
    params = StdioServerParameters(command=entry["command"], args=entry["args"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready[name] = time.perf_counter() - started
        if call and name == "time":
            await session.call_tool("get_current_time", {"timezone": "UTC"})
        await done.wait()

async def main():
    started, ready = time.perf_counter(), {}
    done = anyio.Event()
    async with anyio.create_task_group() as tasks:
        for name, entry in servers.items():
            tasks.start_soon(one, name, entry, started, ready, done)
        while len(ready) < len(servers):
            await anyio.sleep(0.005)
        print(json.dumps(ready), flush=True)
        done.set()

anyio.run(main)
"""

FACE_CLIENT = r"""
import json, sys, time
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=["mcp"], cwd=sys.argv[2])
    spawned = time.perf_counter()  # the client's imports are done: the face's time starts
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("execute", {"code": sys.argv[3]})
        assert not result.is_error, result
        print(json.dumps({"face": time.perf_counter() - spawned}), flush=True)

anyio.run(main)
"""


def wall(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"failed: {command}\n{result.stdout}\n{result.stderr}")
    return elapsed, result.stdout


def gateway_url_time(project: Path, env: dict[str, str]) -> float:
    """Seconds from spawning `toolscript gateway start` to its URL on stdout."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(BIN / "toolscript"), "gateway", "start", "--port", "0"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    elapsed = time.perf_counter() - started
    process.terminate()
    process.wait(60)
    if not line.startswith("http"):
        raise SystemExit("the gateway did not print its URL")
    return elapsed


def face_times(command: list[str], env: dict[str, str], project: Path) -> tuple[float, float]:
    """Seconds from spawning the face to its first result, and the client's whole process."""
    whole, out = wall(command, env, project)
    return json.loads(out.splitlines()[-1])["face"], whole


def servers_ready_time(env: dict[str, str], project: Path) -> float:
    """Seconds from spawn to the slowest server's `initialize` answer (SDK client)."""
    _, out = wall([sys.executable, "-c", SDK_CLIENT, json.dumps(SERVERS), "start"], env, project)
    return max(json.loads(out.splitlines()[-1]).values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    import compileall

    compileall.compile_dir(str(ROOT / "toolscript"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="toolscript-cold-"))
    project = work / "project"
    project.mkdir()
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": SERVERS}))
    env = gateway_env(TOOLSCRIPT_HOME=str(work / "home"))
    subprocess.run(
        [str(BIN / "toolscript"), "trust"], cwd=project, env=env, check=True, capture_output=True
    )
    exec_command = [str(BIN / "toolscript"), "exec", SCRIPT]
    sdk_call = [sys.executable, "-c", SDK_CLIENT, json.dumps(SERVERS), "call"]
    face = [sys.executable, "-c", FACE_CLIENT, str(BIN / "toolscript"), str(project), SCRIPT]
    cases: dict[str, Any] = {
        "gateway URL": lambda: gateway_url_time(project, env),
        "servers ready (SDK)": lambda: servers_ready_time(env, project),
        "exec, no gateway": lambda: wall(exec_command, env, project)[0],
        "SDK client call": lambda: wall(sdk_call, env, project)[0],
        "mcp first execute": lambda: face_times(face, env, project),
    }
    for measure in cases.values():  # warm-up: Deno's check cache, the module file, the disk
        measure()
    load_before = os.getloadavg()[0]
    results: dict[str, list[float]] = {name: [] for name in [*cases, "mcp, client included"]}
    for round_number in range(args.runs):
        names = list(cases)
        shift = round_number % len(names)  # no case always runs right after the same one
        for name in names[shift:] + names[:shift]:
            measured = cases[name]()
            if isinstance(measured, tuple):
                measured, whole = measured
                results["mcp, client included"].append(whole)
            results[name].append(measured)
        print(f"round {round_number + 1}/{args.runs} done", file=sys.stderr)
    load_after = os.getloadavg()[0]
    cores = os.cpu_count()
    print(
        f"\ncold starts, {args.runs} runs each, interleaved (s); load average {load_before:.1f}"
        f" -> {load_after:.1f} on {cores} cores"
    )
    print(f"{'case':24}{'min':>8}{'p50':>8}{'max':>8}")
    for name, values in results.items():
        print(f"{name:24}{min(values):8.2f}{statistics.median(values):8.2f}{max(values):8.2f}")
    # Each round measures a case and its baseline back to back under about the same load:
    # the median of the rounds' differences moves far less than a difference of medians.
    print("added time (s): median of the per-round differences; min against min")
    for label, case, baseline, target in (
        ("(a) gateway URL vs servers ready", "gateway URL", "servers ready (SDK)", 0.5),
        ("(b) exec vs SDK client call", "exec, no gateway", "SDK client call", 0.5),
        ("(c) mcp first execute vs exec", "mcp first execute", "exec, no gateway", 1.0),
        ("    the same, client included", "mcp, client included", "exec, no gateway", 1.0),
    ):
        paired = statistics.median(
            after - before for after, before in zip(results[case], results[baseline], strict=True)
        )
        floor = min(results[case]) - min(results[baseline])
        print(f"{label}: {paired:+.2f} s paired, {floor:+.2f} s min-min (target <= +{target:g} s)")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
