"""Seconds from an MCP client's disconnect to the stdio face and its whole tree gone.

`toolscript mcp` over stdio, spawned by the `mcp` SDK's own ``stdio_client`` on a project
with mcp-server-time and the fixture server (the face starts a gateway of its own, with a
fresh TOOLSCRIPT_HOME each run); one ``execute`` that calls both servers; then the client
leaves (``stdio_client`` closes the face's stdin; after 2 s it sends SIGTERM, then
SIGKILL). Time zero is the client's leaving; the end is the moment the face, its gateway,
the servers and any sandbox are all gone. Median, min and max against the 1 s target.

``--signals`` measures instead what Claude Code does: SIGINT (then SIGTERM) to a face over
raw JSON-RPC with mcp-server-time, after one ``execute``: seconds to the face's own exit and
to its whole tree gone. ``--old DIR`` runs a checkout of older code in the same rounds
(through PYTHONPATH), paired with this one.

    python bench/face_disconnect.py [--runs 5] [--signals [--old DIR]]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import psutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import gateway_env

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.0
SCRIPT = """import { tools } from "toolscript";
const now = await tools.time.getCurrentTime({ timezone: "Asia/Tokyo" });
const weather = await tools.fx.structured({ city: "Paris" });
return { zone: now.timezone, weather };
"""


def project(directory: Path) -> Path:
    bin_dir = Path(sys.executable).parent
    config = {
        "mcpServers": {
            "time": {"command": str(bin_dir / "mcp-server-time")},
            "fx": {
                "command": sys.executable,
                "args": [str(ROOT / "tests" / "servers" / "fixture_server.py")],
            },
        }
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".toolscript.json").write_text(json.dumps(config))
    return directory


def the_face() -> psutil.Process:
    (face,) = [
        child
        for child in psutil.Process().children()
        if child.cmdline()[1:4] == ["-m", "toolscript", "mcp"]
    ]
    return face


async def one_run(scratch: Path) -> tuple[float, int]:
    """Seconds from the client's leaving to the face's tree gone; how many processes it had."""
    directory = project(scratch / "project")
    env = gateway_env(
        TOOLSCRIPT_HOME=str(scratch / "home"), TOOLSCRIPT_TRUSTED_PATHS=str(directory)
    )
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(directory / ".toolscript.json")],
        cwd=str(directory),
        env=env,
    )
    async with stdio_client(parameters) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("execute", {"code": SCRIPT})
            if result.is_error:
                raise SystemExit(f"execute failed: {result.content}")
            face = the_face()
            processes = [face, *face.children(recursive=True)]
        left = time.perf_counter()  # the session is closed: now the transport's stdin
    # (stdio_client has returned: the face exited, or was signalled after 2 s)
    gone = psutil.wait_procs(processes, timeout=30)[1] == []
    took = time.perf_counter() - left
    if not gone:
        raise SystemExit("the face left processes behind")
    return took, len(processes)


def _rpc(face: subprocess.Popen[bytes], asked: int, method: str, params: dict[str, object]) -> None:
    assert face.stdin is not None and face.stdout is not None
    face.stdin.write(
        json.dumps({"jsonrpc": "2.0", "id": asked, "method": method, "params": params}).encode()
        + b"\n"
    )
    face.stdin.flush()
    for line in face.stdout:
        if json.loads(line).get("id") == asked:
            return
    raise SystemExit("the face closed its stdout")


def one_signal(scratch: Path, stop: signal.Signals, code_dir: str | None) -> tuple[float, float]:
    """Seconds from ``stop`` to the face's exit, and to its whole tree gone."""
    directory = scratch / "project"
    directory.mkdir(parents=True)
    config = {
        "mcpServers": {"time": {"command": str(Path(sys.executable).parent / "mcp-server-time")}}
    }
    (directory / ".toolscript.json").write_text(json.dumps(config))
    env = gateway_env(
        TOOLSCRIPT_HOME=str(scratch / "home"), TOOLSCRIPT_TRUSTED_PATHS=str(directory)
    )
    if code_dir:
        env["PYTHONPATH"] = code_dir
    face = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolscript",
            "mcp",
            "--config",
            str(directory / ".toolscript.json"),
        ],
        cwd=directory,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    client = {"name": "bench", "version": "1"}
    _rpc(
        face,
        1,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
    )
    _rpc(face, 2, "tools/call", {"name": "execute", "arguments": {"code": SIGNAL_SCRIPT}})
    time.sleep(1.0)  # the spare Deno and the checker start after a run
    tree = [psutil.Process(face.pid), *psutil.Process(face.pid).children(recursive=True)]
    sent = time.perf_counter()
    face.send_signal(stop)
    try:
        face.wait(10)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"the face did not exit on {stop.name}") from None
    exited = time.perf_counter() - sent
    if psutil.wait_procs(tree, timeout=30)[1]:
        raise SystemExit("the face left processes behind")
    return exited, time.perf_counter() - sent


SIGNAL_SCRIPT = """import { tools } from "toolscript";
return (await tools.time.getCurrentTime({ timezone: "UTC" })).timezone;
"""


def signals(runs: int, old: str | None) -> None:
    codes = {"this code": str(ROOT), **({"old code": old} if old else {})}
    took: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for run in range(runs):
        for stop in (signal.SIGINT, signal.SIGTERM):
            for label, code_dir in codes.items():
                with tempfile.TemporaryDirectory(prefix="face-signal-") as scratch:
                    seconds = one_signal(Path(scratch), stop, code_dir)
                took.setdefault((stop.name, label), []).append(seconds)
                print(
                    f"run {run + 1} {stop.name} {label}: exit {seconds[0]:.2f} s, tree {seconds[1]:.2f} s",
                    file=sys.stderr,
                )
    print(f"signal to the face's exit / its tree gone, {runs} runs (load {os.getloadavg()[0]:.1f})")
    for (name, label), values in took.items():
        exits, trees = [v[0] for v in values], [v[1] for v in values]
        print(
            f"{name:8} {label:10} exit min {min(exits):.2f} median {statistics.median(exits):.2f} "
            f"max {max(exits):.2f}   tree min {min(trees):.2f} median {statistics.median(trees):.2f} "
            f"max {max(trees):.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--signals", action="store_true", help="SIGINT and SIGTERM, not stdin's end"
    )
    parser.add_argument("--old", help="a checkout of older code, measured in the same rounds")
    args = parser.parse_args()
    if args.signals:
        signals(args.runs, args.old)
        return
    took: list[float] = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="face-disconnect-") as scratch:
            seconds, count = anyio.run(one_run, Path(scratch))
        took.append(seconds)
        print(f"run {run + 1}: {seconds:.2f} s ({count} processes)", file=sys.stderr)
    median = statistics.median(took)
    verdict = "met" if median <= TARGET else "not met"
    print(f"client disconnect to the face's tree gone, {args.runs} runs (target {TARGET:g} s)")
    print(f"min {min(took):.2f}  median {median:.2f}  max {max(took):.2f}   {verdict}")


if __name__ == "__main__":
    main()
