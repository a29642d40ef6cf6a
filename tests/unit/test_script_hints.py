"""What exec tells about a script that did not do what its author meant: a module name used
without its import, a default export nothing calls."""

from __future__ import annotations

import pytest

from toolscript.execution.command import missing_import, uncalled_default_export


@pytest.mark.parametrize(
    ("code", "name"),
    [
        ("return await tools.time.getCurrentTime({ timezone: 'UTC' })", "tools"),
        ('return await tools["time"].getCurrentTime({})', "tools"),
        ("return await scripts.weeklyReport({ team: 'infra' })", "scripts"),
        ("return await resources.everything.list()", "resources"),
        ("return await prompts.everything.get('simple-prompt')", "prompts"),
        ("return await search('send an email')", "search"),
        ("return await describe('everything', 'echo')", "describe"),
        ('await progress("halfway", 0.5); return 2', "progress"),
    ],
)
def test_a_module_name_used_without_its_import_is_named(code: str, name: str) -> None:
    assert missing_import(code) == name


@pytest.mark.parametrize(
    "code",
    [
        "return 1",
        "const tools = { a: 1 }; return tools.a",
        "function search(q: string) { return q } return search('x')",
        "return 'abc'.search('b')",
        "const mytools = { a: 1 }; return mytools.a",
        "let resources: string[] = []; return resources.length",
    ],
)
def test_a_script_that_uses_none_or_declares_its_own_needs_no_import(code: str) -> None:
    assert missing_import(code) is None


@pytest.mark.parametrize(
    "code",
    [
        "export default async function report(input: { team: string }) {\n  return input;\n}\n",
        "/** Sums. */\nexport default function (input: { a: number }) { return input.a }",
        "export default async function* rows() { yield 1 }",
    ],
)
def test_a_default_export_nothing_calls_is_found(code: str) -> None:
    assert uncalled_default_export(code)


@pytest.mark.parametrize(
    "code",
    [
        "return 1",
        "export default async function f(i: { a: number }) { return i.a }\nreturn await f({ a: 1 })",
        "async function main() {}\nexport default main;\nawait main();",
        "export const x = 1;",
    ],
)
def test_a_script_that_calls_its_export_or_has_none_is_left_alone(code: str) -> None:
    assert not uncalled_default_export(code)
