"""What a gateway does before its URL is out, and what waits (issue 45): the warm checker
and the search model start after the URL, once no run is under way; a gateway for one
script's calls builds no search index."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolscript.config import Config, SearchConfig
from toolscript.execution.locate import face_gateway_args, private_gateway_args
from toolscript.gateway import core
from toolscript.gateway.checker import CheckVerdict
from toolscript.gateway.core import Gateway


class FakeChecker:
    """Stands for the warm checker: records when the gateway starts it."""

    def __init__(self) -> None:
        self.started = anyio.Event()

    def module_changed(self, *args: Any) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {"state": "off"}

    async def run(self) -> None:
        self.started.set()
        await anyio.sleep_forever()

    async def check(self, *args: str) -> CheckVerdict:
        return CheckVerdict("unavailable", "the checker is starting")


def gateway(tmp_path: Path, **options: Any) -> Gateway:
    config = Config(path=None, project_dir=tmp_path)
    made = Gateway(
        config,
        cache=tmp_path / "cache",
        search=SearchConfig(semantic=False, cache=False),
        **options,
    )
    made.checker = FakeChecker()  # type: ignore[assignment]
    return made


def test_the_checker_waits_for_the_url_and_for_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "IDLE_BEFORE_BACKGROUND", 0.3)
    served = gateway(tmp_path, after_url=True)
    checker: FakeChecker = served.checker  # type: ignore[assignment]

    async def main() -> None:
        async with served.running():
            await anyio.sleep(0.6)
            assert not checker.started.is_set(), "the checker started before the URL was out"
            run = await served.runs.register()
            served.url_announced()
            await anyio.sleep(0.6)
            assert not checker.started.is_set(), "the checker started while a run was under way"
            await served.runs.end(run.id, 0)
            with anyio.fail_after(5):
                await checker.started.wait()

    anyio.run(main)


def test_runs_back_to_back_hold_the_checker_back_only_so_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that always has a run under way still gets the warm checker, not a cold
    `deno check` for every new script."""
    monkeypatch.setattr(core, "IDLE_BEFORE_BACKGROUND", 0.3)
    monkeypatch.setattr(core, "BACKGROUND_AT_THE_LATEST", 1.0)
    served = gateway(tmp_path, after_url=True)
    checker: FakeChecker = served.checker  # type: ignore[assignment]

    async def main() -> None:
        async with served.running():
            run = await served.runs.register()
            served.url_announced()
            with anyio.fail_after(5):
                await checker.started.wait()
            assert not served.runs.get(run.id).ended, "the run ended before the checker"

    anyio.run(main)


def test_new_scripts_checked_the_slow_way_start_the_checker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent writing new scripts back to back: each was checked with a cold `deno check`
    while the warm checker waited for an idle second; the second such script starts it."""
    from litestar.testing import TestClient

    from toolscript.gateway.app import build_app

    monkeypatch.setattr(core, "IDLE_BEFORE_BACKGROUND", 60.0)
    monkeypatch.setattr(core, "BACKGROUND_AT_THE_LATEST", 60.0)
    served = gateway(tmp_path)
    checker: FakeChecker = served.checker  # type: ignore[assignment]
    script = {"code": "return 1", "path": "s.ts", "module": "m.ts", "hash": "h"}
    with TestClient(app=build_app(served)) as client:
        assert client.post("/runtime/check", json=script).json()["status"] == "unavailable"
        time.sleep(0.5)
        assert not checker.started.is_set(), "one slow check started the checker"
        client.post("/runtime/check", json=script)
        deadline = time.monotonic() + 5
        while not checker.started.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert checker.started.is_set(), "the checker waits while new scripts go the slow way"


def test_without_a_runner_the_checker_starts_when_ready(tmp_path: Path) -> None:
    """A gateway served in-process (tests, the app's test client) has no URL to wait for."""
    served = gateway(tmp_path)
    checker: FakeChecker = served.checker  # type: ignore[assignment]

    async def main() -> None:
        async with served.running():
            with anyio.fail_after(5):
                await checker.started.wait()

    anyio.run(main)


def test_a_gateway_for_one_run_builds_no_search_index(tmp_path: Path) -> None:
    assert "--no-search-index" in private_gateway_args("--ephemeral", None, None, search=False)
    assert "--no-search-index" not in private_gateway_args("--ephemeral", None, None)
    assert "--no-search-index" not in private_gateway_args("--no-state", None, None)
    served = gateway(tmp_path, search_index=False)
    documents: list[Any] = []
    served.search.set_documents = documents.append  # type: ignore[method-assign]

    async def main() -> None:
        async with served.running():
            pass

    anyio.run(main)
    assert served.artifacts.module  # the module is built all the same
    assert documents == []


FACE_SPY = """
import sys
from toolscript.execution import locate

def spy(config, cache):
    heavy = [name for name in ("mcp.server.lowlevel", "toolscript.mcpface.server") if name in sys.modules]
    print(heavy, flush=True)
    raise SystemExit(17)

locate.spawn_owned_gateway = spy
sys.argv = ["toolscript", "mcp"]
from toolscript.cli.entry import main
main()
"""


def test_the_face_spawns_its_gateway_before_importing_the_mcp_sdk(tmp_path: Path) -> None:
    """Its servers then start while the face imports (a second or more on two cores)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCRIPT_")}
    env["TOOLSCRIPT_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", FACE_SPY],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 17, done.stderr
    assert done.stdout.strip() == "[]"


class FakeModel:
    """Stands for the search model's worker: records when the gateway starts loading it."""

    def __init__(self) -> None:
        self.started = anyio.Event()

    def close(self) -> None:
        pass


async def with_model(served: Gateway) -> FakeModel:
    """A running gateway, its first build done, gets a model to start (the real one's start
    is a process of its own)."""
    await served.first_build.wait()
    model = FakeModel()
    served.search.embedder = model  # type: ignore[assignment]

    async def load() -> None:
        model.started.set()

    served._load_semantic_search = load  # type: ignore[method-assign]
    return model


def test_the_face_s_gateway_starts_the_search_model_once_no_run_is_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its first script does not share the two cores with the model's start."""
    assert "--search-when-idle" in face_gateway_args(None, None)
    monkeypatch.setattr(core, "IDLE_BEFORE_BACKGROUND", 0.3)
    served = gateway(tmp_path, after_url=True, search_when_idle=True)

    async def main() -> None:
        async with served.running():
            model = await with_model(served)
            run = await served.runs.register()
            served.url_announced()
            await anyio.sleep(0.6)
            assert not model.started.is_set(), "the model started while a run was under way"
            await served.runs.end(run.id, 0)
            with anyio.fail_after(5):
                await model.started.wait()

    anyio.run(main)


def test_a_first_search_starts_a_model_that_waits_for_an_idle_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "IDLE_BEFORE_BACKGROUND", 60.0)
    served = gateway(tmp_path, after_url=True, search_when_idle=True)

    async def main() -> None:
        async with served.running():
            model = await with_model(served)
            await served.runs.register()
            served.url_announced()
            await anyio.sleep(0.3)
            assert not model.started.is_set()
            served.search_wanted()
            with anyio.fail_after(5):
                await model.started.wait()

    anyio.run(main)


def test_a_gateway_started_by_hand_starts_the_search_model_at_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gateway start`: search turns hybrid seconds after the URL, runs or not."""
    assert "--search-when-idle" not in private_gateway_args("--no-state", None, None)
    monkeypatch.setattr(core, "IDLE_BEFORE_BACKGROUND", 60.0)
    served = gateway(tmp_path, after_url=True)

    async def main() -> None:
        async with served.running():
            model = await with_model(served)
            await served.runs.register()
            served.url_announced()
            with anyio.fail_after(5):
                await model.started.wait()

    anyio.run(main)


def test_runs_back_to_back_of_a_script_checked_before_start_the_checker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client running a script again and again asks for no check (its pass is remembered
    beside it) and never leaves the gateway idle: its second run starts the checker, which
    the new scripts that follow then find ready, not a cold `deno check` each."""
    from litestar.testing import TestClient

    from toolscript.gateway.app import build_app

    monkeypatch.setattr(core, "IDLE_BEFORE_BACKGROUND", 60.0)
    monkeypatch.setattr(core, "BACKGROUND_AT_THE_LATEST", 60.0)
    served = gateway(tmp_path)
    checker: FakeChecker = served.checker  # type: ignore[assignment]
    run = {"script": "return 1", "origin": "mcp"}
    with TestClient(app=build_app(served)) as client:
        assert client.post("/runs", json=run).status_code == 200
        time.sleep(0.5)
        assert not checker.started.is_set(), "one run started the checker"
        assert client.post("/runs", json=run).status_code == 200
        deadline = time.monotonic() + 5
        while not checker.started.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert checker.started.is_set(), "the checker waits while runs come back to back"
