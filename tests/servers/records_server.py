"""A real MCP server (the SDK's MCPServer) whose tools are annotated read-only, destructive or
not at all, for policy tests. Every call is appended to the journal file named by
``RECORDS_JOURNAL`` (one JSON line: tool and arguments), so tests count side effects at
the server itself.

Run: python records_server.py
"""

from __future__ import annotations

import base64
import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

server = MCPServer("records")
_records: dict[str, str] = {}


def _journal(tool: str, **arguments: object) -> None:
    path = os.environ.get("RECORDS_JOURNAL")
    if path:
        with open(path, "a", encoding="utf-8") as journal:
            journal.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def read_record(key: str) -> str:
    """Read a record (read-only)."""
    _journal("read_record", key=key)
    return json.dumps({"key": key, "text": _records.get(key)})


@server.tool(structured_output=False)
def write_record(key: str, text: str) -> str:
    """Write a record (no annotations)."""
    _journal("write_record", key=key, text=text)
    _records[key] = text
    return json.dumps({"key": key, "written": True})


@server.tool(annotations=ToolAnnotations(destructiveHint=True), structured_output=False)
def delete_record(key: str) -> str:
    """Delete a record for good (destructive)."""
    _journal("delete_record", key=key)
    existed = _records.pop(key, None) is not None
    return json.dumps({"key": key, "deleted": existed})


@server.tool(annotations=ToolAnnotations(destructiveHint=True), structured_output=False)
def drop_table(name: str, password: str) -> str:
    """Drop a whole table (destructive; takes a password)."""
    _journal("drop_table", name=name, password=password)
    return json.dumps({"dropped": name})


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def fail_loudly() -> str:
    """Fail with the server's own token in the message, in several spellings (read-only)."""
    token = os.environ.get("RECORDS_TOKEN", "")
    spelled = [token, json.dumps(token), base64.b64encode(token.encode()).decode(), token[-12:]]
    raise ToolError("cannot connect with " + " | ".join(spelled))


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def counter(step: int = 1) -> str:
    """Count calls (read-only)."""
    _journal("counter", step=step)
    return json.dumps({"step": step})


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def shape_shifter(variant: int) -> str:
    """Answer JSON whose shape depends on the variant (read-only)."""
    answers: list[object] = [
        {"a": 1, "items": [{"id": 1}]},
        {"a": "one", "b": [1, 2], "items": [{"id": 2, "tag": "x"}]},
        {"a": None, "items": []},
    ]
    return json.dumps(answers[variant % len(answers)])


if __name__ == "__main__":
    server.run()
