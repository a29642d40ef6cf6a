"""A script that uses toolscript's module without importing it is told which import it lacks."""

from __future__ import annotations

import pytest

from toolscript.execution.command import missing_import


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
