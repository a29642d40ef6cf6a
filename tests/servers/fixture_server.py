"""A real MCP server (the official SDK's MCPServer) with tools for the cases reference servers lack.

Run: python fixture_server.py [stdio|sse|streamable-http] [port]
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


@server.tool(structured_output=False)
def plain_text(text: str = "hello") -> str:
    """Return the text as a plain text block."""
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


@server.tool(structured_output=False)
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        CANCELLED.append(seconds)
        raise
    return f"slept {seconds}"


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


@server.tool(structured_output=False)
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new tool and tell the client the list changed."""

    def extra() -> str:
        return "extra"

    server.add_tool(extra, name=name, description="added at run time")
    await ctx.request_context.session.send_tool_list_changed()
    return "added"


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run()
    else:
        server.run(transport, host="127.0.0.1", port=int(sys.argv[2]))  # type: ignore[call-overload]
