"""A well-behaved MCP server over streamable HTTP whose every answer is gzip-compressed.

``python gzip_http_server.py PORT``: the `mcp` SDK's streamable HTTP app on 127.0.0.1:PORT
(endpoint ``/mcp``) behind an ASGI middleware that compresses each response, its event
streams included (each piece flushed, so an event is whole when it is sent). Tools: ``rows``
(a structured list of ``count`` small objects), ``csv`` (one string of ``lines`` lines of
commas) and ``echo``.
"""

from __future__ import annotations

import sys
import zlib
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("gzipped")


@server.tool()
def rows(count: int) -> dict[str, Any]:
    """A list of ``count`` rows, each an id and a name."""
    return {"rows": [{"id": i, "name": f"row {i}"} for i in range(count)]}


@server.tool(structured_output=False)
def csv(lines: int) -> str:
    """A CSV text of ``lines`` lines of five columns."""
    return "a,b,c,d,e\n" * lines


@server.tool(structured_output=False)
def echo(message: str) -> str:
    """The message, back."""
    return message


class Gzipped:
    """Every response of ``app`` sent with Content-Encoding: gzip, piece by piece."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        packer = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)

        async def gzip_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"
                ]
                message = {**message, "headers": [*headers, (b"content-encoding", b"gzip")]}
            elif message["type"] == "http.response.body":
                more = message.get("more_body", False)
                body = packer.compress(message.get("body", b""))
                body += packer.flush(zlib.Z_SYNC_FLUSH if more else zlib.Z_FINISH)
                message = {**message, "body": body}
            await send(message)

        await self.app(scope, receive, gzip_send)


if __name__ == "__main__":
    app = Gzipped(server.streamable_http_app())
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
