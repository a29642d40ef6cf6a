"""A script holds many calls of a slow internal tool (one that waits on a web API, say) at
once: they ran in anyio's default threads, 40 in all, which the gateway's own work shares
(the run log, approval checks, a new run's registration), so every other run waited as
long as the calls did. A tool file's calls now have threads of their own, and past them
wait their turn."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import anyio.to_thread

from toolscript.config import load_config
from toolscript.upstream.local import INTERNAL_CALL_THREADS, LocalToolServer

SLOW_TOOL = '''"""A tool as slow as the test wants."""

import os
import time


def wait_for(path: str) -> str:
    """Answer once the file ``path`` exists."""
    while not os.path.exists(path):
        time.sleep(0.02)
    return "done"
'''


def test_a_scripts_slow_internal_calls_hold_none_of_the_gateways_threads(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "slow.py").write_text(SLOW_TOOL)
    (tmp_path / ".toolscript.json").write_text(json.dumps({"localTools": {"dir": "tools"}}))
    server = LocalToolServer(load_config(tmp_path / ".toolscript.json").servers[0], None)
    release = tmp_path / "release"
    calls = 45  # past anyio's 40 default threads
    answers: list[str] = []
    went_on: list[bool] = []

    async def call() -> None:
        answer = await server.call_tool("wait_for", {"path": str(release)})
        answers.append(answer["content"][0]["text"])

    async def attack() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run)
            await server.first_attempt_done.wait()
            async with anyio.create_task_group() as held:
                for _ in range(calls):
                    held.start_soon(call)
                await anyio.sleep(0.3)  # the calls have taken their threads (and wait)
                # the gateway's own work in a thread, while the tool's calls are held
                with anyio.move_on_after(10):
                    await anyio.to_thread.run_sync(lambda: None)
                    went_on.append(True)
                release.touch()
            tasks.cancel_scope.cancel()

    anyio.run(attack)
    assert went_on == [True]
    assert answers == ["done"] * calls  # past its own threads, a call waits its turn
    assert calls > INTERNAL_CALL_THREADS
