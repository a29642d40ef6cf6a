"""The warm checker's CPU: `deno lsp` to ready and per check, variants interleaved.

A gateway (one server, `mcp-server-time`; or `--tools N` of the corpus's synthetic tools)
builds the module; then, per round and variant, a `WarmChecker` starts on it, checks
`--checks` new scripts (every fifth with a type error), and is stopped. Printed: seconds to
ready, the server's CPU to ready (psutil, its children's included) and split by the start's
diagnostics (the module's, the warm-up script's), the median CPU of a check, the CPU after
the checks, RSS, and whether every variant gave the same verdicts. Each variant sets the
checker's `DENO_V8_FLAGS` (the user's flags, which win over `LEAN_V8`) and/or adds to the
settings it gives `deno lsp`:

    python bench/checker_start.py [--rounds 3] [--tools 40] \\
        [--variant 'old={"v8": "--no-maglev"}'] [--variant 'preload={"settings": {...}}']
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import synthetic_servers
from harness import running_gateway

import toolscript.gateway.checker as checker_module

SERVER = Path(__file__).resolve().parent / "search" / "corpus_server.py"
SCRIPTS = {
    "time": 'import { tools } from "toolscript";\nconst tag = {n};\n'
    'export const r = [tag, (await tools.time.getCurrentTime({ timezone: "UTC" })).timezone];\n',
    "corpus": 'import { tools } from "toolscript";\nexport const n = Object.keys(tools).length + {n};\n',
}
WRONG = 'const wrong: number = "x";\n'

_START = checker_module._LanguageServer.start.__func__  # type: ignore[attr-defined]
_DIAGNOSE = checker_module.WarmChecker._diagnose
STAGES: list[tuple[str, float]] = []  # (document, CPU) of the start under way


def cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its children (reaped ones included)."""
    try:
        process = psutil.Process(pid)
        times = process.cpu_times()
        total = times.user + times.system + times.children_user + times.children_system
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                child_times = child.cpu_times()
                total += child_times.user + child_times.system
        return total
    except psutil.NoSuchProcess:
        return float("nan")


def use(variant: dict[str, Any]) -> None:
    """The checker started from now on runs with ``variant``'s flags and settings."""
    settings = variant.get("settings") or {}

    async def start(cls: Any, root: Path, given: dict[str, Any]) -> Any:
        return await _START(cls, root, {**given, **settings})

    async def diagnose(self: Any, server: Any, uri: str, text: str, *a: Any, **k: Any) -> Any:
        before = cpu(server.process.pid)
        try:
            return await _DIAGNOSE(self, server, uri, text, *a, **k)
        finally:
            if self.state != "ready":
                STAGES.append((uri.rsplit("/", 1)[-1][:12], cpu(server.process.pid) - before))

    checker_module._LanguageServer.start = classmethod(start)  # type: ignore[method-assign,assignment]
    checker_module.WarmChecker._diagnose = diagnose  # type: ignore[method-assign]
    if variant.get("v8") is not None:
        os.environ["DENO_V8_FLAGS"] = variant["v8"]
    else:
        os.environ.pop("DENO_V8_FLAGS", None)


async def one(
    variant: dict[str, Any], module_hash: str, module: bytes, script: str, checks: int
) -> dict[str, Any]:
    from toolscript.plumbing.paths import module_cache_file

    use(variant)
    checker = checker_module.WarmChecker()
    checker.module_changed(module_hash, module)
    started = time.perf_counter()
    task = asyncio.create_task(checker.run())
    while checker.state != "ready":
        if checker.state == "failed":
            raise SystemExit(f"the checker failed: {checker.error}")
        await asyncio.sleep(0.005)
    out: dict[str, Any] = {"ready": time.perf_counter() - started}
    pid = checker.pid
    assert pid is not None
    out["cpu_ready"] = cpu(pid)
    out["stages"] = " ".join(f"{name} {used:.2f}" for name, used in STAGES)
    STAGES.clear()
    each, verdicts = [], []
    for number in range(checks):
        code = script.replace("{n}", str(time.time_ns())) + (WRONG if number % 5 == 4 else "")
        before = cpu(pid)
        verdict = await checker.check(
            code, "/bench/script.ts", str(module_cache_file(module_hash)), module_hash
        )
        each.append((cpu(pid) - before) * 1000)
        verdicts.append(verdict.status)
    await asyncio.sleep(0.5)
    out["cpu_after"] = cpu(pid)
    out["check_ms"] = statistics.median(each)
    out["rss"] = psutil.Process(pid).memory_info().rss / 1e6
    out["verdicts"] = verdicts
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return out


def config(tools: int, work: Path) -> tuple[dict[str, Any], str]:
    if not tools:
        time_server = str(Path(sys.executable).parent / "mcp-server-time")
        return {"mcpServers": {"time": {"command": time_server}}}, SCRIPTS["time"]
    servers: dict[str, Any] = {}
    for name, listed in synthetic_servers(max(1, tools // 40), min(tools, 40)).items():
        path = work / f"{name}.json"
        path.write_text(json.dumps(listed))
        servers[name] = {"command": sys.executable, "args": [str(SERVER), str(path)]}
    return {"mcpServers": servers}, SCRIPTS["corpus"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--checks", type=int, default=10)
    parser.add_argument("--tools", type=int, default=0, help="synthetic tools (0: one server)")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help='NAME={"v8": "...", "settings": {...}}; "this" (the code as it is) always runs',
    )
    args = parser.parse_args()
    variants: dict[str, dict[str, Any]] = {"this": {}}
    for given in args.variant:
        name, _, spec = given.partition("=")
        variants[name] = json.loads(spec)
    work = Path(tempfile.mkdtemp(prefix="toolscript-checker-"))
    os.environ["TOOLSCRIPT_HOME"] = str(work / "home")
    try:
        chosen, script = config(args.tools, work)
        chosen["search"] = {"semantic": False}
        with running_gateway(work / "project", chosen, TOOLSCRIPT_HOME=str(work / "home")) as url:
            module = urlopen(url + "/runtime/tools.ts").read()
            found = json.loads(urlopen(url + "/runtime/hash").read())
        module_hash = found["hash"] if isinstance(found, dict) else found
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
        for number in range(args.rounds + 1):  # the first: Deno's caches, the disk
            for name, variant in variants.items():
                out = asyncio.run(one(variant, module_hash, module, script, args.checks))
                print(
                    f"{name:12} ready {out['ready']:.2f} s, CPU {out['cpu_ready']:.2f} s "
                    f"({out['stages']}), a check {out['check_ms']:.0f} ms, after the checks "
                    f"{out['cpu_after']:.2f} s, {out['rss']:.0f} MB; load "
                    f"{os.getloadavg()[0]:.1f}",
                    file=sys.stderr,
                )
                if number:
                    results[name].append(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    size = f"{args.tools} tools" if args.tools else "one server"
    print(f"\n{args.rounds} rounds, {size}; min / p50 / max")
    first = None
    for name, rounds in results.items():

        def spread(key: str, rounds: list[dict[str, Any]] = rounds) -> str:
            values = [out[key] for out in rounds]
            return " / ".join(f"{f(values):.2f}" for f in (min, statistics.median, max))

        print(
            f"{name:12} ready {spread('ready')} s | CPU to ready {spread('cpu_ready')} s | "
            f"a check {spread('check_ms')} ms | after the checks {spread('cpu_after')} s | "
            f"RSS {spread('rss')} MB"
        )
        verdicts = [out["verdicts"] for out in rounds]
        first = verdicts if first is None else first
        if verdicts != first:
            print(f"  {name}: verdicts differ from the first variant's: {verdicts}")


if __name__ == "__main__":
    main()
