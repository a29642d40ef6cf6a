"""A recent call is shown to the agent only when a run of its own made it
(``gateway/recentcalls.py``): a person's calls, and those a file of an older toolscript
kept without saying whose they were, are the person's alone."""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.gateway.recentcalls import RecentCalls


def test_the_agent_is_shown_only_what_its_own_runs_called(tmp_path: Path) -> None:
    calls = RecentCalls(tmp_path, tuple)
    calls.note("fx__read_mail", {"box": "inbox"}, "the person's mail")
    calls.note("fx__search", {"q": "weather"}, "sunny", agents=True)
    persons, agents = calls.of("fx__read_mail"), calls.of("fx__search")
    assert persons is not None and persons.result == '"the person\'s mail"'
    assert agents is not None and agents.agents
    assert calls.of("fx__read_mail", agents=True) is None
    assert calls.of("fx__search", agents=True) == agents
    # a person's newer call of the same tool takes the example from the agent
    calls.note("fx__search", {"q": "my salary"}, "secret")
    assert calls.of("fx__search", agents=True) is None

    calls.save()
    again = RecentCalls(tmp_path, tuple)
    assert again.of("fx__read_mail", agents=True) is None
    assert again.of("fx__read_mail") is not None


def test_a_call_kept_by_an_older_file_is_the_persons(tmp_path: Path) -> None:
    kept = {"fx__read_mail": {"arguments": "{}", "result": '"mail"', "cut": False}}
    (tmp_path / "recent-calls.json").write_text(json.dumps(kept))
    calls = RecentCalls(tmp_path, tuple)
    assert calls.of("fx__read_mail") is not None
    assert calls.of("fx__read_mail", agents=True) is None
