"""Warm call latency of a local tool in a `uv run` worker against one run in-process.

Both through a real gateway over HTTP (one keep-alive connection), interleaved.
Target (issue 7): a warm external call adds under 2 ms over an internal one.

    python bench/local_tools.py [--calls 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import running_gateway

INTERNAL = 'def echo(text: str) -> str:\n    """Echo."""\n    return text\n'
EXTERNAL = "# /// script\n# dependencies = []\n# ///\n" + INTERNAL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="toolscript-local-bench-"))
    (directory / "tools").mkdir()
    (directory / "tools" / "inside.py").write_text(INTERNAL)
    (directory / "tools" / "worker.py").write_text(EXTERNAL)
    config = {"localTools": {"dir": "tools"}, "search": {"semantic": False}}
    with running_gateway(directory, config) as gateway_url:
        measure(urlsplit(gateway_url), args)


def measure(url: SplitResult, args: argparse.Namespace) -> None:
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    body = json.dumps({"text": "hello"})

    def call(tool: str) -> float:
        started = time.perf_counter()
        connection.request(
            "POST", f"{url.path}/tools/{tool}", body, {"content-type": "application/json"}
        )
        response = connection.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise SystemExit(f"{tool}: HTTP {response.status} {payload[:300]!r}")
        return elapsed

    try:
        for _ in range(50):  # warm: the worker is spawned and its environment installed here
            call("inside__echo")
            call("worker__echo")
        medians: dict[str, list[float]] = {"internal": [], "external": []}
        for _ in range(args.rounds):
            samples: dict[str, list[float]] = {"internal": [], "external": []}
            for _ in range(args.calls):
                samples["internal"].append(call("inside__echo"))
                samples["external"].append(call("worker__echo"))
            for kind, values in samples.items():
                medians[kind].append(statistics.median(values))
    finally:
        connection.close()
    print(
        f"local tool call latency through the gateway, {args.calls} calls x {args.rounds} rounds (ms)"
    )
    print(f"{'tool':10}{'min p50':>10}{'median p50':>12}{'max p50':>10}")
    for kind, values in medians.items():
        print(f"{kind:10}{min(values):10.3f}{statistics.median(values):12.3f}{max(values):10.3f}")
    added = statistics.median(medians["external"]) - statistics.median(medians["internal"])
    print(f"a warm external call adds {added:.3f} ms over an internal one (target < 2 ms)")


if __name__ == "__main__":
    main()
