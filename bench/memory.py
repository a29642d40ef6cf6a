"""Memory of toolscript's own processes (gateway, search workers, type checker) at 40 and
1,600 tools: after indexing, and after 100 searches and 20 execs (issue 45).

Targets: <= 350 MB at 40 tools, <= 600 MB at 1,600 tools (RSS, toolscript's own
processes; the servers' trees are shown apart). Figures come from ``/health``'s
``processes`` (what ``gateway status --json`` prints).

    python bench/memory.py [--sizes 40,1600] [--searches 100] [--execs 20]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import synthetic_servers
from harness import running_gateway

SERVER = Path(__file__).resolve().parent / "search" / "corpus_server.py"
TARGETS = {40: 350.0, 1600: 600.0}  # MB
QUERIES = [
    line.split(" | ")[0]
    for line in (Path(__file__).parent / "search" / "queries.txt").read_text().splitlines()
    if line and not line.startswith("#")
]
# Each exec's script is new (a script seen before skips the type check the checker answers).
SCRIPT = 'import {{ tools }} from "toolscript";\nreturn Object.keys(tools).length + {n};\n'


def health(url: str) -> dict[str, Any]:
    return dict(json.loads(urlopen(f"{url}/health", timeout=30).read()))


def settled(url: str) -> dict[str, Any]:
    """Health once search is hybrid (or keyword only), the model's worker has gone and the
    warm checker is up (it starts once the gateway is idle: measured without it, the row
    left out a process the next exec has)."""
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        state = health(url)
        roles = [w["role"] for w in state["processes"]["search"]]
        checker = state["checker"]["state"] in ("ready", "failed", "off")
        if checker and (
            state["search"]["semantic"] == "unavailable"
            # (one query worker: a new one replaces the one that embedded the tools)
            or (state["search"]["semantic"] == "ready" and "model" not in roles and len(roles) < 2)
        ):
            time.sleep(2)  # what exits goes
            return health(url)
        time.sleep(1)
    raise SystemExit("search never settled")


def row(label: str, processes: dict[str, Any], target: float) -> str:
    def mb(memory: dict[str, Any] | None) -> float:
        return memory["rss"] / 1e6 if memory else 0.0

    search = sum(mb(w) for w in processes["search"])
    total = processes["total"] / 1e6
    servers = sum(mb(s) for s in processes["servers"].values())
    verdict = "met" if total <= target else "NOT met"
    return (
        f"{label:34}{mb(processes['gateway']):9.0f}{search:9.0f}{mb(processes['checker']):9.0f}"
        f"{total:9.0f}   <= {target:.0f} {verdict:8}{servers:9.0f}"
    )


def measure(tools: int, searches: int, execs: int) -> list[str]:
    per_server = 40
    servers = synthetic_servers(max(1, tools // per_server), min(tools, per_server))
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        project = Path(directory)
        config: dict[str, Any] = {"mcpServers": {}}
        for name, listed in servers.items():
            path = project / f"{name}.json"
            path.write_text(json.dumps(listed))
            config["mcpServers"][name] = {
                "command": sys.executable,
                "args": [str(SERVER), str(path)],
            }
        (project / "p").mkdir()
        (project / "p" / ".toolscript.json").write_text(json.dumps(config))
        toolscript = str(Path(sys.executable).parent / "toolscript")
        subprocess.run([toolscript, "trust"], cwd=project / "p", capture_output=True, check=True)
        with running_gateway(project / "p", config) as url:
            target = TARGETS.get(tools, TARGETS[1600])
            rows.append(row(f"{tools} tools, after indexing", settled(url)["processes"], target))
            for number in range(searches):
                urlopen(f"{url}/search?" + urlencode({"q": QUERIES[number % len(QUERIES)]})).read()
            for _ in range(execs):
                subprocess.run(
                    [toolscript, "exec", SCRIPT.format(n=time.time_ns())],
                    cwd=project / "p",
                    capture_output=True,
                    check=True,
                    timeout=300,
                )
            after = health(url)["processes"]
            rows.append(row(f"  after {searches} searches, {execs} execs", after, target))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="40,1600")
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--execs", type=int, default=20)
    args = parser.parse_args()
    print(
        f"{'RSS, MB':34}{'gateway':>9}{'search':>9}{'checker':>9}{'total':>9}   target"
        f"{'':10}{'servers':>9}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        for line in measure(size, args.searches, args.execs):
            print(line, flush=True)


if __name__ == "__main__":
    main()
