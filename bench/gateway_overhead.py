"""Tool-call overhead of the gateway against a direct MCP session to the same server.

Direct: the official `mcp` ClientSession over stdio to server-everything, `echo`.
Gateway: a keep-alive Node HTTP client -> toolscript gateway -> the same server over stdio.
Targets (issue 3): added p50 latency under 1 ms; gateway throughput >= 0.8x direct.

Runs (issue 22): the same gateway's calls as a run's (policy checks, replay bookkeeping and
the run log, as every script's calls are) against calls outside any run, interleaved in
each round. Target: at most 0.1 ms more at p50.

    python bench/gateway_overhead.py [--calls 2000] [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import percentile, running_gateway

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-server-everything"
ARGUMENTS = {"message": "hello"}


async def direct(calls: int, concurrency: int, seconds: float) -> dict[str, float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=str(EVERYTHING))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(50):
            await session.call_tool("echo", ARGUMENTS)
        latencies = []
        for _ in range(calls):
            start = time.perf_counter()
            await session.call_tool("echo", ARGUMENTS)
            latencies.append((time.perf_counter() - start) * 1000)
        done = 0
        deadline = time.monotonic() + seconds

        async def worker() -> None:
            nonlocal done
            while time.monotonic() < deadline:
                await session.call_tool("echo", ARGUMENTS)
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return {
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
        "throughput": done / elapsed,
    }


def through_gateway(
    calls: int, concurrency: int, seconds: float, run_first: bool = False
) -> dict[str, dict[str, float]]:
    """Rows ``gateway`` (outside any run) and ``as a run``, measured one after the other on
    one gateway (which goes first alternates between rounds)."""
    # Semantic search off: loading the model would compete with the calls being measured.
    config = {
        "mcpServers": {"everything": {"command": str(EVERYTHING)}},
        "search": {"semantic": False},
    }
    with (
        tempfile.TemporaryDirectory() as directory,
        running_gateway(Path(directory), config) as url,
    ):
        registered = httpx.post(f"{url}/runs", json={"origin": "bench", "max_calls": 10**9})
        run_url = url.rsplit("/", 1)[0] + "/" + registered.json()["token"]
        order = [("as a run", run_url), ("gateway", url)]
        rows = {
            kind: _load(target, calls, concurrency, seconds)
            for kind, target in (order if run_first else order[::-1])
        }
        httpx.post(f"{url}/runs/{registered.json()['id']}/end", json={"exit": 0})
    return rows


def _load(url: str, calls: int, concurrency: int, seconds: float) -> dict[str, float]:
    output = subprocess.run(
        [
            "node",
            str(Path(__file__).with_name("http_load.mjs")),
            f"{url}/tools/everything__echo",
            json.dumps(ARGUMENTS),
            str(calls),
            str(concurrency),
            str(seconds),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result = json.loads(output)
    latencies = result["latencies"]
    return {
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
        "throughput": result["throughput"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="sequential calls per round")
    parser.add_argument("--seconds", type=float, default=5, help="seconds of concurrent load")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="rounds, side by side")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"direct": [], "gateway": [], "as a run": []}
    for round_number in range(args.rounds):
        runs["direct"].append(asyncio.run(direct(args.calls, args.concurrency, args.seconds)))
        measured = through_gateway(
            args.calls, args.concurrency, args.seconds, run_first=round_number % 2 == 1
        )
        for kind, row in measured.items():
            runs[kind].append(row)
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)

    def median(kind: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[kind])

    print(f"{'':10}{'p50 ms':>10}{'p99 ms':>10}{'calls/s':>10}   (median of {args.rounds} rounds)")
    for kind in ("direct", "gateway", "as a run"):
        print(
            f"{kind:10}{median(kind, 'p50'):10.3f}{median(kind, 'p99'):10.3f}"
            f"{median(kind, 'throughput'):10.0f}"
        )
    added = median("gateway", "p50") - median("direct", "p50")
    ratio = median("gateway", "throughput") / median("direct", "throughput")
    run_added = median("as a run", "p50") - median("gateway", "p50")
    run_ratio = median("as a run", "throughput") / median("gateway", "throughput")
    print(f"runs (policy + log) add p50: {run_added:.3f} ms (target <= 0.1 ms)")
    print(f"throughput ratio run/outside a run: {run_ratio:.2f}x")
    spread = [run["throughput"] for run in runs["gateway"]]
    print(f"added p50 latency: {added:.3f} ms (target < 1 ms)")
    print(f"throughput ratio gateway/direct: {ratio:.2f}x (target >= 0.8x)")
    print(
        f"gateway throughput min/median/max: {min(spread):.0f}/{statistics.median(spread):.0f}/{max(spread):.0f}"
    )


if __name__ == "__main__":
    main()
