"""Tool-call latency while the gateway loads the embedding model and indexes, against after.

The model runs in a worker process (toolscript/search/process.py), so loading torch
and embedding should cost tool calls CPU (two cores here) but never the gateway's
interpreter lock: no call should wait for hundreds of milliseconds. Setup: the 527
LiveMCPBench corpus tools (one stdio server per file, an empty embedding cache, so
every tool is embedded) plus server-everything; sequential `echo` calls from the
moment the gateway prints its URL until search is ready, then as long again after.

    python bench/gateway_while_indexing.py [--after 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from corpus import ROOT
from harness import percentile, running_gateway
from search_quality import corpus_config, corpus_files

EVERYTHING = ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-server-everything"


def summary(label: str, values: list[float]) -> str:
    p99 = percentile(values, 0.99)
    return f"{label:26}{len(values):7}{statistics.median(values):9.2f}{p99:9.2f}{max(values):9.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=5.0, help="seconds measured once ready")
    args = parser.parse_args()
    config = corpus_config(corpus_files("lmb"), 0.5)
    config["mcpServers"]["everything"] = {"command": str(EVERYTHING)}
    directory = ROOT / "cache" / "while-indexing"
    shutil.rmtree(directory, ignore_errors=True)  # an empty embedding cache: index everything
    with running_gateway(directory, config) as url:
        client = httpx.Client(base_url=url, timeout=30)
        phases: dict[str, list[float]] = {"loading and indexing": [], "ready": []}
        phase, ready_at, next_check = "loading and indexing", None, 0.0
        started = time.monotonic()
        while ready_at is None or time.monotonic() - ready_at < args.after:
            now = time.monotonic()
            if ready_at is None and now >= next_check:
                search = json.loads(urlopen(f"{url}/health").read())["search"]
                if search["semantic"] in ("ready", "unavailable"):
                    phase, ready_at = "ready", time.monotonic()
                next_check = now + 0.5
            before = time.perf_counter()
            response = client.post("/tools/everything__echo", json={"message": "x"})
            phases[phase].append((time.perf_counter() - before) * 1000)
            response.raise_for_status()
        tools = json.loads(urlopen(f"{url}/health").read())["search"]
    loading = (ready_at or started) - started
    print(
        f"tool calls while the gateway embeds {tools['embedded']} tools "
        f"(search {tools['semantic']} after {loading:.1f} s)"
    )
    print(f"{'phase (ms)':26}{'calls':>7}{'p50':>9}{'p99':>9}{'max':>9}")
    for label, values in phases.items():
        print(summary(label, values))
    busy, idle = phases["loading and indexing"], phases["ready"]
    print(
        f"longest call while indexing {max(busy):.1f} ms, once ready {max(idle):.1f} ms "
        "(with the model inside the gateway, its import alone stalled calls ~190 ms)"
    )


if __name__ == "__main__":
    main()
