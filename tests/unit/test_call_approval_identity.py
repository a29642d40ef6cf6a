"""A one-off approval (of the call a run stopped at, or a "yes" at an interactive prompt)
holds for the server the call was shown with: an entry repointed meanwhile asks again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from toolscript.gateway.runbook import RunBook
from toolscript.store.runlog import RunLog


class Servers:
    """The calls made, and the identity the config gives server ``s`` now."""

    def __init__(self) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []
        self.identity = "first"

    async def make(self, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        self.made.append((tool, arguments))
        return "json", {"n": len(self.made)}


def book(tmp_path: Path, servers: Servers) -> RunBook:
    return RunBook(
        RunLog(tmp_path / "runs.sqlite"),
        lambda: (),
        lambda qualified: "ask" if qualified == "s__delete" else "allow",
        identity=lambda qualified: servers.identity,
    )


def test_an_approved_call_asks_again_once_its_server_was_repointed(tmp_path: Path) -> None:
    servers = Servers()

    async def scenario() -> None:
        runs = book(tmp_path, servers)
        first = await runs.register(script_hash="h", script="code")
        await runs.call(first, "s__delete", {"k": 1}, 7, servers.make)
        await runs.end(first.id, 120)
        runs.runlog.approve_call(first.id)  # the person saw the call as "first" runs it
        servers.identity = "second"  # the entry now runs another command, trusted again
        # the same script again resumes nothing: its approval holds for no server now
        assert (await runs.register(script_hash="h")).resumed_from == ""
        resumed = await runs.register(script_hash="h", resume=first.id)
        status, _, body = await runs.call(resumed, "s__delete", {"k": 1}, 7, servers.make)
        assert servers.made == []
        stop = json.loads(body)
        assert status != 200 and stop["error"] == "approval_required"
        assert "needs approval before it runs again" in stop["message"]
        assert "changed since (its command, args, cwd, env, URL or headers)" in stop["message"]
        assert stop["call"]["server_identity"] == "second"
        await runs.end(resumed.id, 120)
        runs.runlog.approve_call(resumed.id)  # approved as "second" runs it: it holds
        again = await runs.register(script_hash="h", resume=resumed.id)
        status, _, _ = await runs.call(again, "s__delete", {"k": 1}, 7, servers.make)
        assert status == 200 and servers.made == [("s__delete", {"k": 1})]

    anyio.run(scenario)


def test_a_yes_given_while_the_server_was_repointed_asks_again_saying_why(
    tmp_path: Path,
) -> None:
    servers = Servers()

    async def scenario() -> None:
        runs = book(tmp_path, servers)
        run = await runs.register(interactive=True)
        asked: list[dict[str, Any]] = []

        async def person() -> None:
            for _ in range(2):
                prompt = await runs.wait_prompt(run.id, 5)
                assert prompt is not None
                asked.append(prompt)
                servers.identity = "second" if len(asked) == 1 else servers.identity
                assert runs.answer(run.id, prompt["seq"], "yes")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(person)
            status, _, _ = await runs.call(run, "s__delete", {"k": 1}, 7, servers.make)
        assert status == 200 and len(servers.made) == 1
        assert [p["server_identity"] for p in asked] == ["first", "second"]
        assert "why" not in asked[0]
        assert "changed in the config" in asked[1]["why"]

    anyio.run(scenario)


def test_the_terminal_says_why_it_asks_again() -> None:
    import io
    import os

    from toolscript.execution.runhandle import terminal_answer

    reading, writing = os.pipe()
    os.write(writing, b"y\n")
    os.close(writing)
    out = io.StringIO()
    prompt = {
        "seq": 1,
        "tool": "s__delete",
        "arguments": {"k": 1},
        "run": "r1",
        "why": "server 's' changed in the config\x1b[2J",
    }
    with os.fdopen(reading) as source:
        assert terminal_answer(prompt, stdin=source, stderr=out) == "yes"
    shown = out.getvalue()
    assert shown.count("asked again: server 's' changed in the config") == 1
    assert "\x1b" not in shown
