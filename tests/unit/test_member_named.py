"""A member of ``tools.<server>`` that is no tool, as messages name it."""

from __future__ import annotations

from toolscript.gateway.runbook import member_named


def test_a_member_named_like_a_path_is_quoted_as_the_script_wrote_it() -> None:
    assert member_named("records", "records", "../../runs") == 'tools.records["../../runs"]'
    assert member_named("my-db", "myDb", "a.b") == 'tools.myDb["a.b"]'
    assert member_named("records", "records", "..") == 'tools.records[".."]'


def test_a_member_that_reads_as_a_name_is_named_as_tools_are() -> None:
    assert member_named("records", "records", "deleteRecord") == "records.deleteRecord"
    assert member_named("gh", "gh", "get-issue") == "gh.get-issue"


def test_a_members_line_break_and_length_are_shown_safely() -> None:
    named = member_named("records", "records", "a\nb/" + "x" * 5000)
    assert (
        "\n" not in named and named.startswith('tools.records["a\\u000ab/x') and len(named) < 1000
    )
    assert member_named("r", "r", 'a"] + b["c') == 'tools.r["a\\"] + b[\\"c"]'
