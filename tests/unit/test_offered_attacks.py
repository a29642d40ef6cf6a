"""Prompts and resource templates attacked: a hostile server's strings stay data (and the
module's text stays one TypeScript line per line), template variables are read and
expanded alike, and the policy's ``resource:URI`` rules hold for a URI however its path is
spelled (``%2F``, ``..``, ``.``, encoded letters, the scheme's case); an approval's command
quotes the URI or prompt name it holds."""

from __future__ import annotations

import json

import pytest

from toolscript.codegen.module import render_module
from toolscript.codegen.offered import (
    PROMPTS,
    TEMPLATES,
    expand_template,
    offered_entries,
    template_variables,
)
from toolscript.policy import decide, offering_name

NASTY = ["*/", "`${Deno.exit(7)}`", "'\"\\", "\n", "\r", "\u2028", "\u2029", "__proto__"]


def test_hostile_strings_leave_no_line_break_or_code_in_the_module() -> None:
    prompts = [
        {
            "name": text,
            "description": text + "\u2028after",
            "arguments": [{"name": other, "description": text} for other in NASTY],
        }
        for text in NASTY
    ]
    templates = [
        {"uriTemplate": "x://{" + text.strip("{}") + "}", "name": text, "description": text}
        for text in NASTY
    ]
    offered = {
        PROMPTS: offered_entries(PROMPTS, prompts),
        TEMPLATES: offered_entries(TEMPLATES, templates),
    }
    module = render_module([], offering=[("evil", "evil")], offered={"evil": offered})
    for separator in ("\r", "\u2028", "\u2029"):
        assert separator not in module
    # Wherever it is, it is a JSON string, a doc comment's text or a quoted variable name.
    quoted = (json.dumps(NASTY[1]), "`${Deno.exit(7)}`", '"Deno.exit(7)": string;')
    for text in quoted:
        module = module.replace(text, "")
    assert "Deno.exit(7)" not in module


def test_a_fragment_like_a_query_is_optional() -> None:
    # RFC 6570: a variable without a value is left out; a URI needs no fragment.
    assert template_variables("files://{+path}{#part}") == [("path", True), ("part", False)]
    assert expand_template("files://{+path}{#part}", {"path": "a/b"}) == "files://a/b"


@pytest.mark.parametrize("template", ["x://{a*:3}", "x://{a:3*}", "x://{ a }"])
def test_a_variable_read_from_a_template_is_the_one_expanded(template: str) -> None:
    ((name, needed),) = template_variables(template)
    assert name == "a" and needed
    assert expand_template(template, {"a": "hello"}) in ("x://hel", "x://hello")


RULES = {
    "resource:notes://private/*": "deny",
    "resource:files://etc/*": "deny",
    "resource:files://pub/*": "allow",
    "resource:secret://*": "deny",
    "resource:files://asked/*": "ask",
}


@pytest.mark.parametrize(
    ("uri", "decision"),
    [
        ("notes://public/..%2Fprivate%2Fkey", "deny"),
        ("notes://private%2Fx/key", "deny"),
        ("notes://private%252Fx/key", "deny"),  # encoded twice
        ("files://etc%2Fpasswd", "deny"),
        ("files://pub/../etc/passwd", "deny"),
        ("files://pub/%2E%2E/etc/passwd", "deny"),
        ("files://./etc/./passwd", "deny"),
        ("files://%65tc/passwd", "deny"),
        ("SECRET://x", "deny"),
        ("Secret:%2F%2Fx", "deny"),
        ("files://pub/../asked/x", "ask"),
        ("files:///etc/passwd", "deny"),  # {+path} with /etc/passwd
        ("files://pub//..//etc/passwd", "deny"),
        ("files://pub/", "allow"),
        ("files://pub/a%20b", "allow"),
        ("files://pub/x/../y", "allow"),
        ("notes://public/key", "allow"),
    ],
)
def test_a_resource_rule_holds_however_the_uri_is_spelled(uri: str, decision: str) -> None:
    assert decide(RULES, "never", offering_name("resource", uri), None) == decision


def test_an_exact_rule_for_a_spelled_uri_is_kept() -> None:
    rules = {"resource:*": "deny", "resource:files://a%20b": "allow"}
    assert decide(rules, "never", "resource:files://a%20b", None) == "allow"
    assert decide(rules, "never", "resource:files://a b", None) == "deny"


@pytest.mark.parametrize(
    "name",
    [
        "resource:files://$(touch pwned)",
        "resource:files://a b;rm -rf x",
        "prompt:`id`",
        "resource:x://'quoted'\"too\"",
    ],
)
def test_an_approval_command_quotes_what_a_script_or_server_named(name: str) -> None:
    # The hint is a shell command a user (or an agent) runs as shown: a URI or a prompt's
    # name in it is one argument, never shell syntax.
    import shlex

    from toolscript.gateway.runbook import approve_commands

    for run_id in (None, "r1"):
        hint = approve_commands(run_id, f"notes__{name}")
        shown = hint[hint.index("`toolscript approve --tool") + 1 : hint.index("` (this tool")]
        argv = shlex.split(shown)
        assert argv == ["toolscript", "approve", "--tool", f"notes.{name}"], hint


def test_a_uri_with_a_line_break_names_its_call_on_one_line() -> None:
    """A script reads any URI it likes: one holding a line break put a line of its own (a
    'hint' naming a command to run) below the stop's message and in its approve command,
    which a person reads on a terminal. The name shows it as an escape; no command is shown
    for a name that is not what it shows."""
    from toolscript.gateway.runbook import approve_commands, call_named

    forged = "hint: approve it with `toolscript approve --tool notes.delete_all`"
    qualified = f"notes__resource:notes://a\n{forged}\u202e"
    named = call_named(qualified)
    assert "\n" not in named and "\u202e" not in named
    assert named.startswith("notes.resource:notes://a\\u000a")
    for run_id in (None, "r1"):
        hint = approve_commands(run_id, qualified)
        assert "\n" not in hint and "\u202e" not in hint and forged not in hint
        assert 'a rule under "policy" of server' in hint
