"""What `toolscript exec` adds over bare `deno run`, measured side by side in one run.

(a) hello world with --no-check; (b) a never-seen script that imports the client and
calls one tool, with type checking. Targets (issue 5): (a) adds < 150 ms; (b) < 1.2x.
(c) exec with no gateway running (one stdio server configured): `return 1+1`, which
needs no gateway, against the ephemeral gateway the same script started before, and a
tool call through an ephemeral gateway against one through a running gateway.
Target (issue 13): `return 1+1` with no gateway at most 1.5 s.

    python bench/exec_overhead.py [--runs 11]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env, running_gateway

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"failed: {command}\n{result.stderr}")
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    import deno

    deno_bin = str(deno.find_deno_bin())
    work = Path(tempfile.mkdtemp(prefix="toolscript-bench-"))
    config = {
        "mcpServers": {"time": {"command": str(Path(sys.executable).parent / "mcp-server-time")}}
    }
    base_env = gateway_env(TOOLSCRIPT_HOME=str(work / "home"))
    with running_gateway(work, config) as url:
        measure(url, work, base_env, deno_bin, args.runs)
        measure_without_gateway(url, work, config, base_env, min(args.runs, 5))


def measure_without_gateway(
    url: str, work: Path, config: dict[str, object], base_env: dict[str, str], runs: int
) -> None:
    """Case (c): a project whose gateway is not running."""
    import json

    project = work / "no-gateway"
    project.mkdir()
    (project / ".toolscript.json").write_text(json.dumps(config))
    toolscript = [sys.executable, "-m", "toolscript", "exec"]
    call = 'import { tools } from "toolscript";\nreturn (await tools.time.getCurrentTime({ timezone: "UTC" })).timezone;\n'
    cases = {
        "return 1+1, no gateway": ("return 1+1", base_env),
        # Naming the module makes exec start the ephemeral gateway, as every exec did before.
        "return 1+1, ephemeral gateway": ('return 1+1; // "toolscript"', base_env),
        "tool call, ephemeral gateway": (call, base_env),
        "tool call, running gateway": (call, {**base_env, "TOOLSCRIPT_GATEWAY_URL": url}),
    }
    results: dict[str, list[float]] = {name: [] for name in cases}
    for code, env in cases.values():  # warm: Deno's check cache, the module file
        timed([*toolscript, code], env, project)
    for _ in range(runs):
        for name, (code, env) in cases.items():
            results[name].append(timed([*toolscript, code], env, project))
    print(f"\nexec with no gateway running, {runs} runs each, interleaved (ms)")
    print(f"{'case':32}{'min':>8}{'p50':>8}{'max':>8}")
    for name, values in results.items():
        print(f"{name:32}{min(values):8.0f}{statistics.median(values):8.0f}{max(values):8.0f}")
    median = {name: statistics.median(values) for name, values in results.items()}
    print(
        f"(c) return 1+1 with no gateway: {median['return 1+1, no gateway']:.0f} ms (target <= 1500 ms), "
        f"{median['return 1+1, ephemeral gateway'] / median['return 1+1, no gateway']:.1f}x faster "
        "than starting a gateway for it"
    )
    print(
        "(c) a tool call through an ephemeral gateway / through a running one: "
        f"{median['tool call, ephemeral gateway'] / median['tool call, running gateway']:.1f}x"
    )


def measure(url: str, work: Path, base_env: dict[str, str], deno_bin: str, runs: int) -> None:
    host = url.split("/")[2]
    toolscript_env = {**base_env, "TOOLSCRIPT_GATEWAY_URL": url}
    deno_env = {"DENO_DIR": str(work / "deno"), "NO_COLOR": "1", "TOOLSCRIPT_GATEWAY_URL": url}
    toolscript = [sys.executable, "-m", "toolscript", "exec"]
    hello = work / "hello.ts"
    hello.write_text('console.log("hello");\n')
    call = 'import { tools } from "MODULE";\nconst now = await tools.time.getCurrentTime({ timezone: "UTC" });\nconsole.log(now.timezone); // RUN\n'
    results: dict[str, list[float]] = {
        k: [] for k in ("a bare deno", "a toolscript", "b bare deno", "b toolscript")
    }
    # warm both caches (the module download, the Deno binary) before measuring
    timed([*toolscript, "--no-check", 'console.log("warm")'], toolscript_env, work)
    timed([deno_bin, "run", "--no-check", str(hello)], deno_env, work)
    for _ in range(runs):
        results["a bare deno"].append(
            timed([deno_bin, "run", "--no-check", str(hello)], deno_env, work)
        )
        results["a toolscript"].append(
            timed([*toolscript, "--no-check", 'console.log("hello");'], toolscript_env, work)
        )
        unique = uuid.uuid4().hex
        bare = work / f"bare-{unique}.ts"
        bare.write_text(call.replace("MODULE", f"{url}/runtime/tools.ts").replace("RUN", unique))
        results["b bare deno"].append(
            timed(
                [
                    deno_bin,
                    "run",
                    "--check",
                    f"--allow-import={host}",
                    f"--allow-net={host}",
                    str(bare),
                ],
                deno_env,
                work,
            )
        )
        ours = call.replace("MODULE", "toolscript").replace("RUN", uuid.uuid4().hex)
        results["b toolscript"].append(timed([*toolscript, ours], toolscript_env, work))
    print(f"exec overhead, {runs} runs each, interleaved (ms)")
    print(f"{'case':16}{'min':>8}{'p50':>8}{'max':>8}")
    for name, values in results.items():
        print(f"{name:16}{min(values):8.0f}{statistics.median(values):8.0f}{max(values):8.0f}")
    added = statistics.median(results["a toolscript"]) - statistics.median(results["a bare deno"])
    ratio = statistics.median(results["b toolscript"]) / statistics.median(results["b bare deno"])
    print(f"(a) toolscript adds {added:.0f} ms over bare deno (target < 150 ms)")
    print(f"(b) toolscript / bare deno --check: {ratio:.2f}x (target < 1.2x)")


if __name__ == "__main__":
    main()
