"""MCP client sessions (stdio, streamable HTTP, SSE) and local Python tools.

Every ``mcp`` import of the gateway's process comes through here: the SDK's package
``__init__`` files are deferred first (``plumbing/deferredinit.py``).
"""

from toolscript.plumbing.deferredinit import defer_mcp_inits

defer_mcp_inits()
