"""Where an uncaught error points: the user's own line, whether exec prints to a pipe or to a
terminal (where Deno colours the paths), never into the generated module or the wrapper."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, clean_env, fixture_server

# Line 4 makes the failing call; the top-level `return` makes exec wrap the script.
FAILING = (
    'import { tools } from "toolscript";\n'
    "\n"
    "const before = 1;\n"
    'const answer = await tools.fx.fail({ message: "it broke here" });\n'
    "return { before, answer };\n"
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("places")
    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    gateway = GatewayProcess(config, directory)
    try:
        yield gateway
    finally:
        gateway.stop()


def exec_on_a_terminal(directory: Path, script: Path) -> tuple[int, str]:
    """``toolscript exec`` with its stderr on a pty; what the terminal showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", str(script)],
        cwd=directory,
        env=clean_env(TERM="xterm"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    shown = b""
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed: exec is done
                    break
                if not chunk:
                    break
                shown += chunk
            elif process.poll() is not None:
                break
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)
    return process.returncode, shown.decode("utf-8", "replace")


def assert_points_at_the_call(shown: str) -> None:
    plain = ANSI.sub("", shown).replace("\r\n", "\n")
    assert "ToolError: fx.fail" in plain, shown
    # The place: the user's line of the call, quoted, its frame the only one.
    assert 'await tools.fx.fail({ message: "it broke here" });' in plain, shown
    frames = [line.strip() for line in plain.splitlines() if line.strip().startswith("at ")]
    assert len(frames) == 1, shown
    assert re.search(r"\btoolerr\.ts:4:\d+$", frames[0]), shown
    assert "/toolerr.ts:4:" in frames[0] or " toolerr.ts:4:" in frames[0], shown
    # Nothing of the generated module nor of the wrapper around the script.
    assert "throw new ToolError" not in plain and "toolscript:" not in plain, shown
    assert "toolerr.ts:5:" not in plain, shown


def test_an_uncaught_tool_error_points_at_the_users_call(gateway: GatewayProcess) -> None:
    script = gateway.directory / "toolerr.ts"
    script.write_text(FAILING)
    done = subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", str(script)],
        cwd=gateway.directory,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 1, done.stderr
    assert "\x1b[" not in done.stderr
    assert_points_at_the_call(done.stderr)


def test_a_stack_on_a_terminal_names_the_users_file_and_line(gateway: GatewayProcess) -> None:
    script = gateway.directory / "toolerr.ts"
    script.write_text(FAILING)
    code, shown = exec_on_a_terminal(gateway.directory, script)
    assert code == 1, shown
    assert_points_at_the_call(shown)
    # Colours may stay or go, but never half of an escape code before a path.
    assert not re.search(r"\x1b\[(?![0-9;]*m)", shown), repr(shown)
