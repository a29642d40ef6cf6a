"""A stdio server's program is found the same way whether `toolscript gateway start` spawns
it or the MCP face spawns it behind its start gate (``processes.gated``): a script whose
``#!`` interpreter does not exist names that interpreter, and a program only a relative
PATH entry (``bin``) holds is not run, the same words from both."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers import GatewayProcess, clean_env, toolscript_cli, wait_until

INTERPRETER = "/nonexistent/toolscript-interpreter"


def project(tmp_path: Path) -> tuple[dict[str, Any], dict[str, str], Path]:
    """The config, the environment (PATH with ``bin`` first, as some shells have it) and
    the file the repository's own ``bin/repo-server`` writes if it runs."""
    (tmp_path / "server.sh").write_text(f"#!{INTERPRETER}\nprint('serving')\n")
    (tmp_path / "server.sh").chmod(0o755)
    ran = tmp_path / "repo-program-ran"
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "repo-server").write_text(f"#!/bin/sh\necho ran > '{ran}'\n")
    (tmp_path / "bin" / "repo-server").chmod(0o755)
    config = {
        "mcpServers": {
            "lost": {"command": "./server.sh"},
            "repo": {"command": "repo-server"},
        },
        "search": {"semantic": False},
    }
    env = {"PATH": os.pathsep.join(["bin", os.environ["PATH"]])}
    return config, env, ran


def expected(tmp_path: Path) -> dict[str, str]:
    return {
        "lost": f"command not found: {INTERPRETER} (the #! interpreter of ./server.sh)",
        "repo": "command not found: repo-server (only PATH's relative entry 'bin' has it, "
        'which toolscript does not search: write "command": "./bin/repo-server" to run that '
        "one)",
    }


def test_gateway_start_names_the_interpreter_and_skips_relative_path(tmp_path: Path) -> None:
    config, env, ran = project(tmp_path)
    gateway = GatewayProcess(config, tmp_path, env=env)
    try:
        listed = wait_until(
            lambda: json.loads(
                toolscript_cli("list-servers", "--json", cwd=tmp_path, env=env).stdout
            ),
            lambda servers: all(server.get("error") for server in servers),
            30,
            "both servers failed",
        )
    finally:
        gateway.stop()
    errors = {server["name"]: server["error"] for server in listed}
    assert errors == expected(tmp_path), errors
    assert not ran.exists()


def test_the_face_s_gated_start_says_the_same(tmp_path: Path) -> None:
    config, env, ran = project(tmp_path)
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp"],
        cwd=str(tmp_path),
        env=clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home"), **env),
    )

    async def listed() -> str:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(300):
                answer = await session.call_tool("list_servers", {})
                said = "\n".join(getattr(block, "text", "") for block in answer.content)
                if len(re.findall(r"; error: ", said)) == 2:
                    return said
                await anyio.sleep(0.1)
            return said

    said = anyio.run(listed)
    for name, error in expected(tmp_path).items():
        assert f"{name}: failed, 0 tools; error: {error}" in said, said
    assert "exec:" not in said
    assert not ran.exists()
