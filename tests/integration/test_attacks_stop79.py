"""Stop 79's attacks on a real gateway (a red-team pass: what stop 78 left, then the outside).

What got through, now closed (each test performs the attack):

- A server's question whose form offers a default (or a choice) holding a configured secret
  is shown masked (``default "***"``); Enter sent the server the literal ``***``. A field
  answered with the masked default or choice as shown goes back as the server offered it
  (never shown: the server gets only what it sent).
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
)

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
IMPORT = 'import { tools, resources } from "toolscript";\n'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module: the leaky server (tests/servers/leaky_server.py) holding
    a token in its environment."""
    directory = tmp_path_factory.mktemp("stop79")
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


def test_a_masked_default_accepted_goes_back_as_the_server_offered_it(
    gateway: GatewayProcess,
) -> None:
    """Before: the form showed ``default "***"`` (the server's token, masked) and Enter sent
    ``***`` back, for the field and for the choice: the server got 'not the token (***)'."""
    (gateway.directory / "asks.ts").write_text(IMPORT + "return await tools.lk.confirmDefault();")
    code, seen, out = answer_on_a_terminal(
        "exec",
        "--no-check",
        "asks.ts",
        cwd=gateway.directory,
        env=clean_env(),
        asked=b"answer it?",
        answer=b"y\n\n\n",
        read_on=True,
    )
    shown = seen.decode()
    assert code == 0, shown
    assert 'default "***"' in shown and SECRET[:8] not in shown, shown
    assert "key: the token, pick: the token" in out.decode(), out
