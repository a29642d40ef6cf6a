"""`gateway start --host`: the gateway answers on loopback, as the docs promise; an address
other machines reach is refused, with the risk said, unless --allow-remote is given (then
it starts, with a warning)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import GatewayProcess, toolscript_cli

CONFIG = {"mcpServers": {}, "search": {"semantic": False}}


def test_a_host_other_machines_reach_is_refused_with_the_risk_said(tmp_path: Path) -> None:
    (tmp_path / ".toolscript.json").write_text('{"mcpServers": {}}')
    for host in ("0.0.0.0", "::"):
        refused = toolscript_cli("gateway", "start", "--host", host, cwd=tmp_path, timeout=60)
        assert refused.returncode == 2, refused.stderr
        assert f"--host {host} is not a loopback address" in refused.stderr
        assert "call every tool" in refused.stderr and "--allow-remote" in refused.stderr
    status = toolscript_cli("gateway", "status", cwd=tmp_path, timeout=60)
    assert status.returncode == 1 and "not running" in status.stdout + status.stderr


def test_allow_remote_starts_it_with_a_warning(tmp_path: Path) -> None:
    started = GatewayProcess(CONFIG, tmp_path, "--host", "0.0.0.0", "--allow-remote")
    try:
        assert "warning: --host 0.0.0.0 is not a loopback address" in started.log
        assert started.health()["servers"] == {}
    finally:
        started.stop()
