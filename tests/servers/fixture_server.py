"""A real MCP server (the official SDK's MCPServer) with tools for the cases reference servers lack.

Run: python fixture_server.py [--log-calls FILE] [stdio|sse|streamable-http] [port]

``--log-calls FILE``: ``plain_text`` appends a line to FILE at each call (a test's sign that
calls are being answered).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("fixture")
LOG_CALLS: str | None = None


@server.tool(structured_output=False)
def plain_text(text: str = "hello") -> str:
    """Return the text as a plain text block."""
    if LOG_CALLS:
        with open(LOG_CALLS, "a", encoding="utf-8") as log:
            log.write(f"plain_text {text}\n")
    return text


@server.tool(structured_output=False)
def json_text(count: int = 2) -> str:
    """Return a JSON object as text."""
    import json

    return json.dumps({"count": count, "items": list(range(count))})


@server.tool(structured_output=False)
def scalar_text() -> str:
    """Return text that looks like a JSON number."""
    return "007"


@server.tool(structured_output=False)
def multi_text() -> list[types.TextContent]:
    """Return two text blocks."""
    return [
        types.TextContent(type="text", text="first"),
        types.TextContent(type="text", text='{"n": 2}'),
    ]


@server.tool()
def structured(city: str) -> dict[str, Any]:
    """Return structured content."""
    return {"city": city, "temperature": 21.5}


@server.tool(structured_output=False)
def nothing() -> list[types.TextContent]:
    """Return no content."""
    return []


@server.tool()
def fail(message: str = "it broke") -> str:
    """Raise, which the server reports as isError."""
    raise ValueError(message)


CANCELLED: list[float] = []  # the sleeps a client's notifications/cancelled interrupted
SLEEPING: list[float] = []  # the sleeps under way
HELD: list[str] = []  # the messages of the fail_when_released calls under way
CHANGED = asyncio.Condition()  # notified when any of these lists changes


async def _changed(change: Any) -> None:
    async with CHANGED:
        change()
        CHANGED.notify_all()


@server.tool(structured_output=False)
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await _changed(lambda: SLEEPING.append(seconds))
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        await _changed(lambda: CANCELLED.append(seconds))
        raise
    finally:
        SLEEPING.remove(seconds)
    return f"slept {seconds}"


@server.resource("fx://sleep/{seconds}")
async def slow_resource(seconds: str) -> str:
    """Sleep, then answer: a resource read the client may cancel (counted as ``sleep``'s)."""
    return await sleep(float(seconds))


@server.tool()
async def fail_when_released(message: str, env: str = "") -> str:
    """Wait until ``release`` is called, then fail with ``message`` (and the value of the
    environment variable ``env``, if named: what the server adds that the caller never
    sent): an error that comes back after whatever a test made happen meanwhile."""
    await _changed(lambda: HELD.append(message))
    async with CHANGED:
        await CHANGED.wait_for(lambda: message not in HELD)
    from mcp.server.mcpserver.exceptions import ToolError

    if env:
        message = f"{message} {os.environ.get(env, '<unset>')}"
    raise ToolError(message)  # (its message reaches the client, a ValueError's does not)


@server.tool(structured_output=False)
async def release() -> str:
    """Let every fail_when_released call under way fail; how many there were."""
    count = len(HELD)
    await _changed(HELD.clear)
    return f"released {count}"


@server.tool(structured_output=False)
async def wait_for(
    sleeping: float = 0, cancelled: float = 0, held: str = "", within: float = 1
) -> str:
    """Answer "yes" once a sleep of ``sleeping`` seconds is under way (or one of ``cancelled``
    seconds was cancelled, or a fail_when_released call of ``held`` waits), "not yet" after
    ``within`` seconds: a readiness signal for tests."""

    def seen() -> bool:
        return (
            (not sleeping or sleeping in SLEEPING)
            and (not cancelled or cancelled in CANCELLED)
            and (not held or held in HELD)
        )

    async with CHANGED:
        try:
            await asyncio.wait_for(CHANGED.wait_for(seen), within)
        except TimeoutError:
            return "not yet"
    return "yes"


@server.tool(structured_output=False)
def cancelled() -> str:
    """How many sleeps were cancelled by the client, as JSON."""
    return json.dumps(CANCELLED)


@server.tool(structured_output=False)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool(structured_output=False)
def env(name: str) -> str:
    """One environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
async def ping_storm(count: int, ctx: Context) -> int:
    """Send the client ``count`` pings at once; how many it answered within 2 s."""
    import anyio
    from mcp.shared.message import ServerMessageMetadata

    session = ctx.request_context.session
    # on this call's stream (streamable HTTP), as a question asked during a call is sent
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    answered = 0

    async def ping() -> None:
        nonlocal answered
        with anyio.move_on_after(2):
            await session.send_request(types.PingRequest(), types.EmptyResult, metadata=related)
            answered += 1

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(ping)
    return answered


@server.tool(structured_output=False)
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new tool and tell the client the list changed."""

    def extra() -> str:
        return "extra"

    server.add_tool(extra, name=name, description="added at run time")
    await ctx.request_context.session.send_tool_list_changed()
    return "added"


if __name__ == "__main__":
    if "--log-calls" in sys.argv:
        at = sys.argv.index("--log-calls")
        LOG_CALLS = sys.argv[at + 1]
        del sys.argv[at : at + 2]
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run()
    else:
        server.run(transport, host="127.0.0.1", port=int(sys.argv[2]))  # type: ignore[call-overload]
