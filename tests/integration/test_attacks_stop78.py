"""Stop 78's attacks on a real gateway (a red-team pass: what stop 77 left, then the outside).

What got through, now closed (each test performs the attack):

- A server's question to the person (MCP elicitation, asked during a call on exec's
  terminal or through the MCP face's client) was shown as the server wrote it: a server
  quoting its token in the question, or in its form's field titles, showed it whole.
  It is masked as a call's progress is: a whole secret always, a run of one as the call
  sent it (the script's guesses shown as sent: no oracle), every run for a run handed it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    answer_on_a_terminal,
    clean_env,
    toolscript_cli,
)
from toolscript.gateway.guard import agent_url

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
IMPORT = 'import { tools, resources } from "toolscript";\n'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module: the leaky server (tests/servers/leaky_server.py) holding
    a token in its environment."""
    directory = tmp_path_factory.mktemp("stop78")
    leaky = {
        "command": sys.executable,
        "args": [str(SERVERS / "leaky_server.py")],
        "env": {"LEAK_TOKEN": SECRET},
    }
    config = {"mcpServers": {"lk": leaky}, "search": {"semantic": False}}
    gateway = GatewayProcess(config, directory)
    try:
        gateway.wait_for_health(lambda h: h["servers"]["lk"]["state"] == "connected")
        yield gateway
    finally:
        gateway.stop()


def _agent_exec(gateway: GatewayProcess, script: str) -> tuple[int, str, str]:
    done = toolscript_cli(
        "exec",
        "--no-check",
        IMPORT + script,
        cwd=gateway.directory,
        env={"TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url)},
    )
    return done.returncode, done.stdout, done.stderr


def _asked(gateway: GatewayProcess, script: str) -> str:
    """What exec's terminal showed of the server's question and its form (accepted)."""
    (gateway.directory / "asks.ts").write_text(IMPORT + script)
    code, seen, out = answer_on_a_terminal(
        "exec",
        "--no-check",
        "asks.ts",
        cwd=gateway.directory,
        env=clean_env(),
        asked=b"answer it?",
        answer=b"y\n\n",
        read_on=True,
    )
    assert code == 0, seen
    assert "accept" in out.decode(), out
    return seen.decode()


def test_a_server_s_question_shows_no_secret(gateway: GatewayProcess) -> None:
    """Before: ``send <text>? (signed in with ghp_Zq8x...)`` on the person's terminal, the
    token whole; the script's guesses are shown as sent (masked, a right one would say so)."""
    for guess in (SECRET[:9], "ghp_Aaaaa"):
        seen = _asked(gateway, f'return await tools.lk.confirm({{ text: "{guess}" }});')
        assert f"send {guess}?" in seen, seen
        assert "signed in with ***" in seen and "as ***" in seen, seen  # the field's title
        assert SECRET[:8] not in seen.replace(f"send {guess}", ""), seen


def test_a_run_handed_the_token_has_its_pieces_masked_in_a_question(
    gateway: GatewayProcess,
) -> None:
    """A run that read the token and sends a piece of it: the question masks the piece."""
    seen = _asked(
        gateway,
        'const read = JSON.stringify(await resources.lk.read("leak://token"));\n'
        "const token = read.match(/ghp_[A-Za-z0-9]+/)![0];\n"
        "return await tools.lk.confirm({ text: token.slice(0, 14) });",
    )
    assert "send ***?" in seen, seen
    assert SECRET[:8] not in seen, seen
