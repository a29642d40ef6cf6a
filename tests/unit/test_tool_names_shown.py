"""Messages name a tool as users write it and `approve --tool` takes it (``time.get_time``),
never as the gateway's ``time__get_time``, an identifier nobody types."""

from __future__ import annotations

from tests.helpers import question_declined
from toolscript.errors import ToolTimeoutError, tool_named
from toolscript.execution.runhandle import format_trace


def test_the_first_separator_ends_the_servers_name() -> None:
    assert tool_named("time__get_current_time") == "time.get_current_time"
    assert tool_named("fx___private__tool") == "fx._private__tool"  # the tool's own __ kept
    assert tool_named("docs__resource:files://a__b") == "docs.resource:files://a__b"
    for not_a_tool in ("search", "time: resources", "__x", "x__"):
        assert tool_named(not_a_tool) == not_a_tool


def test_a_timeout_names_the_tool_as_users_write_it() -> None:
    error = ToolTimeoutError.after("time", "get_current_time", 2)
    assert error.message == "time.get_current_time timed out after 2 s"


def test_exec_s_question_and_trace_name_the_tool_as_users_write_it() -> None:
    prompt = {"tool": "records__delete_record", "arguments": {"key": "a"}, "run": "R1"}
    question = question_declined(prompt)
    assert "the script calls records.delete_record, which asks" in question
    trace = format_trace(
        {
            "id": "R1",
            "calls": [
                {
                    "seq": 1,
                    "tool": "records__delete_record",
                    "arguments": '{"key":"a"}',
                    "outcome": "ok",
                    "ms": 1.0,
                    "arguments_bytes": 11,
                    "result_bytes": 2,
                }
            ],
        }
    )
    assert '  1  records.delete_record({"key":"a"})  ok' in trace
    assert "__" not in trace + question
