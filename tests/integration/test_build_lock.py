"""The build lock of a project's cache (pipeline/buildlock.py) x a gateway's stop: a build
waiting for another one (a standalone `doit` that hangs, or is suspended with Ctrl+Z) holds
no gateway up; SIGTERM stops it at once, its servers with it."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import psutil

from tests.helpers import GatewayProcess, fixture_server
from toolscript.pipeline.buildlock import hold_build_lock


def test_a_gateway_whose_first_build_waits_for_the_lock_stops_when_asked(
    tmp_path: Path,
) -> None:
    cache = tmp_path / ".toolscript"
    cache.mkdir()
    held = hold_build_lock(cache, lambda: None, wait=0)  # as a `doit` under way holds it
    assert held is not None
    try:
        gateway = GatewayProcess({"mcpServers": {"fx": fixture_server()}}, tmp_path)
        try:
            gateway.wait_for_log("waiting for another build")
            children = gateway.descendants()
            gateway.process.send_signal(signal.SIGTERM)
            try:
                code = gateway.process.wait(timeout=60)  # (it waited BUILD_LOCK_WAIT: 600 s)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"still running:\n{gateway.log}") from None
            assert code == 0, gateway.log
            _, alive = psutil.wait_procs(children, timeout=10)
            assert alive == [], alive
        finally:
            gateway.stop()
    finally:
        os.close(held)
