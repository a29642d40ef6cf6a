"""A hostile MCP server over streamable HTTP whose tools/list answer nests one tool's input
schema 10,000 levels deep (past what the `mcp` SDK's parser takes: 201 levels).

``python deep_http_server.py PORT json|sse``: a bare JSON-RPC endpoint on 127.0.0.1:PORT
(``/mcp``) answering each POST with a JSON body or with one event of an event stream. Tools:
``deep`` (that schema) and ``ok``; each answers its own name.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn

DEPTH = 10_000
DEEP = '{"type": "object", "properties": {"a": ' * DEPTH + "{}" + "}}" * DEPTH
TOOLS = (
    '[{"name": "deep", "description": "Answers deep.", "inputSchema": ' + DEEP + "}, "
    '{"name": "ok", "description": "Answers ok.", "inputSchema": {"type": "object"}}]'
)


def _answer(request: dict[str, Any]) -> str:
    head = '{"jsonrpc": "2.0", "id": ' + json.dumps(request["id"]) + ', "result": '
    method = request.get("method")
    if method == "initialize":
        result: Any = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "deep", "version": "1"},
        }
    elif method == "tools/list":
        return head + '{"tools": ' + TOOLS + "}}"
    elif method == "tools/call":
        name = request["params"]["name"]
        result = {"content": [{"type": "text", "text": name}], "isError": False}
    else:
        result = {}
    return head + json.dumps(result) + "}"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    request = json.loads(body)
    if "id" not in request:  # a notification
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    answer = _answer(request).encode()
    if sys.argv[2] == "sse":
        kind, answer = b"text/event-stream", b"event: message\ndata: " + answer + b"\n\n"
    else:
        kind = b"application/json"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind)]})
    await send({"type": "http.response.body", "body": answer})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
