"""What one server's outsized listing costs everyone: a 20 MB tool description, or a 5 MB
input schema, beside a server of ordinary tools (tests/servers/hostile_server.py).

For each case a gateway starts on that pair and, once its warm checker is ready, the table
gives the generated module's size, the wall time of ``toolscript exec`` running a new
one-line script that calls the ordinary server's tool (the first, and the median of
``--runs``), both again with a gateway started ``--no-warm-checker`` (each check a
``deno check``, as while the checker starts or after it gave up), and the gateway's and the
checker's RSS. With ``--baseline OTHER_CHECKOUT`` each case runs a second time with that
checkout's code (on PYTHONPATH, gateway and CLI both): old against new, side by side.

    python bench/hostile_sizes.py [--runs 3] [--baseline OTHER_CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env

from toolscript.gateway.launch import start_gateway

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"
OPEN = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
CASES: dict[str, dict[str, Any]] = {
    "20 MB description": {
        "name": "huge",
        "description": {"$repeat": "x", "$times": 20_000_000},
        "inputSchema": OPEN,
    },
    "5 MB input schema": {
        "name": "wide",
        "description": "Wide.",
        "inputSchema": {
            "type": "object",
            "properties": {"$many": {"type": "string", "description": "d" * 400}, "$times": 12_000},
        },
    },
}
GOOD = {"tools": [{"name": "find", "description": "Finds.", "inputSchema": OPEN}]}
SCRIPT = (
    'import {{ tools }} from "toolscript";\nreturn [await tools.good.find({{ q: "x" }}), {n}];\n'
)


def health(url: str) -> dict[str, Any]:
    return dict(json.loads(urlopen(f"{url}/health", timeout=60).read()))


def ready(url: str) -> dict[str, Any]:
    """Health once both servers are connected and the warm checker has its module."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        state = health(url)
        connected = all(s["state"] == "connected" for s in state["servers"].values())
        checker = state["checker"]["state"]
        running = checker == "ready" and state["processes"]["checker"] is not None
        if connected and (running or checker in ("failed", "off")):
            return state
        time.sleep(0.5)
    raise SystemExit("the gateway never settled")


def measure(case: str, code: str, runs: int, *, warm: bool) -> dict[str, float]:
    """One gateway on ``case`` with the code on PYTHONPATH ``code`` ("": this checkout), its
    warm checker on or off (each exec's check then a ``deno check``)."""
    with tempfile.TemporaryDirectory(prefix="toolscript-sizes-") as directory:
        project = Path(directory)
        servers = {}
        for name, spec in {"big": {"tools": [CASES[case]]}, "good": GOOD}.items():
            path = project / f"{name}.json"
            path.write_text(json.dumps(spec))
            servers[name] = {"command": sys.executable, "args": [str(HOSTILE), str(path)]}
        config = {"mcpServers": servers, "search": {"semantic": False}}
        sides = {"TOOLSCRIPT_HOME": str(project / "home")} | ({"PYTHONPATH": code} if code else {})
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCRIPT_")}
        env |= sides | {"TOOLSCRIPT_TRUSTED_PATHS": str(project), "TOOLSCRIPT_LOG_LEVEL": "ERROR"}
        (project / ".toolscript.json").write_text(json.dumps(config))
        flags = () if warm else ("--no-warm-checker",)
        gateway = start_gateway(*flags, cwd=project, env=gateway_env(**env), stderr=None)
        try:
            url = gateway.url
            if not url:
                raise SystemExit("the gateway did not start")
            ready(url)
            module = len(urlopen(f"{url}/runtime/tools.ts", timeout=60).read())
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "toolscript",
                        "exec",
                        SCRIPT.format(n=uuid.uuid4().int % 10**9),
                    ],
                    cwd=project,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                times.append(time.perf_counter() - started)
                if done.returncode != 0:
                    raise SystemExit(f"exec failed: {done.stderr}")
            processes = ready(url)["processes"]  # (a checker being replaced has no process)
        finally:
            gateway.stop(60)
    checker = processes["checker"]["rss"] if processes["checker"] else 0
    return {
        "module MB": module / 1e6,
        "exec s": statistics.median(times),
        "1st exec s": times[0],
        "gateway RSS MB": processes["gateway"]["rss"] / 1e6,
        "checker RSS MB": checker / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", default="", help="another checkout, run beside (PYTHONPATH)")
    args = parser.parse_args()
    sides = [("new", "")] + ([("old", args.baseline)] if args.baseline else [])
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; median of {args.runs}")
    columns = ["module MB", "1st exec s", "exec s", "1st, no warm", "exec s, no warm"]
    columns += ["gateway RSS MB", "checker RSS MB"]
    print(f"{'case':20}{'':5}" + "".join(f"{c:>17}" for c in columns))
    for case in CASES:
        for side, code in sides:
            figures = measure(case, code, args.runs, warm=True)
            cold = measure(case, code, args.runs, warm=False)
            figures["1st, no warm"], figures["exec s, no warm"] = cold["1st exec s"], cold["exec s"]
            print(f"{case:20}{side:5}" + "".join(f"{figures[c]:17.2f}" for c in columns))
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
