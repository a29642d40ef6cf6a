"""Seconds from the gateway's URL to hybrid search, with nothing cached and with every vector cached.

Setup: LiveMCPBench corpus servers (bench/corpus.py, one stdio server per file) adding up
to about 40 tools. "fresh": an empty TOOLSCRIPT_HOME and project (no stored vector, no
saved torch-free query runtime); "cached": the same tools again with the home of an
earlier run (every vector stored). Time zero is the URL on the gateway's stdout; then
``/health`` is polled until search's semantic state is "ready", and ``GET /search``
until it answers in mode "hybrid". The two kinds of run alternate; median, min and max
of each against the 5 s target.

    python bench/search_ready.py [--runs 5] [--tools 40]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from corpus import corpus_dir
from harness import gateway_env
from search_quality import corpus_config, corpus_files

from toolscript.gateway.launch import start_gateway

TARGET = 5.0
QUERY = "find the open pull requests that touch auth"


def config_for(tools: int) -> tuple[dict[str, object], int]:
    """Corpus servers, in order, until they hold ``tools`` tools; and how many they hold."""
    chosen, total = [], 0
    for relative in corpus_files("lmb"):
        if total >= tools:
            break
        chosen.append(relative)
        total += len(json.loads((corpus_dir() / relative).read_text()))
    return corpus_config(chosen, 0.5), total


def one_run(project: Path, home: Path, config: dict[str, object]) -> tuple[float, float]:
    """Seconds from the URL to /health's semantic "ready", and to a hybrid /search."""
    project.mkdir(parents=True, exist_ok=True)
    (project / ".toolscript.json").write_text(json.dumps(config))
    env = gateway_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_TRUSTED_PATHS=str(project))
    gateway = start_gateway(cwd=project, env=env, stderr=None, wait=300)
    zero = time.perf_counter()
    ready = hybrid = None
    try:
        if not gateway.url:
            raise SystemExit("the gateway did not start")
        client = httpx.Client(base_url=gateway.url, timeout=60)
        deadline = zero + 300
        while (ready is None or hybrid is None) and time.perf_counter() < deadline:
            if ready is None:
                state = client.get("/health").json()["search"]["semantic"]
                if state == "ready":
                    ready = time.perf_counter() - zero
                elif state == "unavailable":
                    raise SystemExit("semantic search is unavailable")
            if hybrid is None:
                answer = client.get("/search", params={"q": QUERY}).json()
                if answer["mode"] == "hybrid":
                    hybrid = time.perf_counter() - zero
            time.sleep(0.05)
        client.close()
    finally:
        gateway.stop(60)
    if ready is None or hybrid is None:
        raise SystemExit("search did not turn hybrid within 300 s")
    return ready, hybrid


def row(label: str, values: list[float]) -> str:
    median = statistics.median(values)
    verdict = "met" if median <= TARGET else "not met"
    return f"{label:30}{min(values):8.2f}{median:8.2f}{max(values):8.2f}   {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tools", type=int, default=40)
    args = parser.parse_args()
    config, tools = config_for(args.tools)
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="search-ready-") as scratch:
        root = Path(scratch)
        for run in range(args.runs):
            fresh_home, fresh_project = root / f"home{run}", root / f"project{run}"
            ready, hybrid = one_run(fresh_project, fresh_home, config)
            results.setdefault("fresh: health ready", []).append(ready)
            results.setdefault("fresh: hybrid /search", []).append(hybrid)
            # The same home and project again: every vector (and the query runtime) cached.
            ready, hybrid = one_run(fresh_project, fresh_home, config)
            results.setdefault("cached: health ready", []).append(ready)
            results.setdefault("cached: hybrid /search", []).append(hybrid)
            print(
                f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in results.items()),
                file=sys.stderr,
            )
            shutil.rmtree(fresh_home, ignore_errors=True)
            shutil.rmtree(fresh_project, ignore_errors=True)
    print(f"{tools} tools, {args.runs} runs; seconds from the URL (target {TARGET:g} s)")
    print(f"{'':30}{'min':>8}{'median':>8}{'max':>8}")
    for label, values in results.items():
        print(row(label, values))


if __name__ == "__main__":
    main()
