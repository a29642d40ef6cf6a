"""Where an MCP face execute's time and CPU go: one `toolscript mcp` under trace.

Spawns the face (with `bench/face_trace/sitecustomize.py` on `PYTHONPATH`) in front of
`mcp-server-time`, runs 11 warm-up executes, then `--n` rounds of the peer bench's
scripts (seen, new, 10 sequential and 10 parallel calls), and prints the CPU of each
process of the tree for the workload (reaped children: the face's Deno processes), each
kind's latency, and the last execute of each kind as a timeline (ms from the client's
call; `deno` lines are the spare's boot and the script's first line). `--pythonpath` puts
another checkout first (the old code, for a paired run); `--notrace` measures CPU only.

    python bench/face_trace.py [--n 10] [--kinds seen,new] [--notrace] [--settle 5]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import peer_codemode as peer  # noqa: E402

# The script's first line, and what the spare's boot stamped, come back with its result.
STAMP = "const __t = performance.timeOrigin + performance.now();\n"
IMPORT = 'import { tools } from "toolscript";\n'


def stamped(code: str) -> str:
    code = code.replace(IMPORT, IMPORT + STAMP).replace(
        "return ", "return [__t, (globalThis as any).__fc, "
    )
    return code.rstrip().rstrip(";") + "];\n"


def cpu_by_process(me: psutil.Process) -> dict[int, tuple[str, float, float]]:
    rows = {}
    for process in me.children(recursive=True):
        try:
            times = process.cpu_times()
            command = " ".join(process.cmdline()[:3])[-60:]
        except psutil.NoSuchProcess:
            continue
        reaped = times.children_user + times.children_system
        rows[process.pid] = (command, times.user + times.system, reaped)
    return rows


async def workload(args: argparse.Namespace, params: StdioServerParameters, log: Path) -> None:
    me = psutil.Process()
    scripts = peer.SCRIPTS["toolscript"]
    fresh = itertools.count(int(time.time()))
    latencies: dict[str, list[float]] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def execute(kind: str, code: str) -> None:
            started = time.time()
            result = await session.call_tool("execute", {"code": code})
            ended = time.time()
            if result.is_error:
                raise SystemExit(f"execute failed: {result.content}")
            latencies.setdefault(kind, []).append(1000 * (ended - started))
            answer: Any = (result.structured_content or {}).get("result") or [None, None]
            with log.open("a") as out:
                out.write(f"{started:.6f} client - {kind} >\n")
                if answer[0]:
                    out.write(f"{answer[0] / 1000:.6f} deno - script-start\n")
                for key, value in (answer[1] or {}).items():
                    out.write(f"{value / 1000:.6f} deno - spare.{key}\n")
                out.write(f"{ended:.6f} client - {kind} <\n")

        codes = {
            "seen": lambda: stamped(scripts["one"].replace("{n}", "0")),
            "new": lambda: stamped(scripts["one"].replace("{n}", str(next(fresh)))),
            "sequential": lambda: stamped(scripts["sequential"]),
            "parallel": lambda: stamped(scripts["parallel"]),
        }
        for _ in range(11):
            await execute("warm", codes["seen"]())
        await anyio.sleep(args.settle)  # the warm checker's start out of the way
        before = cpu_by_process(me)
        for _ in range(args.n):
            for kind in args.kinds.split(","):
                await execute(kind, codes[kind]())
        after = cpu_by_process(me)
    print("CPU s per process: before the workload (start, 11 warm-up executes) + the workload")
    for pid, (command, own, reaped) in after.items():
        was = before.get(pid, (command, 0.0, 0.0))
        print(
            f"  {pid:7} {command:60} own {was[1]:5.2f} +{own - was[1]:5.2f}"
            f"  reaped {was[2]:5.2f} +{reaped - was[2]:5.2f}"
        )
    for kind in ["warm", *args.kinds.split(",")]:
        taken = latencies[kind]
        print(f"  {kind:10} p50 {statistics.median(taken):6.1f} min {min(taken):6.1f} ms")


def timelines(log: Path, kinds: list[str]) -> None:
    events = []
    for line in log.read_text().splitlines():
        stamp, pid, thread, event = line.split(None, 3)
        events.append((float(stamp), pid, thread, event.strip()))
    events.sort()
    groups: list[dict[str, Any]] = []
    for stamp, pid, thread, event in events:
        if pid == "client" and event.endswith(">"):
            groups.append({"kind": event.split()[0], "t0": stamp, "events": []})
        elif groups:
            groups[-1]["events"].append((stamp, pid, thread, event))
    for kind in kinds:
        last = [group for group in groups if group["kind"] == kind][-1]
        print(f"--- the last {kind} execute (ms from the client's call)")
        for stamp, pid, thread, event in last["events"]:
            print(f"  {1000 * (stamp - last['t0']):8.2f} {pid:>7} {thread:12} {event}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="rounds of the scripts")
    parser.add_argument("--kinds", default="seen,new,sequential,parallel")
    parser.add_argument("--pythonpath", default="", help="a checkout to run instead")
    parser.add_argument("--notrace", action="store_true")
    parser.add_argument("--settle", type=float, default=0.0, help="seconds after the warm-up")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolscript-face-trace-"))
    log = work / "trace.log"
    try:
        (work / "project").mkdir()
        config = {"mcpServers": {"time": {"command": peer.UPSTREAM}}, "search": {"semantic": False}}
        (work / "project" / ".toolscript.json").write_text(json.dumps(config))
        env = peer.gateway_env(
            TOOLSCRIPT_HOME=str(work / "home"), TOOLSCRIPT_TRUSTED_PATHS=str(work)
        )
        paths = [args.pythonpath] if args.pythonpath else []
        if args.pythonpath:
            peer.own_data_folders(Path(args.pythonpath))
        if not args.notrace:
            paths.append(str(BENCH / "face_trace"))
            env["FC_TRACE_FILE"] = str(log)
        env["PYTHONPATH"] = ":".join(paths)
        params = StdioServerParameters(
            command=str(peer.BIN / "toolscript"), args=["mcp"], cwd=str(work / "project"), env=env
        )
        anyio.run(workload, args, params, log)
        if not args.notrace:
            timelines(log, args.kinds.split(","))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
