"""A hostile MCP server over streamable HTTP whose answers come gzip-compressed.

``python compressed_http_server.py PORT_FILE``: serves on a free port of 127.0.0.1 (written
to PORT_FILE) the tools ``many`` (an answer of 4.2 million JSON values, 12.6 MB of
``{},{},...``, sent as some 12 KB of gzip) and ``plain`` (a small answer, gzip too).
"""

from __future__ import annotations

import gzip
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_TOOLS = [
    {"name": name, "description": f"answers {name}", "inputSchema": {"type": "object"}}
    for name in ("many", "plain")
]
_VALUES = 4_200_000


def _many(request_id: object) -> bytes:
    head = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1].encode()
    return (
        head
        + b', "result": {"content": [], "structuredContent": {"a": ['
        + (b"{}," * _VALUES)
        + b"{}]}}}"
    )


def _answer(message: dict[str, object]) -> tuple[bytes, str] | None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None
    if method == "initialize":
        result: object = {
            "protocolVersion": "2025-03-26",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "compressed", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": _TOOLS}
    elif method == "tools/call":
        name = message.get("params", {}).get("name")  # type: ignore[union-attr]
        if name == "many":
            return gzip.compress(_many(request_id)), "application/json"
        result = {"content": [{"type": "text", "text": "a,b,c"}]}
    else:
        result = {}
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
    return gzip.compress(body), "application/json"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        message = json.loads(self.rfile.read(length))
        answered = _answer(message)
        if answered is None:
            self.send_response(202)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        body, kind = answered
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-encoding", "gzip")
        self.send_header("mcp-session-id", "s1")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.do_GET()


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    Path(sys.argv[1]).write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
