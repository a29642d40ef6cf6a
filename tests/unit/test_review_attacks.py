"""Review of the day's changes: what broke, each kept as the test that failed before its fix."""

from __future__ import annotations

import pytest

from toolscript.plumbing.checkoptions import uses_node


@pytest.mark.parametrize(
    "code",
    [
        # A template's text is no code, but its quotes open no string either: the two
        # apostrophes read as one string hid the `${...}` between them, and the script
        # was checked without Node's types ("Cannot find name 'Buffer'") though it runs.
        "console.log(`Can't read ${Buffer.from('x').length}, it's odd`);",
        "const line = `don't ${process.pid} won't`;",
        'const at = `"${setImmediate(() => {})}"`;',
        # nested templates, braces inside a substitution
        "const t = `a ${ {b: 1}.b } ${`in ${global} it's`} isn't`;",
        # a template never closed: what follows is read as code
        "const t = `open ${1} Buffer",
    ],
)
def test_node_named_in_a_templates_substitution_is_seen(code: str) -> None:
    assert uses_node(code)


@pytest.mark.parametrize(
    "code",
    [
        "console.log(`process ${1} Buffer`);",
        "const t = `it's ${'a'} Buffer's`;",
        "const t = `a\\` Buffer`;",
        "const t = `$process`;",
    ],
)
def test_node_named_in_a_templates_text_is_not_code(code: str) -> None:
    assert not uses_node(code)
