"""A server whose prompt arguments and tool parameters are named as members every
JavaScript object has (``__proto__``, ``constructor``, ``toString``, ...): they are data from
the CLI and from a script (the generated types accept a call leaving the optional ones
out; nothing reaches Object.prototype), and the server gets them as sent."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, toolscript_cli

SERVER = """
import json

from mcp.server.mcpserver import MCPServer
from mcp.types import GetPromptResult, Prompt, PromptArgument, PromptMessage, TextContent

server = MCPServer("odd")


@server.tool(structured_output=False)
def echo(value: str, toString: str = "-", constructor: str = "-") -> str:
    return json.dumps({"value": value, "toString": toString, "constructor": constructor})


async def prompts() -> list[Prompt]:
    named = [("__proto__", True), ("constructor", True), ("toString", False), ("valueOf", False)]
    arguments = [PromptArgument(name=name, required=needed) for name, needed in named]
    return [Prompt(name="odd", description="Arguments named as Object's own", arguments=arguments)]


async def get(name, arguments=None, context=None):
    text = json.dumps(arguments, sort_keys=True)
    message = PromptMessage(role="user", content=TextContent(type="text", text=text))
    return GetPromptResult(messages=[message])


server.list_prompts = prompts  # type: ignore[method-assign]
server.get_prompt = get  # type: ignore[method-assign]
server.run()
"""


@pytest.fixture(scope="module")
def odd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("odd-names")
    script = Path(directory) / "odd_server.py"
    script.write_text(SERVER)
    entry = {"command": sys.executable, "args": [str(script)]}
    started = GatewayProcess(
        {"mcpServers": {"odd": entry}, "search": {"semantic": False}}, directory
    )
    try:
        started.wait_for_health(lambda h: h["servers"]["odd"]["state"] == "connected")
        yield started
    finally:
        started.stop()


def test_get_prompt_sends_such_arguments_as_data(odd: GatewayProcess) -> None:
    got = toolscript_cli(
        "get-prompt", "odd", "odd", "-a", "__proto__=P", "-a", "constructor=C",
        "-a", "toString=T", cwd=odd.directory,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout.split("\n", 1)[1]) == {
        "__proto__": "P",
        "constructor": "C",
        "toString": "T",
    }


SCRIPT = """import { prompts, tools } from "toolscript";
const text = async (args: Parameters<typeof prompts.odd.get>[1]) => {
  const got = await prompts.odd.get("odd", args);
  return JSON.parse((got.messages[0].content as { text: string }).text);
};
return {
  least: await text({ ["__proto__"]: "P", constructor: "C" }),
  more: await text({ ["__proto__"]: "P", constructor: "C", toString: "T", valueOf: "V" }),
  tool: await tools.odd.echo({ value: "v" }),
  toolGiven: await tools.odd.echo({ value: "v", toString: "T", constructor: "C" }),
  polluted: Object.keys(Object.prototype).length + ("P" in {} ? 1 : 0),
};
"""


def test_a_script_calls_them_leaving_the_optional_ones_out(odd: GatewayProcess) -> None:
    done = toolscript_cli("exec", SCRIPT, cwd=odd.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["least"] == {"__proto__": "P", "constructor": "C"}
    assert answer["more"] == {"__proto__": "P", "constructor": "C", "toString": "T", "valueOf": "V"}
    tool = answer["tool"] if isinstance(answer["tool"], dict) else json.loads(answer["tool"])
    assert tool == {"value": "v", "toString": "-", "constructor": "-"}
    given = answer["toolGiven"]
    given = given if isinstance(given, dict) else json.loads(given)
    assert given == {"value": "v", "toString": "T", "constructor": "C"}
    assert answer["polluted"] == 0
