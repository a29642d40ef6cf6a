"""What a script's resource reads by URIs of its own making leave in the gateway: nothing per
URI once they are decided and logged (tests/integration/test_attacks_stop59.py makes the
attack through a real gateway and Deno)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import anyio

from toolscript.config import Config, SearchConfig, ServerConfig
from toolscript.gateway.core import Gateway
from toolscript.gateway.runbook import RUN_LOG_BYTES, RunBook
from toolscript.store.runlog import RunLog

URI = "docs://{}/" + "x" * 100_000


def test_deciding_a_resource_read_keeps_nothing_of_its_uri(tmp_path: Path) -> None:
    """Before: the decision of each ``resource:URI`` was kept, keyed by the URI, as long as
    the gateway ran (a tool's decision is kept: tools are the server's few)."""
    server = ServerConfig(name="docs", transport="stdio", command="x", policy={"*": "ask"})
    config = Config(path=None, project_dir=tmp_path, servers=(server,))
    gateway = Gateway(config, cache=tmp_path / "cache", search=SearchConfig(semantic=False))
    assert gateway.decision("docs", "resource:" + URI.format("warm")) == "ask"
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(100):  # 10 MB of URIs
            assert gateway.decision("docs", "resource:" + URI.format(number)) == "ask"
            assert gateway.decision("docs", "prompt:" + URI.format(number)) == "ask"
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1024 * 1024, f"{kept} bytes kept for 200 decisions"


async def _read(tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    return "json", {"contents": []}


def test_a_calls_record_keeps_a_long_resource_name_cut_and_counts_it(tmp_path: Path) -> None:
    """Before: a call's record (``--trace``, the calls the newest runs keep, the run log)
    held its name whole, a resource's URI as long as the request, and counted it as a
    name's few bytes: a run's RUN_LOG_BYTES of records held 2,000 times more."""

    async def scenario() -> None:
        runs = RunBook(RunLog(tmp_path / "runs.sqlite"), lambda: (), lambda qualified: "allow")
        run = await runs.register()
        for number in range(3):
            qualified = "docs__resource:" + URI.format(number)
            size = len(qualified) + 10
            await runs.call(run, qualified, {"uri": URI.format(number)}, size, _read)
        names = [record["tool"] for record in run.records]
        assert all(len(name) < 2100 for name in names)
        assert names[1].startswith("docs__resource:docs://1/xxx") and names[1].endswith("…")
        assert run.logged_bytes > 3 * 2000  # what each record holds, counted
        assert run.logged_bytes < RUN_LOG_BYTES
        trace = runs.trace(run)
        assert [call["tool"] for call in trace] == names
        await runs.end(run.id, 0)

    anyio.run(scenario)
