"""`toolscript run NAME --input ...` (and the face's run of a saved script) runs a script
holding the input (``saved_script_call``), under the 1 MiB a run may be. The input was
written indented, so 840 KB of it made a 1.08 MB script, and the refusal said "the script
is N bytes" to someone who had written no script."""

from __future__ import annotations

import json

import pytest

from toolscript.errors import UsageError
from toolscript.execution.command import saved_script_call
from toolscript.store.savedscripts import MAX_RUN_SCRIPT_BYTES


def test_a_large_input_is_written_compact_and_runs() -> None:
    items = ["x" * 10] * 60_000  # 840 KB as JSON; indented, over 1 MiB
    code = saved_script_call("count", json.dumps({"items": items}))
    assert len(code.encode()) <= MAX_RUN_SCRIPT_BYTES
    assert code.startswith('import { scripts } from "toolscript";\nreturn await scripts.count(')


def test_a_small_input_stays_indented() -> None:
    code = saved_script_call("count", '{"team": "infra"}')
    assert '{\n  "team": "infra"\n}' in code


def test_an_input_over_the_run_limit_is_named_as_the_input() -> None:
    items = ["x" * 10] * 100_000
    with pytest.raises(UsageError, match="the input is too large: 1,400,011 bytes") as refused:
        saved_script_call("count", json.dumps({"items": items}))
    assert "count was not run" in refused.value.message
    assert refused.value.exit_code == 2
