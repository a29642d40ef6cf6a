"""What MCP does during a call reaches the user: a script stopped by Ctrl-C or by its
``--timeout`` mid-call tells the server, which hears ``notifications/cancelled`` and stops
the work (the fixture server counts the sleeps a cancellation interrupted)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.helpers import fixture_server, fx_waits_for, interruptible_exec, running_gateway

SLEEP = 'import { tools } from "toolscript";\nawait tools.fx.sleep({ seconds: %s });'


@pytest.mark.parametrize("how", ["ctrl-c", "timeout"])
def test_a_stopped_script_cancels_its_call_at_the_server(tmp_path: Path, how: str) -> None:
    seconds = 8.5 if how == "ctrl-c" else 9.5
    config = {"mcpServers": {"fx": fixture_server(timeout=60)}, "search": {"semantic": False}}
    with running_gateway(config, tmp_path) as gateway:
        limit = ["--no-check", "--timeout", "6"] if how == "timeout" else []
        exec_process = interruptible_exec(SLEEP % seconds, *limit, cwd=tmp_path)
        try:
            fx_waits_for(gateway, sleeping=seconds, timeout=60)
            if how == "ctrl-c":
                exec_process.send_signal(signal.SIGINT)
            _, stderr = exec_process.communicate(timeout=60)
            assert exec_process.returncode != 0, stderr
            fx_waits_for(gateway, cancelled=seconds)
            assert gateway.call("fx__cancelled").json() == [seconds]
        finally:
            if exec_process.poll() is None:
                exec_process.kill()


def test_a_resource_read_is_cancelled_when_its_script_is_stopped(tmp_path: Path) -> None:
    """Reads are served by a route of their own, not the tool-call fast path: a caller gone
    mid-read cancels it there too."""
    config = {"mcpServers": {"fx": fixture_server(timeout=60)}, "search": {"semantic": False}}
    code = 'import { resources } from "toolscript";\nawait resources.fx.read("fx://sleep/7.5");'
    with running_gateway(config, tmp_path) as gateway:
        exec_process = interruptible_exec(code, cwd=tmp_path)
        try:
            fx_waits_for(gateway, sleeping=7.5, timeout=60)
            exec_process.send_signal(signal.SIGINT)
            _, stderr = exec_process.communicate(timeout=60)
            assert exec_process.returncode != 0, stderr
            fx_waits_for(gateway, cancelled=7.5, timeout=5)
        finally:
            if exec_process.poll() is None:
                exec_process.kill()
