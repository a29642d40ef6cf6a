"""Stop 67's attacks on a real gateway (a red-team pass over what stop 66 changed, and the
agent with a shell).

What got through, now closed (each test performs the attack):

- An "always" approval was bound to the entry's command and args joined with spaces (or
  its URL): an entry given another ``env``, ``cwd`` or header (another program, another
  account), or its args split otherwise, kept it (unit: test_attacks_stop67_identity).
- The approval of the call a run stopped at was bound to the tool and arguments alone: the
  entry repointed before the resume, the call was made on the other server, unasked (and so
  for a prompt answered while the entry changed; unit: test_attacks_stop67_approvals).
- A FIFO planted as a kept output (or a ``.reserved``) in the state folder stalled every
  project's next kept output under the budget's lock (unit: test_attacks_stop67_outputs).
- A ``requires-python`` number past Python's 4,300 digits failed the tool file with a bare
  ValueError (unit: test_attacks_stop67_requirespython).

What held, or is low and left: a resume cannot widen its limits
past a new run's (a background one's max-output is checked after the carry); a writer killed
mid-write lets go of its flock, its folder dropped when room is needed; the agent holding
``.kept-outputs.lock`` or ``.toolscript/.build.lock`` stalls runs (its shell can stop them
anyway) and gains no approval; an agent's long run holding kept output keeps a person's
output past --max-output from being kept (the preview is still shown); a state file the
agent plants in the user's cache points exec at its own gateway, but that gateway holds no
approval the agent could not give with the token it reads there (docs/security.md).
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import GatewayProcess, toolscript_cli
from tests.integration.test_policy import (
    WRITE_THEN_DELETE,
    exec_script,
    journal_tools,
    records_config,
    run_id_of,
)


def test_approvals_do_not_follow_an_entry_given_another_env(tmp_path: Path) -> None:
    """The person approves the stopped call, and every call of another tool; the entry is
    then given another ``env`` (its edit trusted): the resume and the tool ask again."""
    journal = tmp_path / "journal.jsonl"
    config = records_config(journal)
    gateway = GatewayProcess(config, tmp_path)
    try:
        stopped = exec_script(tmp_path, WRITE_THEN_DELETE)
        assert stopped.returncode == 120, stopped.stderr
        run_id = run_id_of(stopped.stderr)
        approved = toolscript_cli("approve", run_id, cwd=tmp_path)
        assert approved.returncode == 0, approved.stderr
        always = toolscript_cli("approve", "--tool", "records.drop_table", cwd=tmp_path)
        assert always.returncode == 0, always.stderr
    finally:
        gateway.stop()
    config["mcpServers"]["records"]["env"]["RECORDS_ACCOUNT"] = "someone-else"
    gateway = GatewayProcess(config, tmp_path)
    try:
        resumed = toolscript_cli("exec", "--resume", run_id, cwd=tmp_path)
        assert resumed.returncode == 120, resumed.stderr  # stopped at the call again
        assert "records.delete_record needs approval" in resumed.stderr
        # why it asks again, in exec's words and in the log's (`runs show`; `runs wait` and
        # the face give the same stop message)
        why = "as the config had it when that run stopped; its entry changed since"
        assert why in resumed.stderr, resumed.stderr
        shown = toolscript_cli("runs", "show", run_id_of(resumed.stderr), cwd=tmp_path)
        assert why in shown.stdout, shown.stdout
        asked = gateway.call("records__drop_table", {"name": "t", "password": "p"})
        assert asked.status_code == 403 and asked.json()["error"] == "approval_required"
        assert journal_tools(journal) == ["write_record"]  # nothing made on the new entry
        # approved again, as the entry is now, the resume goes on
        again = run_id_of(resumed.stderr)
        assert toolscript_cli("approve", again, cwd=tmp_path).returncode == 0
        done = toolscript_cli("exec", "--resume", again, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert journal_tools(journal) == ["write_record", "delete_record"]
    finally:
        gateway.stop()
