"""What toolscript relies on in the MCP SDK, private parts included (toolscript/upstream/sdk.py).

An SDK upgrade that changes any of this fails here, not in a user's gateway.
"""

from __future__ import annotations

import inspect
import sys
import tempfile

import anyio
import mcp_types
import pytest
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage
from mcp_types import methods

from toolscript.upstream import sdk


def test_the_sdk_still_refuses_a_whole_list_for_one_bad_schema() -> None:
    """Why upstream/tolerant.py repairs lists before the SDK sees them."""
    bad = {"tools": [{"name": "whoami", "inputSchema": {}}]}
    with pytest.raises(Exception, match="inputSchema"):
        methods.validate_server_result("tools/list", "2025-11-25", bad)


def test_send_request_takes_a_request_and_a_result_type() -> None:
    parameters = list(inspect.signature(ClientSession.send_request).parameters)
    assert parameters[:3] == ["self", "request", "result_type"]


def test_messages_carry_what_the_raw_path_reads() -> None:
    reply = mcp_types.JSONRPCResponse(jsonrpc="2.0", id="toolscript-1", result={"content": []})
    wrapped = SessionMessage(reply)
    assert wrapped.message.id == "toolscript-1"
    assert wrapped.message.result == {"content": []}
    request = mcp_types.JSONRPCRequest(
        jsonrpc="2.0", id="toolscript-2", method="tools/call", params={}
    )
    assert '"method":"tools/call"' in request.model_dump_json(by_alias=True, exclude_unset=True)


def test_private_stdio_helpers_keep_their_shape() -> None:
    spawn = inspect.signature(sdk.create_process).parameters
    assert {"command", "args", "env", "errlog", "cwd"} <= set(spawn)
    assert list(inspect.signature(sdk.stop_server_process).parameters) == ["process"]
    assert "PATH" in sdk.get_default_environment()
    assert len(sdk.TransportStreams.__args__) == 2  # (read stream, write stream)


def test_spawn_and_stop_a_process_group() -> None:
    """The spawn puts the server in its own group; the stop ends it even when it ignores stdin."""

    async def main() -> int | None:
        with tempfile.TemporaryFile("w+") as errlog:
            process = await sdk.create_process(
                command=await sdk.executable_command(sys.executable),
                args=["-c", "import time; time.sleep(60)"],
                env=None,
                errlog=errlog,
                cwd=None,
            )
            with anyio.fail_after(15):
                await sdk.stop_server_process(process)
            return process.returncode

    assert anyio.run(main) is not None


def test_early_spawns_inherit_what_the_sdk_s_spawn_inherits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """upstream/early.py spawns servers before the SDK is imported, with a copy of its list."""
    from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS

    from toolscript.upstream.early import INHERITED_ENV, inherited_environment

    assert tuple(DEFAULT_INHERITED_ENV_VARS) == INHERITED_ENV
    monkeypatch.setenv("SHELL", "() { :; }")  # a shell function is left out by both
    assert inherited_environment() == sdk.get_default_environment()
