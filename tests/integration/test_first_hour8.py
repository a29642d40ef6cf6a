"""A new user's first hour, eighth pass: the angles the earlier ones (test_first_hour.py to
test_first_hour7.py, test_agent_first_hour.py) did not take. A user arriving from a peer
tool with its config as it is (pctx's list of servers, a VS Code file given as `--config`,
`${env:VAR}` as VS Code, Cursor and pctx write it), and the MCP face called as the official
MCP Inspector's CLI calls it with values of the wrong shape (an optional argument as null,
one string where a list goes).

Each test asserts what the user is told, as the CLI shows it, with real processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import GatewayProcess, fixture_server, inspector_call, toolscript_cli

TOKEN = "from-the-users-shell"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    project = tmp_path_factory.mktemp("first-hour8")
    config = {
        # as pctx's, VS Code's and Cursor's docs write a variable
        "mcpServers": {"fx": fixture_server(env={"FH8_TOKEN": "${env:FH8_TOKEN}"})},
        "search": {"semantic": False},
    }
    env = {"TOOLSCRIPT_HOME": str(project / "home"), "FH8_TOKEN": TOKEN}
    gateway = GatewayProcess(config, project, "--no-warm-checker", env=env)
    try:
        gateway.wait_for_health(
            lambda h: h["servers"]["fx"]["state"] == "connected", what="fx connected"
        )
        yield gateway
    finally:
        gateway.stop()


def test_an_env_colon_variable_reaches_the_server_as_its_value(gateway: GatewayProcess) -> None:
    # It was sent as written: the server got the text "${env:FH8_TOKEN}", and config check
    # called the file valid.
    ran = toolscript_cli(
        "exec",
        'import { tools } from "toolscript"; return await tools.fx.env({ name: "FH8_TOKEN" })',
        cwd=gateway.directory,
        env={"TOOLSCRIPT_HOME": str(gateway.directory / "home")},
    )
    assert ran.returncode == 0, ran.stderr
    assert TOKEN in ran.stdout
    assert "${env:" not in ran.stdout


def face_call(gateway: GatewayProcess, tool: str, *arguments: str) -> dict[str, Any]:
    return inspector_call(gateway.directory, gateway.config_path, tool, *arguments)


def test_the_face_takes_a_null_option_as_its_default_and_says_how_to_write_a_list(
    gateway: GatewayProcess,
) -> None:
    # "timeout": null (what clients in OpenAI's strict mode send for an option left out)
    # was refused: "invalid timeout: must be a number, got null".
    ran = face_call(gateway, "execute", "code=return 6 * 7", "timeout=null")
    assert ran.get("isError") is not True, ran
    assert ran["structuredContent"] == {"result": 42}
    # one tool where a list goes: it said "must be an array, got a string", not how
    listed = face_call(gateway, "get_types", "tools=fx.env")
    assert listed["isError"] is True
    assert '(a list: ["fx.env"])' in listed["content"][0]["text"]


def test_a_pctx_file_given_as_the_config_names_each_key_and_the_shape_to_write(
    tmp_path: Path,
) -> None:
    # It named the first key alone ('name'), with the list of toolscript's keys: nothing
    # said that pctx's list of servers is toolscript's mcpServers keyed by name.
    (tmp_path / "pctx.json").write_text(
        json.dumps(
            {
                "name": "my-tools",
                "version": "0.1.0",
                "servers": [
                    {"name": "memory", "command": "npx -y @modelcontextprotocol/server-memory"}
                ],
            },
            indent=2,
        )
    )
    ran = toolscript_cli("--config", "pctx.json", "list-servers", "--json", cwd=tmp_path)
    assert ran.returncode == 2
    error = json.loads(ran.stdout)
    assert error["error"] == "config_error"
    lines = error["message"].splitlines()
    assert [line.split(": ")[1] for line in lines] == ["name", "version", "servers"]
    assert 'in "mcpServers": {"mcpServers": {"NAME": ' in lines[2]
    status = toolscript_cli("--config", "pctx.json", "gateway", "status", cwd=tmp_path)
    assert status.returncode != 0  # nothing was started


def test_a_vscode_file_given_as_the_config_is_told_the_import_to_write(tmp_path: Path) -> None:
    # VS Code's own file said "unknown key 'inputs'" and "did you mean 'mcpServers'?": its
    # servers' ${input:...} and `type`s are read only through "import": ["vscode"].
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text(
        json.dumps({"inputs": [], "servers": {"time": {"type": "stdio", "command": "x"}}})
    )
    ran = toolscript_cli("--config", ".vscode/mcp.json", "config", "check", "--json", cwd=tmp_path)
    assert ran.returncode == 2
    said = json.loads(ran.stdout)
    assert said["valid"] is False
    assert '{"import": ["vscode"]}' in said["error"]["hint"]
