"""A real MCP server whose errors quote what the call sent, as many real ones do
(``ENOENT: no such file or directory, open '<path>'``): a script reads its own arguments
back in the error."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("echo-error")


@server.tool()
def open_file(path: str) -> str:
    """Open a file (there is none: the error names the path)."""
    raise ToolError(f"ENOENT: no such file or directory, open '{path}'")


if __name__ == "__main__":
    server.run()
