"""A hostile legacy SSE MCP server: its event stream names the message endpoint, then sends
one event's ``data:`` line that never ends (no newline, ever), 64 KB at a time. POSTs to the
endpoint are accepted and never answered. Counts the bytes it sent in ``SENT_FILE``.

Run: python endless_sse_server.py PORT_FILE SENT_FILE (writes its port to PORT_FILE)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

CHUNK = b"x" * 65536


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sent_file = Path(sys.argv[2])
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        if head.startswith(b"POST"):
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
            b"event: endpoint\ndata: /messages/?session_id=endless\n\ndata: "
        )
        while True:
            writer.write(CHUNK)
            await writer.drain()
            sent = int(sent_file.read_text() or 0) if sent_file.exists() else 0
            sent_file.write_text(str(sent + len(CHUNK)))
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    Path(sys.argv[1]).write_text(str(port))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
