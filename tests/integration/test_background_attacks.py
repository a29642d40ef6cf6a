"""Background runs attacked by their own script: what a run may write to the gateway's
disk, whatever it reports."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, fixture_server, running_gateway, toolscript_cli
from toolscript.plumbing.paths import project_state_dir


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"mcpServers": {"fx": fixture_server()}}
    with running_gateway(config, tmp_path_factory.mktemp("background-attacks")) as started:
        yield started


def cli(gateway: GatewayProcess, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    return toolscript_cli(*args, cwd=gateway.directory, env=env, timeout=240)


def test_progress_in_a_loop_does_not_write_past_the_runs_max_output(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    """The runner writes progress lines to the run's stderr file: with no bound of their
    own, `--max-output 2000` let a script put a few hundred kilobytes there (and as much
    as its time allowed)."""
    code = """import { progress } from "toolscript";
for (let i = 0; i < 400; i++) await progress("p".repeat(900) + i);
console.log("done");
"""
    started = cli(
        gateway, toolscript_home, "exec", "--background", "--json", "--max-output", "2000", code
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    waited = cli(gateway, toolscript_home, "runs", "wait", run_id)
    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.strip() == "done"
    assert waited.stderr.startswith("toolscript: progress: ppp")  # the first are shown
    assert "more than 2000 bytes of progress reports" in waited.stderr
    assert len(waited.stderr.encode()) < 2000 + 2 * 1024
    kept = project_state_dir(gateway.directory) / "background" / run_id / "stderr"
    assert kept.stat().st_size < 2000 + 2 * 1024


def test_a_flood_of_progress_reports_shows_a_few_and_counts_the_rest(
    gateway: GatewayProcess, toolscript_home: Path
) -> None:
    """Each report was a line on exec's stderr (and an MCP notification of the face's): a
    script reporting in a tight loop flooded them, thousands of lines a second."""
    code = """import { progress } from "toolscript";
for (let i = 0; i < 3000; i++) await progress(`item ${i}`);
"""
    result = cli(gateway, toolscript_home, "exec", code)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "toolscript: progress:" in line]
    assert len(lines) < 1500
    assert any(line.endswith("reports skipped)") for line in lines)
    assert lines[-1] == "toolscript: progress: item 2999"  # the last one always shows
