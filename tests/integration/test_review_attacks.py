"""Attacks on the day's changes (the lean check libs, remembered passes, the face's gateway in
its process) that worked, each kept as the test that failed before its fix."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import helpers
from tests.helpers import GatewayProcess, fixture_server, toolscript_cli

CONFIG = {"mcpServers": {"fx": fixture_server()}, "types": {"inferResults": False}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("attacks-home")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[GatewayProcess]:
    started = GatewayProcess(
        CONFIG, tmp_path_factory.mktemp("attacks"), env={"TOOLSCRIPT_HOME": str(home)}
    )
    try:
        helpers.wait_until(
            lambda: checker(started)["state"] == "ready", bool, 120, "no warm checker"
        )
        yield started
    finally:
        started.stop()


def checker(gateway: GatewayProcess) -> dict[str, Any]:
    return dict(gateway.client.get("health").json()["checker"])


def run(
    gateway: GatewayProcess, home: Path, cwd: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``toolscript exec args`` through ``gateway``, and how many checks its checker answered."""
    before = checker(gateway)["checks"]
    env = {"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    done = toolscript_cli("exec", *args, cwd=cwd, env=env, timeout=180)
    return done, checker(gateway)["checks"] - before


def test_a_script_left_in_the_checker_lends_no_types_to_the_next(
    gateway: GatewayProcess, home: Path, tmp_path: Path
) -> None:
    """A .mts script naming Node's lib (which `uses_node` does not see: no `node:`, no Node
    global) stayed open in the warm checker's .mts slot; the next .ts script, checked in its
    own slot, had Node's types from it and passed where deno check refuses it. The pass was
    remembered, and every later run of it skipped the check."""
    tag = time.time_ns()
    planter = tmp_path / "planter.mts"
    planter.write_text(f'/// <reference lib="node" />\nconsole.log("planted {tag}");\n')
    planted, answered = run(gateway, home, tmp_path, "--file", str(planter))
    assert (planted.returncode, planted.stdout) == (0, f"planted {tag}\n"), planted.stderr
    assert answered == 1, "the warm checker did not answer"

    victim = f"const loader: unknown = require; // {tag}\nconsole.log(typeof loader);\n"
    first, answered = run(gateway, home, tmp_path, victim)
    assert answered == 1, "the warm checker did not answer"
    assert first.returncode == 1, first.stderr
    assert "TS2591 [ERROR]: Cannot find name 'require'." in first.stderr, first.stderr
    # and it is not taken for checked the next time
    again, _ = run(gateway, home, tmp_path, victim)
    assert "Cannot find name 'require'" in again.stderr, again.stderr
