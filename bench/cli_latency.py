"""What a whole `toolscript` command costs from start to exit, beside its baselines.

Every command that only asks a running gateway (or the run log) something, `--version`
and `exec 'return 1'`, each run as its own process against a gateway of two real servers
(mcp-server-time and server-everything) that this script starts; beside them, curl on the
same endpoint and `python -c pass` (the interpreter's own start), measured in the same
interleaved rounds, so a loaded machine slows baselines and commands alike: read the ratios.
Targets (issue 45, on a quiet 2-core machine): search, get-types, list-servers, gateway
status, list-tools and runs p50 <= 150 ms; --version <= 100 ms; exec <= 120 ms.

The package is byte-compiled first, as `pip install` does. The gateway's search is
keyword-only unless --semantic (no model loading competing for the CPU meanwhile).

    python bench/cli_latency.py [--runs 5] [--semantic]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env, running_gateway

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = ROOT / "tests" / "servers" / "node_modules" / ".bin" / "mcp-server-everything"

# name: (toolscript arguments, the gateway route curl asks for the same answer, target ms)
COMMANDS: dict[str, tuple[list[str], str | None, int]] = {
    "search": (["search", "what time is it"], f"/search?q={quote('what time is it')}", 150),
    "get-types": (
        ["get-types", "time", "get_current_time"],
        "/types?server=time&tool=get_current_time",
        150,
    ),
    "list-servers": (["list-servers"], "/servers", 150),
    "gateway status": (["gateway", "status"], "/health", 150),
    "list-tools": (["list-tools", "time"], "/servers/time/tools", 150),
    "runs": (["runs"], None, 150),
    "--version": (["--version"], None, 100),
    "exec 'return 1'": (["exec", "return 1"], None, 120),
}


def timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"failed: {command}\n{result.stdout}{result.stderr}")
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--semantic", action="store_true", help="hybrid search in the gateway")
    args = parser.parse_args()
    import compileall

    compileall.compile_dir(str(ROOT / "toolscript"), quiet=1)
    curl = shutil.which("curl")
    if curl is None:
        raise SystemExit("curl is not installed: it is the baseline of every gateway command")
    if not EVERYTHING.exists():
        raise SystemExit(f"{EVERYTHING} is missing: run `npm ci` in tests/servers")
    toolscript = str(Path(sys.executable).parent / "toolscript")
    work = Path(tempfile.mkdtemp(prefix="toolscript-bench-"))
    config = {
        "mcpServers": {
            "time": {"command": str(Path(sys.executable).parent / "mcp-server-time")},
            "everything": {"command": str(EVERYTHING)},
        },
        "search": {"semantic": args.semantic},
    }
    extra = {"TOOLSCRIPT_HOME": str(work / "home"), "TOOLSCRIPT_TRUSTED_PATHS": str(work)}
    env = gateway_env(**extra)
    try:
        with running_gateway(work, config, **extra) as url:
            results = measure(url, work, env, toolscript, curl, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(results, args.runs)


def measure(
    url: str, work: Path, env: dict[str, str], toolscript: str, curl: str, runs: int
) -> dict[str, list[float]]:
    """Interleaved rounds: every baseline and every command once per round, in ms."""
    cases: dict[str, list[str]] = {"python -c pass": [sys.executable, "-c", "pass"]}
    for name, (arguments, route, _) in COMMANDS.items():
        if route is not None:
            cases[f"curl {route.split('?')[0]}"] = [curl, "-sf", "-o", "/dev/null", url + route]
        cases[name] = [toolscript, *arguments]
    for command in cases.values():  # warm: page cache, the config memo, a first run logged
        timed(command, env, work)
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, command in cases.items():
            results[name].append(timed(command, env, work))
    return results


def report(results: dict[str, list[float]], runs: int) -> None:
    """min / p50 / max per case; each command against its curl and against bare Python."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    cores = os.cpu_count()
    print(f"\nwhole-process latency, {runs} interleaved rounds; load {load:.1f} on {cores} cores")
    print(f"{'case':26}{'min':>7}{'p50':>7}{'max':>7}{'/curl':>8}{'/python':>9}{'target':>8}")
    median = {name: statistics.median(values) for name, values in results.items()}
    python = median["python -c pass"]
    for name, values in results.items():
        line = f"{name:26}{min(values):7.0f}{median[name]:7.0f}{max(values):7.0f}"
        if name in COMMANDS:
            route, target = COMMANDS[name][1], COMMANDS[name][2]
            versus = median[f"curl {route.split('?')[0]}"] if route else None
            line += f"{median[name] / versus:7.1f}x" if versus else f"{'':8}"
            line += f"{median[name] / python:8.1f}x{target:8d}"
        print(line)
    print(
        "targets hold for a quiet machine; on a loaded one compare the ratios with today's "
        "(search 32x curl; --version 4.8x python -c pass)"
    )


if __name__ == "__main__":
    main()
