"""Stop 66's attacks on a real gateway (a red-team pass over what stop 65 changed, and two
angles left open).

What got through, now closed (each test performs the attack):

- An agent's flood of trivial scripts evicted, from the run log (1,000 runs / 50 MB), the
  run awaiting the person's approval: `toolscript approve RUN_ID` then found no such run.
  Runs awaiting approval are now kept apart (store/runlog.AWAITING_KEEP).
- Kept outputs of every project (512 MB each) shared no budget, and files being written
  were counted only once whole (unit: test_attacks_stop66_outputs).
- A resume released after a failed check lost the answers kept whole for the run it
  resumed: the next resume diverged (unit: test_attacks_stop66_resume).
- Result keys holding a person's data that the map rule missed (names with spaces, phone
  numbers, a user name per call) named fields of the agent's module (unit:
  test_attacks_stop66_shapes).
- A `.build.lock` planted as a folder turned the build lock off (unit:
  test_attacks_stop66_buildlock).

What held: a `.build.lock` planted as a link (replaced, its target untouched), a 10 GB
file (never read) or a FIFO (locked, never waited on); the Proxy on each server's tools
(a member is one encoded path segment of /tools/, so `tools.x["../../runs"]` names a tool
of x alone, `__proto__`, `then` and symbols answer as any object's, and no request is made
before a call); a tool that `excludeTools` leaves out, called through the Proxy, is not
found (upstreams hold only allowed tools); a resume released after a failed check made
the approved call once; the npm cache's checked marker is in the user's cache, out of a
repository's reach.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import GatewayProcess, toolscript_cli
from tests.integration.test_policy import (
    WRITE_THEN_DELETE,
    exec_script,
    journal_tools,
    records_config,
    run_id_of,
)


@pytest.fixture
def small_log(tmp_path: Path) -> Any:
    journal = tmp_path / "journal.jsonl"
    config = {**records_config(journal), "runs": {"keep": 2}}
    gateway = GatewayProcess(config, tmp_path)
    try:
        yield gateway, journal
    finally:
        gateway.stop()


def test_a_flood_of_runs_leaves_the_run_awaiting_approval(small_log: Any) -> None:
    gateway, journal = small_log
    stopped = exec_script(gateway.directory, WRITE_THEN_DELETE)
    assert stopped.returncode == 120, stopped.stderr
    run_id = run_id_of(stopped.stderr)
    for number in range(4):  # the agent's trivial scripts, twice the log's ``keep``
        done = toolscript_cli("exec", f"return {number}", cwd=gateway.directory)
        assert done.returncode == 0, done.stderr
    approved = toolscript_cli("approve", run_id, cwd=gateway.directory)
    assert approved.returncode == 0, approved.stderr
    resumed = toolscript_cli("exec", "--resume", run_id, cwd=gateway.directory)
    assert resumed.returncode == 0, resumed.stderr
    assert "finished" in resumed.stdout
    assert journal_tools(journal) == ["write_record", "delete_record"]


PROXY_PROBE = """import { tools } from "toolscript";
const records: any = tools.records;
const seen: Record<string, string> = {};
for (const name of ["deleteRecord", "delete_record", "../../runs", "..", "x/../../health"]) {
  try {
    await records[name]({ key: "a" });
    seen[name] = "called";
  } catch (error) {
    seen[name] = String((error as Error).message).slice(0, 120);
  }
}
seen.proto = typeof records.__proto__;
seen.then = typeof records.then;
seen.symbol = typeof records[Symbol.iterator];
console.log(JSON.stringify(seen));
"""


def test_the_tools_proxy_reaches_no_tool_left_out_nor_a_gateway_route(tmp_path: Path) -> None:
    journal = tmp_path / "journal.jsonl"
    config = records_config(journal)
    config["mcpServers"]["records"]["excludeTools"] = ["delete_*"]
    gateway = GatewayProcess(config, tmp_path)
    try:
        done = exec_script(gateway.directory, PROXY_PROBE, "--no-check")
    finally:
        gateway.stop()
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(seen[name] != "called" for name in seen if name not in ("proto", "then", "symbol"))
    assert all(
        "not found" in seen[name] or "no tool" in seen[name].lower()
        for name in ("deleteRecord", "delete_record", "../../runs", "..", "x/../../health")
    ), seen
    # a member named like a path, as the script wrote it: never a form read as a URL's path
    assert 'tools.records["../../runs"]' in seen["../../runs"], seen
    assert 'tools.records["x/../../health"]' in seen["x/../../health"], seen
    assert not any("records__" in seen[name] for name in seen), seen
    assert (seen["proto"], seen["then"], seen["symbol"]) == ("undefined", "undefined", "undefined")
    assert journal_tools(journal) == []


LARGE_VALUE = (
    'return { total: 3000, items: Array.from({ length: 3000 }, (_, i) => ({ id: i, pad: "x"'
    ".repeat(200) })) };"
)


def test_kept_outputs_of_two_projects_share_one_budget(tmp_path: Path) -> None:
    """Each project kept its own 512 MB (TOOLSCRIPT_KEPT_OUTPUT_MB): a folder made per run
    filled the disk. Here 1 MB for both projects, each run keeping about 0.7 MB."""
    from tests.integration.test_kept_outputs import _exec

    home = tmp_path / "home"
    kept = []
    for name in ("one", "two"):
        project = tmp_path / name
        project.mkdir()
        done = _exec(home, project, LARGE_VALUE, TOOLSCRIPT_KEPT_OUTPUT_MB="1")
        assert done.returncode == 123, done.stderr[-2000:]
        assert "the whole output is in" in done.stderr, done.stderr[-2000:]
        kept.append(done.stderr.split("the whole output is in ", 1)[1].split(" (", 1)[0])
    files = [path for path in home.rglob("output.txt") if path.is_file()]
    assert sum(path.stat().st_size for path in files) <= 1024 * 1024
    assert [str(path) for path in files] == [kept[1]]  # the older project's went first
