"""Seconds from an MCP client's disconnect to the stdio face and its whole tree gone.

`toolscript mcp` over stdio, spawned by the `mcp` SDK's own ``stdio_client`` on a project
with mcp-server-time and the fixture server (the face starts a gateway of its own, with a
fresh TOOLSCRIPT_HOME each run); one ``execute`` that calls both servers; then the client
leaves (``stdio_client`` closes the face's stdin; after 2 s it sends SIGTERM, then
SIGKILL). Time zero is the client's leaving; the end is the moment the face, its gateway,
the servers and any sandbox are all gone. Median, min and max against the 1 s target.

    python bench/face_disconnect.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
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
