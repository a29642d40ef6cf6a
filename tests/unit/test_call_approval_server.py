"""A call approval is bound to the server its call was stopped for (``store/runlog.py``):
the resume of a run whose server was repointed since (another command or URL) does not
use it; one recorded before calls were bound to their server asks once more (as a tool
approval of before identities does)."""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.store.runlog import RunLog


def stopped_log(path: Path, call: dict[str, str]) -> RunLog:
    log = RunLog(path)
    log.write(
        runs=[
            {
                "id": "stopped-1",
                "status": "awaiting_approval",
                "stopped": json.dumps({"call": call}),
                "started": 1.0,
                "script": "code",
                "script_hash": "h",
            }
        ]
    )
    log.approve_call("stopped-1")
    return log


def test_a_call_approval_is_used_only_while_its_server_is_the_one_stopped_for(
    tmp_path: Path,
) -> None:
    call = {"tool": "s__delete", "digest": "d1", "server_identity": "first"}
    log = stopped_log(tmp_path / "runs.sqlite", call)
    assert log.resumable("h", lambda tool: "repointed") is None
    assert not log.use_call_approval("stopped-1", "s__delete", "d1", "resumed-1", "repointed")
    assert log.resumable("h", lambda tool: "first") is not None
    assert log.use_call_approval("stopped-1", "s__delete", "d1", "resumed-2", "first")
    assert not log.use_call_approval("stopped-1", "s__delete", "d1", "resumed-3", "first")


def test_a_call_approval_of_a_stop_that_named_no_server_asks_once_more(tmp_path: Path) -> None:
    log = stopped_log(tmp_path / "runs.sqlite", {"tool": "s__delete", "digest": "d1"})
    assert log.resumable("h", lambda tool: "any") is None
    assert not log.use_call_approval("stopped-1", "s__delete", "d1", "resumed-1", "any")
