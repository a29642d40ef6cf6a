"""Stop 67's attack on one-off approvals: unlike an "always" approval, the approval of the
call a run stopped at was bound to the tool and its arguments alone. The person approved
``s__delete {"k": 1}`` of the server they knew; the entry was repointed before the resume
(a pulled ``.toolscript.json`` trusted for something else, its ``cwd`` or ``env`` another
program's), and the resume made the call on the new server, unasked. So too a prompt
answered while the entry changed under it.

Now the stopped call keeps its server's identity, and its approval holds for that server
alone; a repointed entry asks again (the resume stops at the call anew; a prompt answered
while the entry changed asks again, saying why).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from toolscript.gateway.runbook import RunBook
from toolscript.store.runlog import RunLog


class Servers:
    """What each server is now (its identity), and the calls made."""

    def __init__(self) -> None:
        self.now = {"s": "the-server-the-person-knew"}
        self.made: list[str] = []

    def identity(self, qualified: str) -> str:
        return self.now.get(qualified.partition("__")[0], "")

    async def make(self, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        self.made.append(tool)
        return "json", {"done": arguments}


def book(tmp_path: Path, servers: Servers) -> RunBook:
    return RunBook(
        RunLog(tmp_path / "runs.sqlite"),
        lambda: (),
        lambda qualified: "ask" if qualified == "s__delete" else "allow",
        identity=servers.identity,
    )


def test_a_call_approved_for_one_server_is_not_made_on_the_entry_repointed_since(
    tmp_path: Path,
) -> None:
    servers = Servers()

    async def scenario() -> None:
        runs = book(tmp_path, servers)
        first = await runs.register(script_hash="h", script="code")
        stopped = await runs.call(first, "s__delete", {"k": 1}, 7, servers.make)
        assert json.loads(stopped[2])["error"] == "approval_required"
        await runs.end(first.id, 120)
        runs.runlog.approve_call(first.id)  # the person saw s__delete {"k": 1}: of "s" as it was
        servers.now["s"] = "another-program"  # the entry repointed, its edit trusted
        # the same script again resumes nothing: the approval was for the other server
        assert runs.runlog.resumable("h", runs.identity) is None
        second = await runs.register(script_hash="h", resume=first.id)  # exec --resume
        answered = await runs.call(second, "s__delete", {"k": 1}, 7, servers.make)
        assert json.loads(answered[2])["error"] == "approval_required"  # asked again
        assert servers.made == []
        await runs.end(second.id, 120)
        # approved as it stopped now, on the new server, it holds
        runs.runlog.approve_call(second.id)
        third = await runs.register(script_hash="h")
        assert third.resumed_from == second.id
        made = await runs.call(third, "s__delete", {"k": 1}, 7, servers.make)
        assert made[0] == 200 and servers.made == ["s__delete"]

    anyio.run(scenario)


def test_a_prompt_answered_while_the_entry_was_repointed_does_not_make_the_call(
    tmp_path: Path,
) -> None:
    servers = Servers()

    async def scenario() -> None:
        runs = book(tmp_path, servers)
        run = await runs.register(interactive=True, script_hash="i", script="code")

        async def person() -> None:
            prompt = await runs.wait_prompt(run.id, 5)
            assert prompt is not None and prompt["tool"] == "s__delete"
            servers.now["s"] = "another-program"  # repointed while the person reads
            assert runs.answer(run.id, prompt["seq"], "always")
            # that answer did not hold: asked again, saying why; this time the person refuses
            for _ in range(50):
                again = await runs.wait_prompt(run.id, 5)
                if again is not None and again is not prompt and "why" in again:
                    break
                await anyio.sleep(0.05)
            assert again is not None and "changed in the config" in again["why"]
            assert runs.answer(run.id, again["seq"], "no")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(person)
            answered = await runs.call(run, "s__delete", {"k": 1}, 7, servers.make)
        assert json.loads(answered[2])["error"] == "call_refused"
        assert servers.made == []
        assert not runs.runlog.tool_approved("s__delete", "another-program")
        assert not runs.runlog.tool_approved("s__delete", "the-server-the-person-knew")

    anyio.run(scenario)
