"""Pipeline time for 50 servers x 20 real tools: cold, no change, one server changed.

Targets (issue 4): cold < 3 s, no-change rerun < 0.3 s, one-changed rerun < 0.5 s.

    python bench/pipeline_incremental.py [--servers 50] [--tools 20] [--rounds 5]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import synthetic_servers

from toolscript.config import Config, ServerConfig
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--tools", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tools = synthetic_servers(args.servers, args.tools)
    config = Config(
        path=None,
        project_dir=Path.cwd(),
        servers=tuple(ServerConfig(name=name, transport="stdio", command="x") for name in tools),
    )
    timings: dict[str, list[float]] = {"cold": [], "no change": [], "one changed": []}
    for round_number in range(args.rounds):
        with tempfile.TemporaryDirectory() as directory:
            layout = CacheLayout(Path(directory))
            current = copy.deepcopy(tools)
            for label in timings:
                if label == "one changed":
                    changed = current["server-07"][3]
                    changed["description"] = (
                        f"{changed.get('description', '')} (round {round_number})"
                    )
                started = time.perf_counter()
                result = run_pipeline(config, layout, SnapshotSource(copy.deepcopy(current)))
                timings[label].append(time.perf_counter() - started)
                assert result.code == 0, result.failures
                if label == "no change":
                    assert result.executed == [], result.executed
    targets = {"cold": 3.0, "no change": 0.3, "one changed": 0.5}
    total = args.servers * args.tools
    print(
        f"pipeline, {args.servers} servers x {args.tools} tools = {total} tools, {args.rounds} rounds"
    )
    print(f"{'run':14}{'min s':>8}{'median s':>10}{'max s':>8}{'target s':>10}{'vs cold':>9}")
    cold = statistics.median(timings["cold"])
    for label, values in timings.items():
        median = statistics.median(values)
        print(
            f"{label:14}{min(values):8.3f}{median:10.3f}{max(values):8.3f}"
            f"{targets[label]:10.1f}{median / cold:9.2f}"
        )


if __name__ == "__main__":
    main()
