"""Side by side with a peer: `toolscript mcp` and FastMCP's code mode, through the same client.

Both serve code mode over stdio in front of the same upstream server (mcp-server-time);
FastMCP's `CodeMode` transform runs on a proxy holding one upstream session that every
call shares (a connected `Client` given to `create_proxy`), its scripts in Python in the
Monty sandbox; toolscript's are TypeScript in Deno. One `mcp` SDK client (this project's)
drives both, in interleaved rounds on this machine; each round spawns a server, runs the
whole workload, and disconnects.

Rows: spawn to the first `execute` result; when the call speed is steady after spawn (the
end of the first call within 1.25x of the round's settled median); one `execute` with one
tool call, the script seen before and a new one (each sent as soon as the last answer
came, as the rows below); the seen script again after a pause (`IDLE`: an agent's turn
between two executes is seconds long); 10 sequential and 10 parallel calls in one script;
RSS of the whole process tree a second after the workload (what it keeps); client
disconnect to the exit of the whole tree; CPU seconds of the tree (reaped children
included) for the workload.

Both checkouts (this one and `--baseline`) and the peer's environment are byte-compiled
first, as `pip install` leaves a package (`uv pip install` does not): run with
PYTHONDONTWRITEBYTECODE, a side compiles each module it imports at every start, CPU that an
installed copy never spends (about 0.2 s of the face's).

FastMCP is never a dependency of this project: it is installed, with its code-mode extra,
in a virtual environment of this bench's own under the user's cache folder (`uv venv`,
`uv pip install`), made on first use.

    python bench/peer_codemode.py [--rounds 3] [--calls 10] [--baseline OTHER_CHECKOUT]
                                  [--breakdown]
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env

BIN = Path(sys.executable).parent
UPSTREAM = str(BIN / "mcp-server-time")
PEER_HOME = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "toolscript-bench"
PEER_VENV = PEER_HOME / "peer-fastmcp"
PEER_PACKAGE = "fastmcp[code-mode]"
BREAKDOWN = False  # --breakdown

# The peer: a FastMCP proxy of the upstream, on one shared session, with CodeMode.
PEER_SERVER = """
import asyncio, sys
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.experimental.transforms.code_mode import CodeMode
from fastmcp.server import create_proxy

async def main():
    upstream = Client(StdioTransport(command=sys.argv[1], args=sys.argv[2:]))
    async with upstream:  # connected: the proxy reuses this one session for every call
        proxy = create_proxy(upstream, name="peer")
        proxy.add_transform(CodeMode())
        await proxy.run_async(transport="stdio", show_banner=False, log_level="WARNING")

asyncio.run(main())
"""

# The same workloads in each side's language: (one call, 10 sequential, 10 parallel).
TS_CALL = 'tools.time.getCurrentTime({ timezone: "UTC" })'
PY_CALL = 'call_tool("get_current_time", {"timezone": "UTC"})'
SCRIPTS: dict[str, dict[str, str]] = {
    "toolscript": {
        "one": f'import {{ tools }} from "toolscript";\nconst tag = {{n}};\n'
        f"return [tag, (await {TS_CALL}).timezone];\n",
        "sequential": 'import { tools } from "toolscript";\nconst out = [];\n'
        f"for (let i = 0; i < 10; i++) out.push((await {TS_CALL}).timezone);\n"
        "return out.length;\n",
        "parallel": 'import { tools } from "toolscript";\n'
        f"const out = await Promise.all(Array.from({{ length: 10 }}, () => {TS_CALL}));\n"
        "return out.length;\n",
    },
    "fastmcp": {
        "one": f"tag = {{n}}\nr = await {PY_CALL}\nreturn [tag, r['timezone']]\n",
        "sequential": f"out = []\nfor i in range(10):\n    out.append(await {PY_CALL})\n"
        "return len(out)\n",
        "parallel": "import asyncio\n"
        f"out = await asyncio.gather(*[{PY_CALL} for _ in range(10)])\nreturn len(out)\n",
    },
}
IDLE = 0.25  # seconds before the "after a pause" row's execute
SETTLE = 1.0  # seconds after the workload before the RSS is read
FRESH = itertools.count(int(time.time()))  # a number no earlier run's script held
ROWS = {
    "spawn to first result (s)": "first",
    "steady speed after spawn (s)": "steady",
    "1 call, script seen (ms)": "seen",
    "1 call, new script (ms)": "new",
    f"1 call, seen, {IDLE:.2f} s idle (ms)": "idle",
    "10 sequential calls (ms)": "sequential",
    "10 parallel calls (ms)": "parallel",
    "RSS after the run (MB)": "rss",
    "disconnect to exit (s)": "exit",
    "CPU for the workload (s)": "cpu",
}


def own_data_folders(checkout: Path) -> None:
    """``templates/`` and ``schemas/`` ship inside the package (``toolscript.templates``) but
    live at a checkout's top level: with only ``PYTHONPATH`` pointing at another checkout,
    Python found them through this venv's editable install, so that side ran this
    checkout's runtime module. Links inside its package make it find its own."""
    for name in ("templates", "schemas"):
        link = checkout / "toolscript" / name
        if not link.exists() and (checkout / name).is_dir():
            link.symlink_to(Path("..") / name)
            print(f"linked {link} -> ../{name} (its own data folders)", file=sys.stderr)


def peer_python() -> Path:
    """The bench's own FastMCP environment, made on first use."""
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        uv = shutil.which("uv") or str(BIN / "uv")
        PEER_HOME.mkdir(parents=True, exist_ok=True)
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(PEER_VENV)], check=True)
        env = {**os.environ, "VIRTUAL_ENV": str(PEER_VENV)}
        subprocess.run([uv, "pip", "install", "-q", PEER_PACKAGE], check=True, env=env)
    # byte-compiled as pip leaves an install (uv does not): each side's start reads .pyc files
    subprocess.run([str(python), "-m", "compileall", "-q", str(PEER_VENV / "lib")], check=True)
    return python


def tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def rss_mb(processes: list[psutil.Process]) -> float:
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += process.memory_info().rss
    return total / 1e6


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def print_breakdown(side: str, processes: list[psutil.Process]) -> None:
    """Each process of the tree: its RSS, its own CPU and its reaped children's (the face's
    Deno processes), on stderr."""
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            name = " ".join([process.name(), *process.cmdline()[1:2]])[:40]
            reaped = times.children_user + times.children_system
            rss = process.memory_info().rss / 1e6
            print(
                f"  {side:10} {name:40} {rss:7.1f} MB {times.user + times.system:6.2f} s CPU"
                f" + {reaped:5.2f} s reaped",
                file=sys.stderr,
            )


async def one_round(side: str, params: StdioServerParameters, calls: int) -> dict[str, Any]:
    """Spawn, run the workload, disconnect: every row's value(s) for this round."""
    scripts = SCRIPTS["toolscript" if side == "baseline" else side]
    me = psutil.Process()
    out: dict[str, Any] = {"seen": [], "new": [], "sequential": [], "parallel": [], "idle": []}

    async def execute(session: ClientSession, code: str) -> float:
        started = time.perf_counter()
        result = await session.call_tool("execute", {"code": code})
        if result.is_error:
            raise SystemExit(f"{side}: execute failed: {result.content}")
        return time.perf_counter() - started

    spawned = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        seen = scripts["one"].replace("{n}", "0")
        await execute(session, seen)
        out["first"] = time.perf_counter() - spawned
        ends, latencies = [], []
        for _ in range(max(calls, 10)):  # the speed settling after spawn
            latencies.append(await execute(session, seen))
            ends.append(time.perf_counter() - spawned)
        settled = statistics.median(latencies[-5:])
        out["steady"] = next(
            end for end, took in zip(ends, latencies, strict=True) if took <= 1.25 * settled
        )
        for _ in range(calls):
            out["seen"].append(await execute(session, seen) * 1000)
            new = scripts["one"].replace("{n}", str(next(FRESH)))
            out["new"].append(await execute(session, new) * 1000)
            out["sequential"].append(await execute(session, scripts["sequential"]) * 1000)
            out["parallel"].append(await execute(session, scripts["parallel"]) * 1000)
        await anyio.sleep(SETTLE)  # what the last execute leaves (toolscript: its next spare)
        children = [p for p in tree(me) if p.pid != me.pid]
        out["rss"] = rss_mb(children)
        if BREAKDOWN:
            print_breakdown(side, children)
        out["cpu"] = cpu_seconds(children)
        for _ in range(calls):  # (after the CPU's reading: the workload has none)
            await anyio.sleep(IDLE)
            out["idle"].append(await execute(session, seen) * 1000)
        await anyio.sleep(SETTLE)
        children = [p for p in tree(me) if p.pid != me.pid]  # (the spares are new)
        leaving = time.perf_counter()
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in children):
        if time.perf_counter() - leaving > 60:
            break
        await anyio.sleep(0.005)
    out["exit"] = time.perf_counter() - leaving
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=10, help="samples per latency row a round")
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="print each process's RSS and CPU after each round's workload (stderr)",
    )
    parser.add_argument(
        "--baseline",
        default="",
        help="another toolscript checkout, run as a third side (on PYTHONPATH) in each round",
    )
    args = parser.parse_args()
    global BREAKDOWN
    BREAKDOWN = args.breakdown
    peer = peer_python()
    for checkout in [Path(__file__).resolve().parent.parent, *filter(None, [args.baseline])]:
        compileall.compile_dir(str(Path(checkout) / "toolscript"), quiet=1)
    if args.baseline:
        own_data_folders(Path(args.baseline))
    work = Path(tempfile.mkdtemp(prefix="toolscript-peer-"))
    (work / "project").mkdir()
    config = {"mcpServers": {"time": {"command": UPSTREAM}}, "search": {"semantic": False}}
    (work / "project" / ".toolscript.json").write_text(json.dumps(config))
    (work / "peer_server.py").write_text(PEER_SERVER)
    env = gateway_env(TOOLSCRIPT_HOME=str(work / "home"), TOOLSCRIPT_TRUSTED_PATHS=str(work))
    sides = {
        "toolscript": StdioServerParameters(
            command=str(BIN / "toolscript"), args=["mcp"], cwd=str(work / "project"), env=env
        ),
        "fastmcp": StdioServerParameters(
            command=str(peer),
            args=[str(work / "peer_server.py"), UPSTREAM],
            env={**env, "FASTMCP_LOG_LEVEL": "WARNING"},
        ),
    }
    if args.baseline:  # the same face, another checkout's code: old against new, paired
        # a project and a home of its own: the two codes' artifacts and state files differ
        # (each side would rebuild the other's at each spawn, or set its files aside)
        (work / "baseline").mkdir()
        (work / "baseline" / ".toolscript.json").write_text(json.dumps(config))
        sides["baseline"] = StdioServerParameters(
            command=str(BIN / "toolscript"),
            args=["mcp"],
            cwd=str(work / "baseline"),
            env={
                **env,
                "PYTHONPATH": args.baseline,
                "TOOLSCRIPT_HOME": str(work / "baseline-home"),
            },
        )
    results: dict[str, dict[str, list[float]]] = {
        side: {key: [] for key in ROWS.values()} for side in sides
    }
    try:
        for side, params in sides.items():  # warm-up: Deno's caches, the disk
            anyio.run(one_round, side, params, 1)
        for number in range(args.rounds):
            for side, params in sides.items():
                found = anyio.run(one_round, side, params, args.calls)
                for key, value in found.items():
                    results[side][key].extend(value if isinstance(value, list) else [value])
            print(f"round {number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(results, args.rounds, peer)


def report(results: dict[str, dict[str, list[float]]], rounds: int, peer: Path) -> None:
    version = subprocess.run(
        [str(peer), "-c", "import fastmcp; print(fastmcp.__version__)"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    load = os.getloadavg()[0]
    print(
        f"\ntoolscript mcp vs FastMCP {version} CodeMode (shared upstream session), "
        f"{rounds} interleaved rounds; load {load:.1f} on {os.cpu_count()} cores"
    )
    fmt: Callable[[float], str] = lambda v: f"{v:8.2f}" if v < 100 else f"{v:8.0f}"  # noqa: E731
    print(f"{'row':32}{'toolscript min/p50/max':>27}{'fastmcp min/p50/max':>27}{'ratio':>8}")
    for row, key in ROWS.items():
        ours, theirs = results["toolscript"][key], results["fastmcp"][key]
        cells = [
            "".join(fmt(f(values)) for f in (min, statistics.median, max))
            for values in (ours, theirs)
        ]
        ratio = statistics.median(ours) / statistics.median(theirs)
        line = f"{row:32}{cells[0]:>27}{cells[1]:>27}{ratio:7.2f}x"
        if "baseline" in results:
            base = results["baseline"][key]
            line += "   baseline" + "".join(fmt(f(base)) for f in (min, statistics.median, max))
        print(line)
    print("ratio: toolscript's median / FastMCP's (below 1: toolscript is faster or smaller)")


if __name__ == "__main__":
    main()
