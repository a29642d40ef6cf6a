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

With --against DIR (a folder holding another version's `toolscript` package, e.g. from
`git archive main toolscript | tar -x -C DIR`), each command also runs on that version in
the same rounds: a before-and-after under the same load.

    python bench/cli_latency.py [--runs 5] [--semantic] [--against DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote
from urllib.request import urlopen

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


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system, its own children's included) in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"failed: {command}\n{result.stdout}{result.stderr}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed * 1000, cpu * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--semantic", action="store_true", help="hybrid search in the gateway")
    parser.add_argument("--against", type=Path, help="a folder with another toolscript package")
    args = parser.parse_args()
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
            settle(url)
            results = measure(url, work, env, toolscript, curl, args.runs, args.against)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(*results, args.runs)


def settle(url: str) -> None:
    """Wait until the gateway's warm type checker has started (or failed): it starts a few
    seconds after the URL, and its start on 2 cores would land inside the rounds."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with urlopen(f"{url}/health", timeout=30) as answer:
            if json.loads(answer.read())["checker"]["state"] != "starting":
                return
        time.sleep(0.5)
    raise SystemExit("the gateway's type checker never started")


def measure(
    url: str,
    work: Path,
    env: dict[str, str],
    toolscript: str,
    curl: str,
    runs: int,
    against: Path | None,
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Interleaved rounds: every baseline and every command once per round; wall and CPU
    times in ms."""
    cases: dict[str, list[str]] = {"python -c pass": [sys.executable, "-c", "pass"]}
    for name, (arguments, route, _) in COMMANDS.items():
        if route is not None:
            cases[f"curl {route.split('?')[0]}"] = [curl, "-sf", "-o", "/dev/null", url + route]
        cases[name] = [toolscript, *arguments]
        if against is not None:
            if against.is_dir():
                compileall.compile_dir(str(against), quiet=1)
            other = f"import sys; sys.path.insert(0, {str(against.resolve())!r}); "
            other += "from toolscript.cli.entry import main; main()"
            cases[f"  {name} (against)"] = [sys.executable, "-c", other, *arguments]
    for name, command in list(cases.items()):  # warm: page cache, the config memo, a first run
        try:
            timed(command, env, work)
        except SystemExit as failed:
            if not name.endswith("(against)"):
                raise
            # e.g. `runs` of an older version, on a run log the newer gateway migrated
            print(f"{name.strip()}: left out, it fails here: {str(failed).splitlines()[-2]}")
            del cases[name]
    wall: dict[str, list[float]] = {name: [] for name in cases}
    cpu: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, command in cases.items():
            elapsed, used = timed(command, env, work)
            wall[name].append(elapsed)
            cpu[name].append(used)
    return wall, cpu


def report(results: dict[str, list[float]], cpu: dict[str, list[float]], runs: int) -> None:
    """min / p50 / max per case and its CPU p50 (what a loaded machine slows least); each
    command against its curl and against bare Python."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    cores = os.cpu_count()
    print(f"\nwhole-process latency, {runs} interleaved rounds; load {load:.1f} on {cores} cores")
    print(
        f"{'case (ms)':26}{'min':>7}{'p50':>7}{'max':>7}{'cpu p50':>9}"
        f"{'/curl':>8}{'/python':>9}{'target':>8}"
    )
    median = {name: statistics.median(values) for name, values in results.items()}
    python = median["python -c pass"]
    for name, values in results.items():
        line = f"{name:26}{min(values):7.0f}{median[name]:7.0f}{max(values):7.0f}"
        line += f"{statistics.median(cpu[name]):9.0f}"
        if name in COMMANDS:
            route, target = COMMANDS[name][1], COMMANDS[name][2]
            versus = median[f"curl {route.split('?')[0]}"] if route else None
            line += f"{median[name] / versus:7.1f}x" if versus else f"{'':8}"
            line += f"{median[name] / python:8.1f}x{target:8d}"
        print(line)
    print(
        "targets are for a quiet machine; on a loaded one read the ratios (before this work: "
        "search 32x its curl, every gateway command about 16-19x python -c pass, --version "
        "4.8x) and the CPU times (curl's leaves out the gateway's work)"
    )


if __name__ == "__main__":
    main()
