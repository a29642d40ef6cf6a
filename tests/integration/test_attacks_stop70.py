"""Stop 70's attacks on a real gateway (a red-team pass over what stop 69 changed: a server's
identity, the state folder's files, the watcher of a run's end, learned result types).

What got through, now closed (each test performs the attack):

- A FIFO planted as the project's learned result types or recent calls, in the user's state
  folder (an agent with a shell writes there as you), stalled the gateway's start for good:
  both are read as the gateway is made, before it listens (and the face's result marker, its
  first execute; unit: test_attacks_stop70_statefiles).
- A cloned repository's ``.toolscript.lock`` of gigabytes (small in git) was read whole at
  every build (unit: test_attacks_stop70_lock).
- A script read a configured secret by guessing: a tool's error quoting what it sent came
  back with each run of 8 characters of the secret masked, so it learnt which guesses were
  runs of it (``ghp_`` and 4 more, then one character at a time; unit:
  test_attacks_stop70_redact).
- The same through get-types: the example of a recent call showed the arguments (and a
  result quoting them) with each run of the secret masked, so the agent read which of its
  script's guesses were runs of it (unit: test_attacks_stop70_examples).

What held, or is low and left, is in the report of the pass (and docs/security.md): a
``${VAR}`` written as a server's command or URL host keeps its approval when the variable
changes, but only the user's environment sets it (an agent that sets it runs its own program,
which its shell runs anyway); a tool file's identity is its path, not its code, but a tool
file is code the gateway imports whatever is approved.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from tests.helpers import GatewayProcess, face_parameters, fixture_server, toolscript_cli
from toolscript.gateway.guard import agent_url
from toolscript.plumbing.paths import project_state_dir


def test_fifos_planted_in_the_state_folder_stall_no_gateway_start(tmp_path: Path) -> None:
    state = project_state_dir(tmp_path)
    for name in ("result-shapes.json", "recent-calls.json"):
        os.mkfifo(state / name)
    gateway = GatewayProcess({"mcpServers": {"fx": fixture_server()}}, tmp_path)
    try:
        answer = gateway.call("fx__structured", {"city": "Oslo"})
        assert answer.status_code == 200, answer.text
        set_aside = sorted(path.name.split(".damaged-")[0] for path in state.glob("*.damaged-*"))
        assert set_aside == ["recent-calls.json", "result-shapes.json"]
    finally:
        gateway.stop()


SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"  # the server's token (FS_TOKEN)
ECHO_ERROR_SERVER = Path(__file__).parent.parent / "servers" / "echo_error_server.py"


def test_a_script_cannot_read_a_secret_by_guessing_runs_of_it(tmp_path: Path) -> None:
    """The server's error quotes the path the script sent. Each guess of 8 characters that
    was a run of the configured token came back as ``***``, the others as written: guessing
    ``ghp_`` and 4 more, then one character at a time, read the whole token. Now what the
    script sent comes back as it sent it, right guess or wrong."""
    server = {"command": sys.executable, "args": [str(ECHO_ERROR_SERVER)]}
    config = {"mcpServers": {"fs": server | {"env": {"FS_TOKEN": SECRET}}}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        for guess in ("ghp_AAAA", "ghp_Zq8x", "zQ8Xr2Mk", "R2mK9vT4pL7n"):
            answer = gateway.call("fs__open_file", {"path": f"/data/{guess}.txt"})
            assert answer.status_code == 422, answer.text
            assert f"open '/data/{guess}.txt'" in answer.json()["message"], answer.text
            assert f"/data/{guess}.txt" in json.dumps(answer.json()["content"]), answer.text
    finally:
        gateway.stop()


def test_a_local_tool_s_error_gives_back_what_the_script_sent(tmp_path: Path) -> None:
    """As above, for a tool file's own secrets: its exception quoting the argument was masked
    by the tool file's server before the gateway saw it."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "files.py").write_text(
        "def open_file(path: str, context=None) -> str:\n"
        '    """Open a file (there is none)."""\n'
        '    raise FileNotFoundError(f"no such file: {path}")\n'
    )
    config = {"localTools": {"dir": "tools", "files": {"files": {"secrets": {"API_KEY": SECRET}}}}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        for guess in ("ghp_AAAA", "ghp_Zq8x"):
            answer = gateway.call("files__open_file", {"path": f"/data/{guess}"})
            assert answer.status_code == 422, answer.text
            assert f"no such file: /data/{guess}" in answer.json()["message"], answer.text
    finally:
        gateway.stop()


IMPORT = 'import { tools } from "toolscript";\n'


def test_an_agent_cannot_read_a_secret_from_the_examples_of_get_types(tmp_path: Path) -> None:
    """The agent's script sends guesses to a tool that takes them (the fixture's
    plain_text, which says them back), and the agent reads get-types: the example of the
    call showed each guess that was a run of the server's token as ``***`` (in the
    arguments and in the result quoting them), the others as written. Now the example shows
    what the script sent as it sent it, right guess or wrong."""
    config = {
        "mcpServers": {"fx": fixture_server(env={"FX_TOKEN": SECRET})},
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(config, tmp_path)
    agent = {"TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url)}
    try:
        for guess in ("ghp_AAAA", "ghp_Zq8x", "R2mK9vT4pL7n"):
            (tmp_path / "guess.ts").write_text(
                f'{IMPORT}await tools.fx.plainText({{ text: "{guess}" }});\n'
            )
            done = toolscript_cli("exec", "guess.ts", cwd=tmp_path, env=agent)
            assert done.returncode == 0, done.stderr
            shown = toolscript_cli("get-types", "fx", "plain_text", cwd=tmp_path, env=agent)
            assert shown.returncode == 0, shown.stderr
            assert f'tools.fx.plainText({{"text":"{guess}"}})' in shown.stdout, shown.stdout
            assert f'returned "{guess}"' in shown.stdout, shown.stdout
        # The MCP face's agent: its script's guess, and get_types showing its call.
        seen = face_sees(gateway, "ghp_Zq8xR2mK")
        assert 'plainText({"text":"ghp_Zq8xR2mK"})' in seen and 'returned "ghp_Zq8xR2mK"' in seen, (
            seen
        )
        # what the server adds of its own is masked as before
        (tmp_path / "env.ts").write_text(f'{IMPORT}await tools.fx.env({{ name: "FX_TOKEN" }});\n')
        assert toolscript_cli("exec", "env.ts", cwd=tmp_path, env=agent).returncode == 0
        shown = toolscript_cli("get-types", "fx", "env", cwd=tmp_path, env=agent)
        assert 'returned "***"' in shown.stdout and SECRET[:8] not in shown.stdout, shown.stdout
    finally:
        gateway.stop()


def face_sees(gateway: GatewayProcess, guess: str) -> str:
    """What the MCP face's get_types shows of the fx.plain_text call its script made."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def guess_and_look() -> str:
        async with (
            stdio_client(face_parameters(gateway)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            code = f'{IMPORT}await tools.fx.plainText({{ text: "{guess}" }});'
            ran = await session.call_tool("execute", {"code": code})
            assert not ran.is_error, ran.content
            shown = await session.call_tool("get_types", {"tools": ["fx.plain_text"]})
            return "\n".join(block.text for block in shown.content if block.type == "text")

    return anyio.run(guess_and_look)
