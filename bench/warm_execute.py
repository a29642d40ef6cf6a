"""One script with one tool call through a running gateway, spare sandbox on and off.

(a) the MCP face (`toolscript mcp` over stdio, the SDK's client): one `execute` of a script
    seen before, and of a new one (the warm checker checks it), from the request to the
    result. Target (issue 45): at most FastMCP code mode's (about 40 ms on the issue's
    machine; see bench/peer_codemode.py for it measured here).
(b) `toolscript exec` of a new script, as a process, through the running gateway (exec takes
    a spare only for a script the warm checker has not passed: one checked before has no
    round trip for Deno's start to overlap).

Two faces run side by side, one with spares (the default) and one with
TOOLSCRIPT_NO_SPARE=1; each round calls both, in alternating order, and exec likewise.
Reported: min, median and max per case, and the median of the per-round differences
(spare minus none). The gateway's warm checker is waited for first.

    python bench/warm_execute.py [--runs 41]
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
from exec_overhead import wait_for_checker
from harness import gateway_env, running_gateway
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN = Path(sys.executable).parent
CONFIG = {"mcpServers": {"time": {"command": str(BIN / "mcp-server-time"), "args": []}}}
SEEN = (
    'import { tools } from "toolscript";\n'
    'return (await tools.time.getCurrentTime({ timezone: "UTC" })).timezone;\n'
)


def new_script(number: int) -> str:
    """A script never run before (its copy, and so its check, are new)."""
    return SEEN + f"// {os.getpid()}-{number}\n"


async def face_rounds(project: Path, env: dict[str, str], runs: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    spare_env = env | {"TOOLSCRIPT_NO_SPARE": ""}
    none_env = env | {"TOOLSCRIPT_NO_SPARE": "1"}

    def params(environment: dict[str, str]) -> StdioServerParameters:
        return StdioServerParameters(
            command=str(BIN / "toolscript"), args=["mcp"], cwd=str(project), env=environment
        )

    async with (
        stdio_client(params(spare_env)) as (read_a, write_a),
        ClientSession(read_a, write_a) as spare,
        stdio_client(params(none_env)) as (read_b, write_b),
        ClientSession(read_b, write_b) as none,
    ):
        await spare.initialize()
        await none.initialize()
        faces = {"spare": spare, "none": none}
        for face in faces.values():  # warm-up: the module file, the first spare, the check
            for _ in range(3):
                await face.call_tool("execute", {"code": SEEN})
        counter = 0
        for round_number in range(runs):
            order = list(faces) if round_number % 2 == 0 else list(faces)[::-1]
            for kind in ("seen", "new"):
                for name in order:
                    counter += 1
                    code = SEEN if kind == "seen" else new_script(counter)
                    started = time.perf_counter()
                    result = await faces[name].call_tool("execute", {"code": code})
                    elapsed = time.perf_counter() - started
                    assert not result.is_error, result
                    results.setdefault(f"mcp execute, {kind}, {name}", []).append(elapsed)
                    await anyio.sleep(0.05)  # the next spare spawns after each run
    return results


def exec_rounds(project: Path, env: dict[str, str], runs: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    counter = 0
    for round_number in range(runs + 2):
        order = ["spare", "none"] if round_number % 2 == 0 else ["none", "spare"]
        for name in order:
            counter += 1
            command = [str(BIN / "toolscript"), "exec", new_script(10_000 + counter)]
            environment = env | {"TOOLSCRIPT_NO_SPARE": "" if name == "spare" else "1"}
            started = time.perf_counter()
            subprocess.run(command, cwd=project, env=environment, check=True, capture_output=True)
            if round_number >= 2:  # two rounds of warm-up
                results.setdefault(f"exec, new, {name}", []).append(time.perf_counter() - started)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=41)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toolscript-warm-"))
    project = work / "project"
    home = str(work / "home")
    env = gateway_env(TOOLSCRIPT_HOME=home)
    project.mkdir()
    (project / ".toolscript.json").write_text(json.dumps(CONFIG))
    subprocess.run([str(BIN / "toolscript"), "trust"], cwd=project, env=env, check=True)
    with running_gateway(project, CONFIG, TOOLSCRIPT_HOME=home) as url:
        wait_for_checker(url)
        load_before = os.getloadavg()[0]
        results = anyio.run(face_rounds, project, env, args.runs)
        results |= exec_rounds(project, env, args.runs)
        load_after = os.getloadavg()[0]
    print(
        f"\nthrough a running gateway, {args.runs} rounds (ms); load average {load_before:.1f}"
        f" -> {load_after:.1f} on {os.cpu_count()} cores"
    )
    print(f"{'case':32}{'min':>8}{'p50':>8}{'max':>8}")
    for name, values in results.items():
        print(
            f"{name:32}{min(values) * 1000:8.0f}{statistics.median(values) * 1000:8.0f}"
            f"{max(values) * 1000:8.0f}"
        )
    print("spare minus none, median of the per-round differences (ms):")
    for case in ("mcp execute, seen", "mcp execute, new", "exec, new"):
        spare, none = results[f"{case}, spare"], results[f"{case}, none"]
        paired = statistics.median(a - b for a, b in zip(spare, none, strict=True))
        print(f"  {case:30}{paired * 1000:+8.0f}")


if __name__ == "__main__":
    main()
