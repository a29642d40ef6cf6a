"""The build lock of a project's cache (pipeline/buildlock.py) x a gateway's stop: a build
waiting for another one (a standalone `doit` that hangs, or is suspended with Ctrl+Z) holds
no gateway up; SIGTERM stops it at once, its servers with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from tests.helpers import GatewayProcess, clean_env, fixture_server, records_server
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


def test_exec_with_no_gateway_during_a_doit_says_it_waits_then_runs(tmp_path: Path) -> None:
    """`toolscript exec` with no gateway running while a build of the project holds its
    lock (a standalone `doit`): its own gateway's first build waits for that build, and
    exec says so once on stderr, then runs the script once the lock is let go (it failed
    with "the gateway ... did not answer within 10 s" while the build went on)."""
    (tmp_path / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"records": records_server()}, "search": {"semantic": False}})
    )
    cache = tmp_path / ".toolscript"
    cache.mkdir()
    held: int | None = hold_build_lock(cache, lambda: None, wait=0)
    assert held is not None
    code = 'import { tools } from "toolscript"; return await tools.records.counter({ step: 3 });'
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", code],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()  # the old exec: its timeout, then its end
        os.close(held)
        held = None
        out, rest = process.communicate(timeout=120)
    finally:
        if held is not None:
            os.close(held)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert first == (
        "toolscript: waiting for a build of this project's tools under way in another process"
        " (a `doit`?); the script runs once it ends\n"
    ), first + rest
    assert process.returncode == 0, first + rest
    assert json.loads(out) == {"step": 3}
    assert "waiting" not in rest  # said once
