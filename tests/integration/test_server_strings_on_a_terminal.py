"""What a server sends (names, descriptions, its stderr) reaches a terminal as visible
escapes, never as control sequences: a malicious server cannot set the title, write the
clipboard (OSC 52) or clear the screen through `list-tools`, `get-types` or `search`."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.helpers import SERVERS, GatewayProcess, clean_env

CONTROLS = "\x1b]0;TITLEPWN\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J\u009b2J"
TOOLS = [
    {
        "name": "shout",
        "description": "Shout" + CONTROLS,
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "what" + CONTROLS}},
        },
    }
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("controls")
    (directory / "tools.json").write_text(json.dumps(TOOLS))
    server = {
        "command": sys.executable,
        "args": [str(SERVERS / "faulty_server.py"), "--tools", str(directory / "tools.json")],
    }
    started = GatewayProcess(
        {"mcpServers": {"loud": server}, "search": {"semantic": False}}, directory
    )
    yield started
    started.stop()


def _on_a_terminal(gateway: GatewayProcess, *args: str) -> bytes:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", *args],
        cwd=gateway.directory,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    received = b""
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the pty's other end closed (Linux)
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(leader)
        process.wait(30)
    return received


@pytest.mark.parametrize(
    "command",
    [("list-tools", "loud", "--verbose"), ("get-types", "loud"), ("search", "shout")],
    ids=["list-tools", "get-types", "search"],
)
def test_a_servers_control_codes_reach_a_terminal_as_escapes(
    gateway: GatewayProcess, command: tuple[str, ...]
) -> None:
    shown = _on_a_terminal(gateway, *command)
    assert b"TITLEPWN" in shown, shown  # the text is there...
    for sequence in (b"\x1b]0;", b"\x1b]52;", b"\x1b[2J", b"\x07", "\u009b".encode()):
        assert sequence not in shown, (sequence, shown)  # ...its controls are not
    assert b"\\u001b" in shown
