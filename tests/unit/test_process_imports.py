"""What the gateway's process and the MCP face's (with its gateway in a thread) import
(issue 45: much of their memory is imports). Neither imports what its run never uses: a
terminal's rendering (rich, pygments: httpx brought them through its command line), a
second HTTP client beside the MCP SDK's own, jsonschema before a tool's first call (the
validators are made then), or the websockets package (the gateway serves none)."""

from __future__ import annotations

import json
import subprocess
import sys

# (each with its sub-modules)
UNNEEDED = ("rich", "pygments", "httpx", "httpcore", "jsonschema", "websockets")

IMPORT_BOTH = """
import json, sys
import toolscript.cli.mcp
import toolscript.gateway.app
import toolscript.gateway.inprocess
import toolscript.gateway.runner
import toolscript.mcpface.server
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""

SERVE_CONFIG = """
import json, sys
from toolscript.gateway.runner import uvicorn_config

async def app(scope, receive, send):
    pass

config = uvicorn_config(app)
config.load()
print(json.dumps([config.ws_protocol_class is None, "websockets" in sys.modules]))
"""


def _run(code: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_gateway_and_the_face_import_nothing_their_runs_do_not_use() -> None:
    imported = _run(IMPORT_BOTH)
    assert isinstance(imported, list)
    assert "mcp" in imported and "litestar" in imported  # what they do need
    assert [name for name in UNNEEDED if name in imported] == []


def test_the_gateway_serves_without_the_websockets_package() -> None:
    """uvicorn's default would import it for upgrades the guard then refuses."""
    assert _run(SERVE_CONFIG) == [True, False]
