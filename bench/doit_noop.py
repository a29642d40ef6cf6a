"""What a whole `doit` costs when nothing changed, beside `python -c pass`.

A project of the reference servers (mcp-server-time, server-everything, server-memory) is
built once with `doit`; then every round runs `python -c pass` (the interpreter's own
start), `doit` with nothing changed and `doit list --status`, each as its own process,
interleaved, so a loaded machine slows them alike: read the ratios too.
Target (issue 45): `doit` with nothing changed does no work beyond reading the hash
database, <= 0.5 s (it connected to every server: 2.8-4 s).

With --against DIR (a folder holding another version's `toolscript` package, e.g. from
`git archive main toolscript | tar -x -C DIR`), `doit` also runs on that version in the
same rounds, on a project of its own: a before-and-after under the same load.

    python bench/doit_noop.py [--runs 7] [--against DIR]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "tests" / "servers" / "node_modules" / ".bin"
TARGET_MS = 500


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU time (user + system, children included) in ms, and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"failed: {command}\n{result.stdout}{result.stderr}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed * 1000, cpu * 1000, result.stdout


def project(directory: Path, dodo: str) -> Path:
    directory.mkdir(parents=True)
    config = {
        "mcpServers": {
            "time": {"command": str(Path(sys.executable).parent / "mcp-server-time")},
            "everything": {"command": str(BIN / "mcp-server-everything")},
            "memory": {"command": str(BIN / "mcp-server-memory")},
        },
        "search": {"semantic": False},
    }
    (directory / ".toolscript.json").write_text(json.dumps(config))
    (directory / "dodo.py").write_text(dodo)
    return directory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--against", type=Path, help="a folder with another toolscript package")
    args = parser.parse_args()
    if not (BIN / "mcp-server-everything").exists():
        raise SystemExit(f"{BIN} is missing: run `npm ci` in tests/servers")
    compileall.compile_dir(str(ROOT / "toolscript"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="toolscript-bench-"))
    env = gateway_env(TOOLSCRIPT_HOME=str(work / "home"), TOOLSCRIPT_TRUSTED_PATHS=str(work))
    doit = [sys.executable, "-m", "doit"]
    star = "from toolscript.pipeline.dodo import *  # noqa: F403\n"
    this = project(work / "this", star)
    cases: dict[str, tuple[list[str], Path]] = {
        "python -c pass": ([sys.executable, "-c", "pass"], work),
        "doit": (doit, this),
        "doit list --status": ([*doit, "list", "--status"], this),
    }
    if args.against is not None:
        compileall.compile_dir(str(args.against), quiet=1)
        other = f"import sys; sys.path.insert(0, {str(args.against.resolve())!r})\n" + star
        cases["  doit (against)"] = (doit, project(work / "against", other))
    try:
        for command, cwd in cases.values():  # the first build, then a warm run
            timed(command, env, cwd)
            timed(command, env, cwd)
        wall: dict[str, list[float]] = {name: [] for name in cases}
        cpu: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (command, cwd) in cases.items():
                elapsed, used, out = timed(command, env, cwd)
                if command[-1] == "doit" and ".  " in out:
                    raise SystemExit(f"{name}: a task ran with nothing changed:\n{out}")
                wall[name].append(elapsed)
                cpu[name].append(used)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(wall, cpu, args.runs)


def report(wall: dict[str, list[float]], cpu: dict[str, list[float]], runs: int) -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\n`doit` with nothing changed, {runs} interleaved rounds; load {load:.1f}")
    print(f"{'case (ms)':24}{'min':>7}{'p50':>7}{'max':>7}{'cpu p50':>9}{'/python':>9}")
    python = statistics.median(wall["python -c pass"])
    for name, values in wall.items():
        median = statistics.median(values)
        line = f"{name:24}{min(values):7.0f}{median:7.0f}{max(values):7.0f}"
        line += f"{statistics.median(cpu[name]):9.0f}{median / python:8.1f}x"
        print(line)
    print(f"target: doit p50 <= {TARGET_MS} ms (before this work: 2.8-4 s, every server started)")


if __name__ == "__main__":
    main()
