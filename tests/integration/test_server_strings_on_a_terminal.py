"""What a server sends (names, descriptions, its stderr) reaches a terminal as visible
escapes, never as control sequences: a malicious server cannot set the title, write the
clipboard (OSC 52) or clear the screen through `list-tools`, `get-types` or `search`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest

from tests.helpers import SERVERS, GatewayProcess, clean_env, on_a_terminal

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


@pytest.mark.parametrize(
    "command",
    [("list-tools", "loud", "--verbose"), ("get-types", "loud"), ("search", "shout")],
    ids=["list-tools", "get-types", "search"],
)
def test_a_servers_control_codes_reach_a_terminal_as_escapes(
    gateway: GatewayProcess, command: tuple[str, ...]
) -> None:
    shown = on_a_terminal(*command, cwd=gateway.directory, env=clean_env())
    assert b"TITLEPWN" in shown, shown  # the text is there...
    for sequence in (b"\x1b]0;", b"\x1b]52;", b"\x1b[2J", b"\x07", "\u009b".encode()):
        assert sequence not in shown, (sequence, shown)  # ...its controls are not
    assert b"\\u001b" in shown
