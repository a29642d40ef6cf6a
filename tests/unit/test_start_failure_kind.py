"""An ephemeral gateway that could not start: the run that started it answers with the
gateway's own error kind (``--json`` said ``"error": "error"`` of a ``storage_error``)."""

from __future__ import annotations

from toolscript.errors import ConfigError, ExecutionError, StorageError, as_kind
from toolscript.execution.locate import _start_failure


def test_the_kind_after_the_error_and_its_hint_is_read() -> None:
    said = (
        "a log line\ntoolscript: error: toolscript cannot write /x: not a folder\n"
        "hint: point it elsewhere\nkind: storage_error\n"
    )
    assert _start_failure(said) == (
        "toolscript cannot write /x: not a folder",
        "point it elsewhere",
        "storage_error",
    )
    assert _start_failure("toolscript: error: broken\nkind: config_error\n") == (
        "broken",
        "",
        "config_error",
    )
    assert _start_failure("toolscript: error: broken\nhint: fix it\n") == ("broken", "fix it", "")


def test_a_relayed_error_answers_as_its_kind() -> None:
    relayed = as_kind(ExecutionError("could not start", hint="h"), "storage_error")
    assert relayed.to_dict() == {
        "error": "storage_error",
        "message": "could not start",
        "hint": "h",
    }
    assert relayed.exit_code == StorageError.exit_code
    config = as_kind(ExecutionError("bad"), "config_error")
    assert (config.kind, config.exit_code) == ("config_error", ConfigError.exit_code)
    # a kind no error has (a forged line): left as it was
    unknown = as_kind(ExecutionError("bad"), "made_up")
    assert (unknown.kind, unknown.exit_code) == ("error", ExecutionError.exit_code)
