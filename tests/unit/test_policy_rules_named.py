"""A policy rule that names a tool the server does not have is said, with the name it may
mean: ``"convert_tme": "ask"`` was taken without a word, and ``convert_time`` ran unasked."""

from __future__ import annotations

from toolscript.policy import unmatched_rules

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
