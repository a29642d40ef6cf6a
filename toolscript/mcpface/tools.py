"""The MCP face's own tools and instructions: what a client puts in its model's context.

Kept short on purpose: these few definitions stand in for every tool of every server,
and each byte here is read at the start of every session.
"""

from __future__ import annotations

from typing import Any

from toolscript.search.parameters import MAX_QUERY

__all__ = [
    "CONFIG_BROKEN",
    "EXECUTE_TIMEOUT",
    "INSTRUCTIONS",
    "MAX_EXECUTE_TIMEOUT",
    "TOOLS",
    "YIELD_AFTER",
]

EXECUTE_TIMEOUT = 120.0  # seconds a script may run unless the call asks for another limit
MAX_EXECUTE_TIMEOUT = 3600.0
# Seconds execute waits for a script before it answers with the run's id and what it printed
# so far (the script goes on; wait_run continues): below the 60 s many MCP clients allow.
YIELD_AFTER = 45.0

INSTRUCTIONS = """\
Code mode for the user's MCP servers: call their tools from one TypeScript program.
1. search_tools("what you need"): hits name tools.<server>.<function>.
2. get_types(["server.tool", ...]) for the tools you will call.
3. execute(code): `import { tools } from "toolscript";` (resources, prompts, search,
   describe too), await the calls (Promise.all runs them in parallel), filter in code,
   `return` only what you need. A failed call throws ToolError. No files, network or
   environment: the script reaches only the tools. A call that needs the user's approval
   stops the run: tell the user the approve command it names, never run it yourself.
4. save_script keeps a program that worked for later sessions; search_tools finds
   saved scripts (script.<name>): run_script, or `scripts.<name>(input)` in execute."""

# Added to the instructions when the project's config cannot be used as the face starts.
CONFIG_BROKEN = """
The project's config cannot be used yet: each tool call says why until it is fixed."""

_SEARCH_HIT = {
    "type": "object",
    "properties": {
        "server": {"type": "string"},
        "tool": {"type": "string"},  # the MCP name (a resource's URI, a prompt's name)
        "call": {"type": "string"},  # how a script calls it: tools.server.fn
        "description": {"type": "string"},
        "score": {"type": "number"},
    },
    "required": ["server", "tool", "call", "description", "score"],
}

# A server as `toolscript list-servers --json` has it (name, state, tools, description,
# error besides): a server not connected, the tools its last build listed.
_SERVER = {
    "type": "object",
    "properties": {"last_known_tools": {"type": "integer"}},
}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_tools",
        "description": "Find the tools for a need, or for each need of a step, best first.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "maxLength": MAX_QUERY,
                    "description": 'The need in words, e.g. "create a github issue".',
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 8},
                "server": {"type": "string"},
                "kind": {"enum": ["tool", "resource", "prompt", "all"]},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "hits": {"type": "array", "items": _SEARCH_HIT},
                # as `toolscript search --json`: no hit close in meaning; servers not searched
                "weak": {"type": ["boolean", "null"]},  # null: keywords alone cannot tell
                "unsearched": {"type": "array"},  # [{name, state}]
            },
            "required": ["hits"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    },
    {
        "name": "get_types",
        "description": "TypeScript declarations of tools, to call them from execute.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "description": 'Tools as "server.tool", or "server" for all its tools.',
                },
                "example": {
                    "type": "boolean",
                    "default": False,
                    "description": "Add a script calling each tool.",
                },
            },
            "required": ["tools"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    },
    {
        "name": "execute",
        "description": (
            "Type-check and run a TypeScript program; its top-level return value comes back "
            "as JSON, with what it printed."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The program."},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": MAX_EXECUTE_TIMEOUT,
                    "default": EXECUTE_TIMEOUT,
                    "description": "Seconds before it is stopped.",
                },
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "result": {"description": "The return value (null: none)."},
                # A run stopped for approval (or after too many calls) is an error result
                # whose data says why: {error, message, hint, call}, and has no result.
                "stopped": {"type": "object"},
            },
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    },
    {
        # execute answers a run still going after YIELD_AFTER s with {run: ID, running: true}
        "name": "wait_run",
        "description": "Continue, by its id, a run execute left running.",
        "inputSchema": {
            "type": "object",
            "properties": {"run": {"type": "string"}},
            "required": ["run"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "run_script",
        "description": "Run a saved script with its input; its return value comes back.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "input": {"type": "object", "default": {}},
                "timeout": {"type": "number", "exclusiveMinimum": 0, "default": EXECUTE_TIMEOUT},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": True},
    },
    {
        "name": "save_script",
        "description": (
            "Keep a program in the project's toolscripts/: it must type-check and "
            "export default an async function of its input object."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "code": {"type": "string"},
                "description": {"type": "string"},
                "force": {"type": "boolean", "default": False},
            },
            "required": ["name", "code"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
    },
    {
        "name": "read_resource",
        "description": "A server's resources and prompts; uri or prompt reads one.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "server": {"type": "string"},
                "uri": {"type": "string"},
                "prompt": {"type": "string"},
                "arguments": {"type": "object"},
            },
            "required": ["server"],
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "list_servers",
        "description": "The user's MCP servers: state, tool count, description.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        # Each server as `toolscript list-servers --json` has it; the text says it too.
        "outputSchema": {
            "type": "object",
            "properties": {"servers": {"type": "array", "items": _SERVER}},
            "required": ["servers"],
        },
        "annotations": {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False},
    },
]
