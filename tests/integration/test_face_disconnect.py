"""A stdio face whose client leaves exits by itself, with its gateway and servers: the
`mcp` SDK's client closes the face's stdin and sends SIGTERM only to a face still there
after its grace (issue 45: client disconnect to exit)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import psutil
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers import argv, clean_env, fixture_server, python_bin

# Runs the face as its child, with the same stdin and stdout, and writes down what
# happened to it: every SIGTERM it was sent (passed on), and the face's exit code.
RECORDER = """
import signal, subprocess, sys

record, command = sys.argv[1], sys.argv[2:]
face = subprocess.Popen(command)

def passed_on(signum, frame):
    with open(record, "a") as out:
        out.write("SIGTERM\\n")
    face.send_signal(signum)

signal.signal(signal.SIGTERM, passed_on)
code = face.wait()
with open(record, "a") as out:
    out.write(f"exit {code}\\n")
sys.exit(code)
"""

SCRIPT = """import { tools } from "toolscript";
const now = await tools.time.getCurrentTime({ timezone: "Asia/Tokyo" });
const weather = await tools.fx.structured({ city: "Paris" });
return { zone: now.timezone, city: (weather as { city: string }).city };
"""


def test_a_face_whose_client_left_exits_by_itself_with_its_tree(tmp_path: Path) -> None:
    directory = tmp_path / "project"
    directory.mkdir()
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time")},
            "fx": fixture_server(),
        }
    }
    (directory / ".toolscript.json").write_text(json.dumps(config))
    recorder, record = tmp_path / "recorder.py", tmp_path / "record"
    recorder.write_text(RECORDER)
    env = clean_env(TOOLSCRIPT_LOG_LEVEL="WARNING", TOOLSCRIPT_HOME=str(tmp_path / "home"))
    face_command = [sys.executable, "-m", "toolscript", "mcp", "--config"]
    parameters = StdioServerParameters(
        command=sys.executable,
        args=[str(recorder), str(record), *face_command, str(directory / ".toolscript.json")],
        cwd=str(directory),
        env=env,
    )
    seen: list[psutil.Process] = []
    commands: list[str] = []

    async def client() -> None:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ran = await session.call_tool("execute", {"code": SCRIPT})
            assert not ran.is_error, ran.content
            assert ran.structured_content == {"result": {"zone": "Asia/Tokyo", "city": "Paris"}}
            (wrapper,) = [
                child for child in psutil.Process().children() if str(recorder) in argv(child)
            ]
            seen.extend(wrapper.children(recursive=True))
            commands.extend(" ".join(argv(p)) for p in seen)
        # the client has left: stdin closed, and SIGTERM to a face still there after 2 s

    anyio.run(client)
    assert any(" -m toolscript mcp " in command for command in commands), commands
    # its gateway runs in its own process (tests/integration/test_face_gateway_in_process.py)
    assert not any(" -m toolscript gateway" in command for command in commands), commands
    assert any("mcp-server-time" in command for command in commands), commands
    _, alive = psutil.wait_procs(seen, timeout=30)
    for leftover in alive:
        leftover.kill()
    assert alive == [], "the face left processes behind"
    # the face exited by itself (0), before the SDK's client needed to send SIGTERM
    assert record.read_text().splitlines() == ["exit 0"]
