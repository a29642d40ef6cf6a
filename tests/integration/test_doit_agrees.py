"""Standalone ``doit`` is the gateway's pipeline: after the gateway built (result types it
learned included), every task is up to date and ``doit`` changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers import GatewayProcess, records_server, run_doit
from toolscript.plumbing.paths import project_state_dir


def test_doit_is_up_to_date_after_the_gateway_learned_a_result_type(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "records": records_server(env={"RECORDS_JOURNAL": str(tmp_path / "journal")}),
        },
        "search": {"semantic": False},
    }
    module = tmp_path / ".toolscript" / "tools.ts"
    shapes = project_state_dir(tmp_path) / "result-shapes.json"
    gateway = GatewayProcess(config, tmp_path)
    try:
        called = gateway.call("records__shape_shifter", {"variant": 0})
        assert called.status_code == 200, called.text
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # learned, kept, and built into the module
            served = gateway.client.get("runtime/tools.ts").text
            if "inferred from 1 result" in served and shapes.exists():
                break
            time.sleep(0.2)
        assert "inferred from 1 result" in served and shapes.exists()
        assert module.read_text() == served

        listed = run_doit(tmp_path, "list", "--all", "--status")
        assert listed.returncode == 0, listed.stderr
        statuses = dict(line.split(maxsplit=1)[::-1] for line in listed.stdout.splitlines())
        names = {name.split()[0]: status for name, status in statuses.items()}
        assert {"fetch", "fetch:records", "types", "types:records", "index"} <= set(names)
        assert set(names.values()) == {"U"}, listed.stdout

        built = run_doit(tmp_path)
        assert built.returncode == 0, built.stdout + built.stderr
        assert ".  " not in built.stdout, built.stdout  # nothing ran
        assert module.read_text() == served  # the learned type stays
    finally:
        gateway.stop()
