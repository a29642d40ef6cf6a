"""A minimal MCP server over stdio (stdlib only) that serves one corpus file's tool list.

It answers initialize, ping and tools/list: enough for a real gateway to connect,
list, index and search. tools/call is refused, unless a responses file maps tool
names to results (bench/context_budget.py gives each tool a canned answer of a
realistic size). Starts in ~30 ms, so a gateway can run one per corpus file.

    python corpus_server.py path/to/tools.json [responses.json]
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        tools = json.load(handle)
    listed = [
        {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "inputSchema": tool.get("inputSchema") or {"type": "object"},
        }
        for tool in tools
    ]
    responses: dict[str, object] = {}
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding="utf-8") as handle:
            responses = json.load(handle)
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "initialize":
            result = {
                "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "corpus", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": listed}
        elif method == "ping":
            result = {}
        elif method == "tools/call" and message["params"]["name"] in responses:
            result = responses[message["params"]["name"]]
        else:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": -32601, "message": "not here"},
            }
            print(json.dumps(reply), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)


if __name__ == "__main__":
    main()
