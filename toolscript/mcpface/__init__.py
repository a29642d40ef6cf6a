"""``toolscript mcp``: code mode served to any MCP client (``server.py``), the work its
tools do (``backend.py``), and their definitions (``tools.py``).

The SDK's package ``__init__`` files are deferred before the face imports its server
(``plumbing/deferredinit.py``).
"""

from toolscript.plumbing.deferredinit import defer_mcp_inits

defer_mcp_inits()
