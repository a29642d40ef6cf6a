"""``toolscript mcp``: code mode served to any MCP client (``server.py``), the work its
tools do (``backend.py``), and their definitions (``tools.py``)."""
