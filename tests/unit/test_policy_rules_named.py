"""A policy rule that names a tool the server does not have is said, with the name it may
mean: ``"convert_tme": "ask"`` was taken without a word, and ``convert_time`` ran unasked."""

from __future__ import annotations

import anyio

from toolscript.config import ServerConfig
from toolscript.policy import MAX_UNMATCHED_SAID, unmatched_rules
from toolscript.upstream.server import UpstreamServer

TOOLS = ["convert_time", "get_current_time"]


def test_a_misspelt_tool_name_is_said_with_the_closest_name() -> None:
    assert unmatched_rules({"convert_tme": "ask"}, TOOLS) == [
        'policy rule "convert_tme" names none of its 2 tools (did you mean "convert_time"?); '
        "the tool it was meant for gets the default decision"
    ]
    assert unmatched_rules({"zzz": "deny"}, TOOLS) == [
        'policy rule "zzz" names none of its 2 tools; '
        "the tool it was meant for gets the default decision"
    ]


def test_names_patterns_and_resource_rules_are_quiet() -> None:
    rules = {
        "convert_time": "deny",
        "delete_*": "deny",
        "get_?urrent_time": "allow",
        "[a-z]*": "allow",
        "resource:file:///etc/*": "deny",
        "prompt:secret": "ask",
    }
    assert unmatched_rules(rules, TOOLS) == []


def test_thousands_of_rules_naming_no_tool_are_bounded() -> None:
    # Each exact rule ran difflib against every listed tool on the gateway's event loop:
    # 2,000 rules against 2,000 tools stalled it for minutes, and each was a warning.
    tools = [f"tool_{i}" for i in range(2000)]
    said = unmatched_rules({f"rule_{i}": "ask" for i in range(2000)}, tools)
    assert len(said) == MAX_UNMATCHED_SAID + 1
    assert said[-1].startswith(
        f"{2000 - MAX_UNMATCHED_SAID} more policy rules name none of its 2000 tools"
    )
    assert unmatched_rules({f"tool_{i}": "ask" for i in range(2000)}, tools) == []


def test_a_rule_warning_is_withdrawn_once_a_listing_has_its_tool() -> None:
    # The warning stayed in the server's warnings (gateway status) after the server came
    # to list the tool the rule names.
    server = UpstreamServer(
        ServerConfig(name="sums", transport="stdio", command="x", policy={"wipe": "deny"})
    )
    server.warnings.append("another warning")

    async def listed(*names: str) -> list[str]:
        server._tools_seen = set(names)
        await server._check_rules()
        return server.warnings

    said = anyio.run(listed, "add")
    assert said[0] == "another warning" and said[1].startswith('policy rule "wipe" names none')
    assert anyio.run(listed, "add", "wipe") == ["another warning"]
    assert anyio.run(listed, "add")[1].startswith('policy rule "wipe"')
