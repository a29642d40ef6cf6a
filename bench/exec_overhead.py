"""What `toolscript exec` adds over bare `deno run`, measured side by side in one run.

(a) hello world with --no-check; (b) a never-seen script that imports the client and
calls one tool, with type checking. Targets (issue 5): (a) adds < 150 ms; (b) < 1.2x.
(c) exec with no gateway running (one stdio server configured): `return 1+1`, which
needs no gateway, against the ephemeral gateway the same script started before, and a
tool call through an ephemeral gateway against one through a running gateway.
Target (issue 13): `return 1+1` with no gateway at most 1.5 s.
(d) cases (a) and (b) by catalogue size: one small server, and the same server beside the
113 corpus servers (about 1,600 tools, as bench/search_quality.py serves them); exec's
check is the gateway's warm checker's. Targets (issue 17): the checked script through
exec at most 250 ms p50 at 1,600 tools and 200 ms with one small server; hello world within
150 ms of bare Deno.

The package is byte-compiled first, as `pip install` does (a checkout run with
PYTHONDONTWRITEBYTECODE compiles every module on every run).

    python bench/exec_overhead.py [--runs 11] [--skip-large] [--baseline OTHER_CHECKOUT]

With ``--baseline``, toolscript's cases run a second time in each round with another
checkout's code (on PYTHONPATH, same gateway): old against new, paired.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env, running_gateway
from search_quality import corpus_config, corpus_files

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
    parser.add_argument("--skip-large", action="store_true", help="no 1,600-tool catalogue")
    parser.add_argument(
        "--baseline", default="", help="another toolscript checkout, run beside (PYTHONPATH)"
    )
    args = parser.parse_args()
    import compileall

    import deno

    compileall.compile_dir(str(ROOT / "toolscript"), quiet=1)

    deno_bin = str(deno.find_deno_bin())
    work = Path(tempfile.mkdtemp(prefix="toolscript-bench-"))
    config: dict[str, Any] = {
        "mcpServers": {"time": {"command": str(Path(sys.executable).parent / "mcp-server-time")}},
        "search": {"semantic": False},  # no embedding work competing for the CPU meanwhile
    }
    base_env = gateway_env(TOOLSCRIPT_HOME=str(work / "home"), TOOLSCRIPT_TRUSTED_PATHS=str(work))
    catalogues: dict[str, dict[str, list[float]]] = {}
    with running_gateway(work, config) as url:
        wait_for_checker(url)
        catalogues["1 server"] = measure(url, work, base_env, deno_bin, args.runs, args.baseline)
        measure_without_gateway(url, work, config, base_env, min(args.runs, 5))
    if not args.skip_large:
        large = corpus_config(corpus_files("all"), 0.5)
        large["mcpServers"].update(config["mcpServers"])
        large["search"]["semantic"] = False
        with running_gateway(work / "large", large) as url:
            wait_for_checker(url)
            name = f"{tool_count(url)} tools"
            catalogues[name] = measure(url, work, base_env, deno_bin, args.runs, args.baseline)
    report(catalogues, args.runs)


def wait_for_checker(url: str, timeout: float = 300) -> None:
    """Measure once the gateway's warm checker is ready (it warms up in the background)."""
    import json
    from urllib.request import urlopen

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = json.loads(urlopen(f"{url}/health").read())["checker"]["state"]
        if state == "ready":
            return
        time.sleep(0.5)
    raise SystemExit("the gateway's type checker never got ready")


def tool_count(url: str) -> int:
    import json
    from urllib.request import urlopen

    return int(json.loads(urlopen(f"{url}/health").read())["tools"])


CASES = ("hello: bare deno", "hello: toolscript", "checked: bare deno", "checked: toolscript")
BASELINE_CASES = ("hello: baseline", "checked: baseline")


def measure(
    url: str, work: Path, base_env: dict[str, str], deno_bin: str, runs: int, baseline: str = ""
) -> dict[str, list[float]]:
    """Cases (a), (b) and (d) for the catalogue ``url`` serves: interleaved runs, in ms."""
    host = url.split("/")[2]
    toolscript_env = {**base_env, "TOOLSCRIPT_GATEWAY_URL": url}
    deno_env = {"DENO_DIR": str(work / "deno"), "NO_COLOR": "1", "TOOLSCRIPT_GATEWAY_URL": url}
    toolscript = [sys.executable, "-m", "toolscript", "exec"]
    hello = work / "hello.ts"
    hello.write_text('console.log("hello");\n')
    call = 'import { tools } from "MODULE";\nconst now = await tools.time.getCurrentTime({ timezone: "UTC" });\nconsole.log(now.timezone); // RUN\n'
    bare_run = [deno_bin, "run", "--check", f"--allow-import={host}", f"--allow-net={host}"]
    results: dict[str, list[float]] = {case: [] for case in CASES}
    sides = [("toolscript", toolscript_env)]
    if baseline:
        sides.append(("baseline", {**toolscript_env, "PYTHONPATH": baseline}))
        results.update({case: [] for case in BASELINE_CASES})
    # warm: the module download and its transpiled form in both caches, the Deno binary
    warm = work / f"warm-{uuid.uuid4().hex}.ts"
    warm.write_text(call.replace("MODULE", f"{url}/runtime/tools.ts").replace("RUN", "warm"))
    timed([*bare_run, str(warm)], deno_env, work)
    timed(
        [*toolscript, call.replace("MODULE", "toolscript").replace("RUN", "warm")],
        toolscript_env,
        work,
    )
    for _ in range(runs):
        results["hello: bare deno"].append(
            timed([deno_bin, "run", "--no-check", str(hello)], deno_env, work)
        )
        for side, env in sides:
            results[f"hello: {side}"].append(
                timed([*toolscript, "--no-check", 'console.log("hello");'], env, work)
            )
        bare = work / f"bare-{uuid.uuid4().hex}.ts"
        bare.write_text(
            call.replace("MODULE", f"{url}/runtime/tools.ts").replace("RUN", uuid.uuid4().hex)
        )
        results["checked: bare deno"].append(timed([*bare_run, str(bare)], deno_env, work))
        for side, env in sides:
            ours = call.replace("MODULE", "toolscript").replace("RUN", uuid.uuid4().hex)
            results[f"checked: {side}"].append(timed([*toolscript, ours], env, work))
    return results


def report(catalogues: dict[str, dict[str, list[float]]], runs: int) -> None:
    """min / p50 / max of every case per catalogue, then each target's line."""
    print(f"\nexec overhead by catalogue, {runs} interleaved runs each (ms: min p50 max)")
    print(f"{'case':22}" + "".join(f"{name:>22}" for name in catalogues))
    for case in [*CASES, *(c for c in BASELINE_CASES if c in next(iter(catalogues.values())))]:
        cells = (
            f"{min(v):6.0f}{statistics.median(v):8.0f}{max(v):8.0f}"
            for v in (results[case] for results in catalogues.values())
        )
        print(f"{case:22}" + "".join(cells))
    medians = {
        name: {case: statistics.median(values) for case, values in results.items()}
        for name, results in catalogues.items()
    }
    small = medians["1 server"]
    added = small["hello: toolscript"] - small["hello: bare deno"]
    ratio = small["checked: toolscript"] / small["checked: bare deno"]
    print(f"(a) toolscript adds {added:.0f} ms over bare deno (target < 150 ms)")
    print(f"(b) toolscript / bare deno --check: {ratio:.2f}x (target < 1.2x)")
    for name, found in medians.items():
        target = 200 if name == "1 server" else 250
        checked = found["checked: toolscript"]
        added = found["hello: toolscript"] - found["hello: bare deno"]
        print(
            f"(d) {name}: checked new script {checked:.0f} ms (target <= {target}), "
            f"{found['checked: bare deno'] / checked:.1f}x faster than bare deno check + run; "
            f"hello world adds {added:.0f} ms over bare deno (target < 150)"
        )


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


if __name__ == "__main__":
    main()
