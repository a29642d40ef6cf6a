"""An agent's first hour with a shell: what it reads from the CLI while it finds tools,
writes scripts and meets errors, on real servers (the fixture server, the time server and
the reference filesystem server) through one shared gateway.

Each test asserts what the agent is told, as the CLI prints it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers import (
    GatewayProcess,
    clean_env,
    fixture_server,
    node_server,
    python_bin,
    toolscript_cli,
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("agent-project")
    (directory / "data").mkdir()
    (directory / "data" / "notes.txt").write_text("first\nsecond\n")
    config = {
        "mcpServers": {
            "fx": fixture_server(),
            "time": {"command": python_bin("mcp-server-time")},
            "fs": {
                "command": node_server("mcp-server-filesystem"),
                "args": [str(directory / "data")],
            },
        },
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(config, directory, env={"TOOLSCRIPT_HOME": str(directory / "home")})
    yield directory
    assert gateway.stop() == []


def run(project: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return toolscript_cli(
        *args, cwd=project, env={"TOOLSCRIPT_HOME": str(project / "home")}, stdin=stdin
    )


def through_the_face(
    project: Path, *calls: tuple[str, dict[str, Any]], linked: dict[str, str] | None = None
) -> list[Any]:
    """What `toolscript mcp` answers the calls, in one session of a client; with ``linked``,
    the text of each resource the answers link to goes in it, by URI (read in that session)."""

    async def session_work() -> list[Any]:
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-m", "toolscript", "mcp"],
            cwd=str(project),
            env=clean_env(TOOLSCRIPT_HOME=str(project / "home")),
        )
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
            for result in results if linked is not None else ():
                for link in result.content:
                    if link.type == "resource_link":
                        whole = await session.read_resource(link.uri)
                        texts = (getattr(part, "text", "") for part in whole.contents)
                        linked[str(link.uri)] = "".join(texts)
            return results

    return anyio.run(session_work)


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def test_get_types_takes_the_several_tools_a_script_will_call(project: Path) -> None:
    """An agent about to chain two tools of a server asked for both at once and was told
    "Got unexpected extra argument": it had to run get-types once per tool, or read every
    tool of the server. Several tools, of one server or named server.tool, come in one
    answer with one example calling each."""
    both = run(project, "get-types", "fx", "fail", "structured")
    assert both.returncode == 0, both.stderr
    assert "fail(" in both.stdout and "structured(" in both.stdout
    assert "sleep(" not in both.stdout  # only what was asked
    assert both.stdout.count("await tools.fx.") == 2

    mixed = run(project, "get-types", "fx.structured", "time.convert_time", "--json")
    assert mixed.returncode == 0, mixed.stderr
    named = [(t["server"], t["tool"]) for t in json.loads(mixed.stdout)["tools"]]
    assert named == [("fx", "structured"), ("time", "convert_time")]

    wrong = run(project, "get-types", "fx", "structured", "nope")
    assert wrong.returncode == 1
    assert "tool not found: fx.nope" in wrong.stderr and "toolscript list-tools fx" in wrong.stderr


def test_search_puts_the_filesystem_servers_deprecated_reader_after_its_replacement(
    project: Path,
) -> None:
    """ "read a file" found read_file first ("DEPRECATED: Use read_text_file instead."): the
    agent read its types and wrote its first script against the tool it was told not to use."""
    found = run(project, "search", "read a file", "--server", "fs", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    tools = [hit["tool"] for hit in hits]
    assert tools.index("read_text_file") < tools.index("read_file")
    assert [hit["tool"] for hit in hits if hit.get("deprecated")] == ["read_file"]

    # The face shows a hit's first sentence: "Read the complete contents of a file as
    # text." for both, where the second sentence said which one not to use.
    (answer,) = through_the_face(
        project, ("search_tools", {"query": "read a file", "server": "fs", "limit": 5})
    )
    named = {line.split(" ", 1)[0]: line for line in text(answer).splitlines()}
    assert list(named).index("fs.read_text_file") < list(named).index("fs.read_file")
    assert named["fs.read_file"].endswith("as text. (deprecated)")
    assert not named["fs.read_text_file"].endswith("(deprecated)")


WRONG_NAMES = """import { tools } from "toolscript";
const now = await tools.time.getCurrentTime({ tz: "Asia/Tokyo" });
const later = await tools.time.addHours({ hours: 2 });
return now.time;
"""


def test_a_type_error_lists_the_members_of_the_tools_type(project: Path) -> None:
    """A first script guessed a parameter (tz) and a result field (time): the errors named
    TimeGetCurrentTimeParams and TimeGetCurrentTimeResult, types the agent had never read,
    and it ran get-types to learn what they hold. Each error lists them, in the CLI and
    through the MCP face."""
    ran = run(project, "exec", "-", stdin=WRONG_NAMES)
    assert ran.returncode == 1
    assert "type 'TimeGetCurrentTimeParams' (members: timezone)" in ran.stderr
    assert (
        "type 'TimeGetCurrentTimeResult' (members: timezone, datetime, day_of_week, is_dst)"
        in ran.stderr
    )
    assert "type 'TimeTools' (members: convertTime, getCurrentTime)" in ran.stderr

    untyped = run(
        project,
        "exec",
        'import { tools } from "toolscript"; const r = await tools.fx.multiText({}); return r?.a',
    )
    assert untyped.returncode == 1
    assert "(a ToolResult: the tool declares no result type. Return its result" in untyped.stderr

    (answer,) = through_the_face(project, ("execute", {"code": WRONG_NAMES}))
    assert answer.is_error
    assert "type 'TimeGetCurrentTimeParams' (members: timezone)" in text(answer)


BIG_RESULT = """return Array.from({ length: 8000 }, (_, i) => ({ id: i, name: `item ${i}` }));"""


def test_the_faces_answer_fits_what_a_client_takes_and_the_rest_is_a_resource(
    project: Path,
) -> None:
    """A script returning 250 KB (8,000 records) came back whole through the face: 60,000
    tokens into the model's context, which Claude Code refuses past 25,000 (or puts in a
    file past 50,000 characters). The answer holds at most 32,000 bytes and a preview, and
    names the resource that holds the whole output."""

    linked: dict[str, str] = {}
    (answer,) = through_the_face(project, ("execute", {"code": BIG_RESULT}), linked=linked)
    uri = re.search(r"toolscript://runs/[\w-]+/output", text(answer))
    assert uri is not None, text(answer)[:500]
    whole = linked[uri[0]]
    assert not answer.is_error
    assert len(text(answer)) < 50_000
    assert "passed the 32000-byte cap" in text(answer)
    records = json.loads(whole.strip().splitlines()[-1])
    assert len(records) == 8000 and records[-1] == {"id": 7999, "name": "item 7999"}

    # what fit (printed lines up to the cap) and the preview together, too
    printed_first = f'for (let i = 0; i < 600; i++) console.log("x".repeat(50));\n{BIG_RESULT}'
    (answer,) = through_the_face(project, ("execute", {"code": printed_first}))
    assert "passed the 32000-byte cap" in text(answer)
    assert 30_000 < len(text(answer)) < 50_000


def test_the_face_lets_a_script_log_past_the_cap_and_shows_the_error_it_ends_with(
    project: Path,
) -> None:
    """Stderr shared the face's 32,000-byte cap and stopped the script past it ("print
    less"), where exec lets it log: now its first part and its end (the error) are shown,
    with how much was cut between, and the whole is a resource."""
    code = (
        'for (let i = 0; i < 2000; i++) console.error(`log line ${i} ` + "-".repeat(60));\n'
        'throw new Error("the failure at the end");'
    )
    linked: dict[str, str] = {}
    (answer,) = through_the_face(project, ("execute", {"code": code}), linked=linked)
    shown = text(answer)
    assert answer.is_error
    assert "stopped at a limit" not in shown and "print less" not in shown
    assert "The script failed (exit code 1)" in shown
    assert "log line 0 " in shown and "the failure at the end" in shown
    assert "log line 1999 " in shown and "log line 1000 " not in shown
    uri = re.search(r"the resource (toolscript://runs/[\w-]+/errors)", shown)
    assert uri is not None, shown[-2000:]
    assert re.search(r"\[\d+ bytes of the \d+ the script printed to stderr are left out", shown)
    assert len(shown) < 50_000
    whole = linked[uri[1]]
    assert all(f"log line {i} " in whole for i in (0, 1000, 1999))
    assert "the failure at the end" in whole


def test_saving_a_script_without_a_description_says_search_finds_it_by_name_alone(
    project: Path,
) -> None:
    """A script saved without a description showed as an empty line among search's hits, and
    a later session asking in other words ("the time in several cities") did not find it:
    nothing at saving said so."""
    body = (
        'import { tools } from "toolscript";\n'
        "export default async function ({ zones }: { zones: string[] }) {\n"
        "  return await Promise.all(zones.map((timezone) => tools.time.getCurrentTime({ timezone })));\n"
        "}\n"
    )
    (project / "clock.ts").write_text(body)
    bare = run(project, "save", "worldClock", "clock.ts")
    assert bare.returncode == 0, bare.stderr
    assert "no description: search finds it by its name alone" in bare.stdout

    (project / "clock.ts").write_text("/** The time now in several time zones. */\n" + body)
    described = run(project, "save", "worldClock", "clock.ts", "--force")
    assert described.returncode == 0, described.stderr
    assert "no description" not in described.stdout

    (answer,) = through_the_face(project, ("save_script", {"name": "zoneClock", "code": body}))
    assert not answer.is_error, text(answer)
    assert "no description: search finds it by its name alone" in text(answer)
