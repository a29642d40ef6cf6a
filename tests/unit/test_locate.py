"""Which servers a script needs (issue 45): exec's own gateway starts only those."""

from __future__ import annotations

import pytest

from toolscript.execution.locate import private_gateway_args, script_namespaces

IMPORT = 'import { tools } from "toolscript";\n'


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (IMPORT + 'return await tools.time.getCurrentTime({ timezone: "UTC" });', ["time"]),
        (
            IMPORT + "await tools.time.a(); await tools.fx?.b(); await tools['gh'].c();",
            ["fx", "gh", "time"],
        ),
        ('import { ToolError, tools } from "toolscript";\nawait tools.myServer.x();', ["myServer"]),
        ('import { ToolError } from "toolscript";\nconsole.log(ToolError);', []),
        ("return 1 + 1;", []),
    ],
)
def test_the_namespaces_a_script_names(code: str, expected: list[str]) -> None:
    assert script_namespaces(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        IMPORT + "const t = tools; await t.time.x();",
        IMPORT + "await tools[name].x();",
        IMPORT + "console.log(Object.keys(tools));",
        IMPORT + "const { time } = tools;",
        IMPORT + "await tools[`time`].x();",
        'import { tools as t } from "toolscript";\nawait t.time.x();',
        'import * as ts from "toolscript";\nawait ts.tools.time.x();',
        'import { scripts } from "toolscript";\nawait scripts.daily({});',
        'import daily from "toolscript/scripts/daily";\nawait daily({});',
        'console.log(Deno.env.get("TOOLSCRIPT_GATEWAY_URL"));',
        IMPORT + "// the tools here\nawait tools.time.x();",
        # resources, prompts, search and describe name servers by strings, not tools.<ns>
        'import { resources } from "toolscript";\nawait resources.time.list();',
        'import { tools, prompts } from "toolscript";\nawait prompts.time.list();',
        'import {\n  resources as r,\n  tools,\n} from "toolscript";\nawait r.time.list();',
        'import { search } from "toolscript";\nawait search("time");',
        'import { describe } from "toolscript";\nawait describe("time", "now");',
    ],
)
def test_a_script_that_may_reach_any_server_needs_them_all(code: str) -> None:
    assert script_namespaces(code) is None


def test_the_gateway_is_told_what_the_script_needs() -> None:
    args = private_gateway_args("--ephemeral", None, None, search=False, needs=["time", "fx"])
    assert args[-1] == "--needs=time,fx"
    assert "--needs=" in private_gateway_args("--ephemeral", None, None, needs=[])
    assert not any(a.startswith("--needs") for a in private_gateway_args("--ephemeral", None, None))
