"""Prompts and resource templates typed in the generated module like tools, with the real
`server-everything` and a server whose prompts change while the gateway runs: a typed
prompt call and a template read work, a wrong prompt name, a missing argument or a wrong
template parameter is a type error before anything runs, get-types shows the prompts, and
a module made from hostile server strings still type-checks."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, deno_check, toolscript_cli, wait_until
from tests.integration.test_offerings import everything_config
from toolscript.codegen.module import render_module


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    started = GatewayProcess(everything_config(), tmp_path_factory.mktemp("typed"))
    try:
        started.wait_for_health(lambda h: h["servers"]["everything"]["state"] == "connected")
        yield started
    finally:
        started.stop()


def test_a_typed_prompt_call_and_template_reads_work(gateway: GatewayProcess) -> None:
    code = """import { prompts, resources } from "toolscript";
const got = await prompts.everything.get("args-prompt", { city: "Paris", state: "Texas" });
const simple = await prompts.everything.get("simple-prompt");
const text = await resources.everything.template("Dynamic Text Resource", { resourceId: "3" });
const blob = await resources.everything.template(
  "demo://resource/dynamic/blob/{resourceId}", { resourceId: "4" },
);
return {
  message: got.messages[0].content,
  simple: simple.messages.length,
  text: [text[0].uri, "text" in text[0] ? text[0].text : null],
  blob: [blob[0].uri, "bytes" in blob[0] ? blob[0].bytes.length : 0],
};
"""
    done = toolscript_cli("exec", code, cwd=gateway.directory)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["message"] == {"type": "text", "text": "What's weather in Paris, Texas?"}
    assert answer["simple"] == 1
    assert answer["text"][0] == "demo://resource/dynamic/text/3" and "3" in answer["text"][1]
    assert answer["blob"][0] == "demo://resource/dynamic/blob/4" and answer["blob"][1] > 0


@pytest.mark.parametrize(
    "call",
    [
        'prompts.everything.get("no-such-prompt")',
        'prompts.everything.get("args-prompt", { state: "Texas" })',
        'prompts.everything.get("args-prompt")',
        'prompts.everything.get("args-prompt", { city: "Paris", county: "x" })',
        'resources.everything.template("Dynamic Text Resource", { id: "3" })',
        'resources.everything.template("demo://nothing/{resourceId}", { resourceId: "3" })',
    ],
)
def test_a_wrong_prompt_or_template_is_a_type_error_before_anything_runs(
    gateway: GatewayProcess, call: str
) -> None:
    code = f"""console.log("ran");
import {{ prompts, resources }} from "toolscript";
await {call};
"""
    done = toolscript_cli("exec", code, cwd=gateway.directory)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    assert "TS2" in done.stderr and "<inline>.ts:3:" in done.stderr, done.stderr


def test_get_types_shows_the_prompts_and_templates(gateway: GatewayProcess) -> None:
    shown = toolscript_cli("get-types", "everything", cwd=gateway.directory)
    assert shown.returncode == 0, shown.stderr
    assert "declare const prompts: {" in shown.stdout
    assert 'get(name: "args-prompt", args: {' in shown.stdout
    assert "template(template: " in shown.stdout
    one_tool = toolscript_cli("get-types", "everything", "echo", cwd=gateway.directory)
    assert "declare const prompts" not in one_tool.stdout


HOSTILE = "*/ `${Deno.exit(7)}` \"'\\\n\u2028</script> /* x"
VARIABLE = "*/ \"'`\\ x"  # a template variable holds no brace


def test_a_module_of_hostile_prompts_and_templates_type_checks(tmp_path: Path) -> None:
    from toolscript.codegen.offered import PROMPTS, TEMPLATES

    offered = {
        PROMPTS: [
            {
                "name": HOSTILE,
                "description": HOSTILE,
                "arguments": [{"name": HOSTILE, "description": HOSTILE, "required": True}],
            },
            {"name": "plain", "arguments": [{"name": "a-b", "required": True}]},
        ],
        TEMPLATES: [{"uriTemplate": "x://{" + VARIABLE + "}/{id}", "name": HOSTILE}],
    }
    module = render_module([], offering=[(HOSTILE, "evil")], offered={HOSTILE: offered})
    (tmp_path / "tools.ts").write_text(module)
    name, variable = json.dumps(HOSTILE), json.dumps(VARIABLE)
    (tmp_path / "good.ts").write_text(
        'import { prompts, resources } from "./tools.ts";\n'
        f"await prompts.evil.get({name}, {{ {name}: 'v' }});\n"
        "await prompts.evil.get('plain', { 'a-b': 'v' });\n"
        f"await resources.evil.template({name}, {{ {variable}: 'v', id: '1' }});\n"
    )
    checked = deno_check([tmp_path / "good.ts"], tmp_path / "deno")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (tmp_path / "bad.ts").write_text(
        'import { prompts } from "./tools.ts";\nawait prompts.evil.get("plain", {});\n'
    )
    refused = deno_check([tmp_path / "bad.ts"], tmp_path / "deno")
    assert refused.returncode != 0 and "TS2769" in refused.stdout + refused.stderr


CHANGING_SERVER = """
import os
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt

server = MCPServer("changing")


@server.prompt(description="The first prompt")
def first(topic: str, tone: str = "plain") -> str:
    return f"{tone} words about {topic}"


@server.resource("notes://{folder}/{name}")
def note(folder: str, name: str) -> str:
    return f"{folder}|{name}"


@server.tool(structured_output=False)
async def add_prompt(name: str, notify: bool, ctx: Context) -> str:
    def made(subject: str) -> str:
        return f"{name}: {subject}"

    server.add_prompt(Prompt.from_function(made, name=name, description="added at run time"))
    if notify:
        await ctx.request_context.session.send_prompt_list_changed()
    return "added"


if os.environ.get("BROKEN_PROMPTS"):

    async def broken() -> list[object]:
        raise RuntimeError("prompts are broken today")

    server.list_prompts = broken  # type: ignore[method-assign]

server.run()
"""


@pytest.fixture
def changing(tmp_path: Path) -> Iterator[GatewayProcess]:
    script = tmp_path / "changing_server.py"
    script.write_text(CHANGING_SERVER)
    config = {
        "mcpServers": {
            "changing": {"command": sys.executable, "args": [str(script)]},
            "broken": {
                "command": sys.executable,
                "args": [str(script)],
                "env": {"BROKEN_PROMPTS": "1"},
            },
        },
        "search": {"semantic": False},
    }
    started = GatewayProcess(config, tmp_path)
    try:
        started.wait_for_health(
            lambda h: all(s["state"] == "connected" for s in h["servers"].values())
        )
        yield started
    finally:
        started.stop()


def exec_code(gateway: GatewayProcess, code: str) -> tuple[int, str]:
    done = toolscript_cli("exec", code, cwd=gateway.directory)
    return done.returncode, done.stdout + done.stderr


def module_has(gateway: GatewayProcess, text: str) -> bool:
    return text in gateway.client.get("runtime/tools.ts").text


def wait_for_module(gateway: GatewayProcess, text: str) -> None:
    wait_until(
        lambda: gateway.client.get("runtime/tools.ts").text,
        lambda module: text in module,
        30,
        f"{text!r} in the module",
        log=lambda: gateway.log,
    )


def test_prompts_that_change_reach_the_module(changing: GatewayProcess) -> None:
    use_second = """import { prompts } from "toolscript";
return (await prompts.changing.get("second", { subject: "x" })).messages.length;
"""
    code, said = exec_code(changing, use_second)
    assert code == 1 and "TS2" in said, said  # not offered yet: a type error
    code, said = exec_code(
        changing,
        'import { tools } from "toolscript";\n'
        'return await tools.changing.addPrompt({ name: "second", notify: true });',
    )
    assert code == 0, said
    wait_for_module(changing, 'get(name: "second", args: {')
    code, said = exec_code(changing, use_second)
    assert code == 0 and said.strip() == "1", said
    # Changed without a word: a live listing (here the CLI's) reaches the module too.
    code, said = exec_code(
        changing,
        'import { tools } from "toolscript";\n'
        'return await tools.changing.addPrompt({ name: "third", notify: false });',
    )
    assert code == 0, said
    listed = toolscript_cli("list-prompts", "changing", cwd=changing.directory)
    assert "third" in listed.stdout, listed.stderr
    wait_for_module(changing, 'get(name: "third", args: {')


def test_a_template_read_percent_encodes_its_parameters(changing: GatewayProcess) -> None:
    code, said = exec_code(
        changing,
        'import { resources } from "toolscript";\n'
        'const [read] = await resources.changing.template("notes://{folder}/{name}", '
        '{ folder: "a b", name: "x?y" });\nreturn read.uri;',
    )
    assert code == 0, said
    assert json.loads(said) == "notes://a%20b/x%3Fy"


def test_a_server_whose_prompt_list_fails_stays_with_its_tools(changing: GatewayProcess) -> None:
    health = changing.client.get("health").json()["servers"]["broken"]
    assert health["state"] == "connected" and health["tools"] >= 1
    servers = {s["name"]: s for s in changing.client.get("servers").json()}
    assert any("prompts/list failed" in w for w in servers["broken"]["warnings"]), servers
    assert module_has(changing, "template(template: ")
    code, said = exec_code(
        changing, 'import { prompts } from "toolscript";\nawait prompts.broken.get("first");'
    )
    assert code == 1 and "TS2" in said, said  # its prompts are typed as none
