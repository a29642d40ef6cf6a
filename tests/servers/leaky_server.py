"""A real MCP server (the official SDK's MCPServer) that hands on what it holds: its token
(``LEAK_TOKEN``) and what a script sends it, through progress messages, results keyed by
ordinary words, a resource and a prompt (red-team stop 77), and a question to the user
(stop 78).

Run: python leaky_server.py
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import Field, create_model

server = MCPServer("leaky")


def _token() -> str:
    return os.environ.get("LEAK_TOKEN", "<unset>")


@server.tool(structured_output=False)
async def echo_progress(text: str, ctx: Context) -> str:
    """Report progress quoting ``text`` (as a search server says what it looks up)."""
    await ctx.report_progress(1, 2, f"looking up {text}")
    return "done"


@server.tool(structured_output=False)
async def token_progress(ctx: Context) -> str:
    """Report progress quoting the server's own token."""
    await ctx.report_progress(1, 2, f"signed in with {_token()}")
    return "done"


@server.tool()
def keyed() -> dict[str, Any]:
    """A result keyed by ordinary words, numbers and dates."""
    return {
        "none": 1,
        "true": 2,
        "oauth": 3,
        "2024-10-22": 4,
        "claude-3-opus": 5,
        "***": 6,
    }


@server.tool(structured_output=False)
async def hold(seconds: float, data: list[Any], ctx: Context) -> str:
    """Answer after ``seconds`` (its arguments held by the gateway meanwhile), saying
    ``holding`` in a progress message first."""
    await ctx.report_progress(0, 1, "holding")
    await asyncio.sleep(seconds)
    return str(len(data))


@server.tool(structured_output=False)
async def hold_briefly(seconds: float, data: list[Any]) -> str:
    """As hold, a tool the tests' config gives a timeout of 2 s."""
    await asyncio.sleep(seconds)
    return str(len(data))


@server.tool(structured_output=False)
async def die(data: list[Any]) -> str:
    """Exit mid-call, never answering."""
    await asyncio.sleep(0.5)
    os._exit(1)


@server.tool(structured_output=False)
def refuse(name: str) -> str:
    """Answer with a JSON-RPC error quoting ``name`` (not a result marked isError), and
    the server's token too for the name ``who``."""
    signed = f" (signed in with {_token()})" if name == "who" else ""
    raise MCPError(code=-32602, message=f"no such name: {name}{signed}")


@server.prompt()
def greeting(name: str) -> str:
    """A greeting; a name it does not know fails quoting it."""
    raise ValueError(f"no such name: {name}")


@server.tool(structured_output=False)
def crash(text: str) -> str:
    """Log ``text`` to stderr (as servers log their requests), then exit mid-call."""
    sys.stderr.write(f"got {text}\n")
    sys.stderr.flush()
    os._exit(1)


@server.tool(structured_output=False)
async def confirm(text: str, ctx: Context) -> str:
    """Ask the user (MCP elicitation) to confirm sending ``text``: the question and its
    field's title quote ``text`` and the server's token (red-team stop 78)."""
    form = create_model(
        "Confirm", ok=(bool, Field(default=True, title=f"send {text} as {_token()}"))
    )
    answer = await ctx.elicit(f"send {text}? (signed in with {_token()})", form)
    return answer.action


@server.tool(structured_output=False)
async def big_form(fields: int, ctx: Context) -> str:
    """Ask the user to fill in a form of ``fields`` fields (red-team stop 78)."""
    form = create_model("Big", **{f"field{i}": (str, Field(default="")) for i in range(fields)})
    answer = await ctx.elicit("fill in all of these", form)  # type: ignore[call-overload]
    return answer.action


@server.tool(structured_output=False)
async def progress_quoting_start(text: str, ctx: Context) -> str:
    """Report progress quoting the first 12 characters of ``text`` (red-team stop 78)."""
    await ctx.report_progress(1, 2, f"key starts {text[:12]}")
    return "done"


@server.tool(structured_output=False)
def crash_quoting_start(text: str) -> str:
    """Log the first 12 characters of ``text`` to stderr (as a server logs a key's start),
    then exit mid-call (red-team stop 78)."""
    sys.stderr.write(f"key starts {text[:12]}\n")
    sys.stderr.flush()
    os._exit(1)


@server.tool(structured_output=False)
def refuse_quoting_start(text: str) -> str:
    """Answer with a JSON-RPC error quoting the first 12 characters of ``text`` (as a server
    says which key it refused; red-team stop 79)."""
    raise MCPError(code=-32602, message=f"key starts {text[:12]}: refused")


@server.tool(structured_output=False)
async def confirm_default(ctx: Context) -> str:
    """Ask the user which key to use, offering the server's own token as the default and as
    one of two choices: says whether each answer is the token (red-team stop 79)."""
    form = create_model(
        "Key",
        key=(str, Field(default=_token(), title="key")),
        pick=(str, Field(default=_token(), json_schema_extra={"enum": [_token(), "none"]})),
    )
    answer = await ctx.elicit("use your key?", form)  # type: ignore[call-overload]
    if answer.action != "accept":
        return answer.action
    said = {name: getattr(answer.data, name) for name in ("key", "pick")}
    return ", ".join(
        f"{name}: {'the token' if value == _token() else f'not the token ({value[:3]})'}"
        for name, value in said.items()
    )


@server.resource("leak://token")
def token_resource() -> str:
    """The server's token, as a resource."""
    return _token()


@server.prompt()
def token_prompt() -> str:
    """The server's token, as a prompt."""
    return f"use {_token()}"


if __name__ == "__main__":
    server.run()
