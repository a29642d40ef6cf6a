"""`toolscript mcp` with a project config it cannot use: it serves all the same, and each
tool call answers what the CLI would print (file:line:column, field, hint), until the file
is fixed; a config broken while the face runs is reported the same way, never an exit."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers import python_bin
from tests.integration.test_mcp_face import config_of, execute, face_env, faces, text

TIME = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
# mcpServers.time.command is at 1:37 of this line
WRONG_TYPE = '{"mcpServers": {"time": {"command": 5}}}'
CLOCK = 'import { tools } from "toolscript";\nreturn (await tools.time.getCurrentTime({ timezone: "Asia/Tokyo" })).timezone;'


def write(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = config_of(directory)
    path.write_text(text)
    return path


def touch_later(path: Path, text: str) -> None:
    """Write ``text`` with a modification time another second on: a fingerprint that differs
    even where the file system's clock is coarse."""
    stat = path.stat()
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


async def open_face(directory: Path, home: Path, session_work: Any) -> Any:
    """Run ``session_work(session, initialized)`` against a stdio face in ``directory``."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp"],
        cwd=str(directory),
        env=face_env(home),
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        return await session_work(session, initialized)


def assert_config_error(result: Any, path: Path, where: str, field: str) -> None:
    said = text(result)
    assert result.is_error, said
    assert f"{path}:{where}: {field}" in said, said
    assert "hint: the schema is printed by `toolscript config schema`" in said, said
    assert "the next tool call reads it again" in said, said


def test_a_config_broken_at_the_start_is_served_and_answered_until_it_is_fixed(
    tmp_path: Path,
) -> None:
    directory, home = tmp_path / "project", tmp_path / "home"
    path = write(directory, WRONG_TYPE)

    async def session_work(session: ClientSession, initialized: Any) -> None:
        assert "config cannot be used yet" in (initialized.instructions or "")
        assert len((await session.list_tools()).tools) == 8
        ran = await execute(session, CLOCK)
        assert_config_error(ran, path, "1:37", "mcpServers.time.command")
        assert "expected string, got integer" in text(ran)
        found = await session.call_tool("search_tools", {"query": "current time"})
        assert_config_error(found, path, "1:37", "mcpServers.time.command")

        touch_later(path, json.dumps(TIME))  # the user fixes it: no restart of the client
        ran = await execute(session, CLOCK)
        assert not ran.is_error, text(ran)
        assert ran.structured_content == {"result": "Asia/Tokyo"}

    anyio.run(open_face, directory, home, session_work)


def test_broken_json_and_unknown_keys_are_answered_with_their_place(tmp_path: Path) -> None:
    directory, home = tmp_path / "project", tmp_path / "home"
    path = write(directory, '{"mcpServers": {\n')

    async def session_work(session: ClientSession, initialized: Any) -> None:
        broken = await session.call_tool("list_servers", {})
        said = text(broken)
        assert broken.is_error and f"{path}:2:1: invalid JSON" in said, said
        assert "hint: fix the JSON syntax at that position" in said

        # A key with a terminal's escape in its name: shown, never obeyed.
        touch_later(path, '{"mcpServers": {}, "bogus\\u001b[2J": 1}')
        unknown = await session.call_tool("get_types", {"tools": ["time"]})
        said = text(unknown)
        assert unknown.is_error and f"{path}:1:20: " in said and "unknown key" in said, said
        assert "\x1b" not in said and "\\x1b[2J" in said, said

    anyio.run(open_face, directory, home, session_work)


def test_a_config_broken_while_the_face_runs_is_answered_and_the_face_serves_on(
    tmp_path: Path,
) -> None:
    directory, home = tmp_path / "project", tmp_path / "home"
    path = write(directory, json.dumps(TIME))

    async def session_work(session: ClientSession, initialized: Any) -> None:
        assert "config cannot be used" not in (initialized.instructions or "")
        ran = await execute(session, CLOCK)
        assert not ran.is_error, text(ran)

        touch_later(path, WRONG_TYPE)  # the user saved a typo
        for _ in range(3):  # each call says why; the face does not exit
            ran = await execute(session, CLOCK)
            assert_config_error(ran, path, "1:37", "mcpServers.time.command")
            await anyio.sleep(1.5)  # the gateway's own reload has seen the edit too
        assert faces(), "the face exited"

        touch_later(path, json.dumps(TIME))
        ran = await execute(session, CLOCK)
        assert not ran.is_error, text(ran)
        assert ran.structured_content == {"result": "Asia/Tokyo"}

    anyio.run(open_face, directory, home, session_work)
