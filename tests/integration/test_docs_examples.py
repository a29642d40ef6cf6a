"""Every shell block marked runnable in README.md and docs/*.md runs as written.

The markers and where each kind of block runs are in ``tests/docblocks.py``. A block runs
as pasted into ``bash`` with ``set -e``: each command must succeed, and what the block
started in the background (``toolscript gateway start &``) is stopped when it ends. No
block may leave a process running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.docblocks import ROOT, Block, every_runnable_block
from tests.helpers import NODE_BIN, GatewayProcess, clean_env, node_server, python_bin

BLOCKS = every_runnable_block()
# Stops whatever the block left in the background, however it ended.
PROLOGUE = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n"


@pytest.fixture(scope="module")
def reference_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """The project of ``<!-- runnable -->`` blocks: the reference servers, a gateway running."""
    directory = tmp_path_factory.mktemp("reference-project")
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time"), "description": "Current time"},
            "everything": {"command": node_server("mcp-server-everything")},
            "memory": {
                "command": node_server("mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(directory / "memory.jsonl")},
            },
        },
        # Keyword search answers every example; the model would only cost the machine.
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(config, directory, env={"TOOLSCRIPT_HOME": str(directory / "home")})
    try:
        yield gateway
    finally:
        assert gateway.stop() == []


def processes_under(directory: Path, spared: set[int]) -> list[str]:
    """Processes whose working directory is in ``directory``, but the ``spared`` ones."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd", "pid"]):
        try:
            cwd = process.info["cwd"]
            if process.info["pid"] not in spared and cwd and Path(cwd).is_relative_to(directory):
                found.append(" ".join(process.info["cmdline"] or [])[:120])
        except (psutil.Error, ValueError):
            continue
    return found


def path_with_tools() -> str:
    """The venv's programs (toolscript, doit, sqlite-utils) and the npm ones (claude).

    Each environment whose packages Python imports counts: a venv layered on another one's
    site-packages has the other's programs in that one's ``bin``.
    """
    programs = [Path(sys.executable).parent]
    for entry in map(Path, sys.path):
        if entry.name == "site-packages" and (entry.parents[2] / "bin").is_dir():
            programs.append(entry.parents[2] / "bin")
    return os.pathsep.join([*dict.fromkeys(map(str, programs)), str(NODE_BIN), os.environ["PATH"]])


def run_block(block: Block, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", PROLOGUE + block.code],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )


def assert_nothing_left(directory: Path, gateway: GatewayProcess | None) -> None:
    """Nothing the block started runs on; the reference gateway's own processes (its
    servers, its type checker, replaced when the types change) are spared."""

    def left() -> list[str]:
        spared = set()
        if gateway is not None:
            spared = {gateway.process.pid} | {child.pid for child in gateway.descendants()}
        return processes_under(directory, spared)

    deadline = time.monotonic() + 10
    while left() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left() == []


def test_every_page_has_runnable_blocks() -> None:
    """The mechanism finds blocks on the README and on the pages (a broken marker finds none)."""
    pages = {block.page.name for block in BLOCKS}
    assert "README.md" in pages
    assert len(pages) >= 5, pages
    assert {block.place for block in BLOCKS} == {"project", "empty", "checkout"}


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_runnable_block_runs(block: Block, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    assert block.language == "bash", f"{block.name}: only bash blocks can be marked runnable"
    env = clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home"), PATH=path_with_tools())
    gateway: GatewayProcess | None = None
    if block.place == "project":
        gateway = request.getfixturevalue("reference_project")
        cwd = gateway.directory
        env["TOOLSCRIPT_HOME"] = str(cwd / "home")
        env["TOOLSCRIPT_GATEWAY_URL"] = gateway.url
    elif block.place == "empty":
        cwd = tmp_path / "work"
        (cwd / "my-project").mkdir(parents=True)
        # a new user: nothing is trusted until `toolscript trust`, recorded in a folder of its own
        env.update(TOOLSCRIPT_TRUSTED_PATHS="", XDG_CONFIG_HOME=str(tmp_path / "config"))
    else:
        cwd = ROOT
        before = sorted(path.name for path in ROOT.iterdir())
        env.update(
            HOME=str(tmp_path / "home"),  # the claude CLI keeps its state there
            DISABLE_TELEMETRY="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
    ran = run_block(block, cwd, env)
    assert ran.returncode == 0, f"{block.name}:\n{block.code}\n{ran.stdout}\n{ran.stderr}"
    if block.place == "checkout":
        assert sorted(path.name for path in ROOT.iterdir()) == before, "it wrote into the checkout"
    else:
        assert_nothing_left(cwd, gateway)


def test_a_failing_command_fails_its_block(tmp_path: Path) -> None:
    """A block whose middle command fails is a failed block, not one that ends well."""
    block = Block(ROOT / "README.md", 0, "empty", "bash", "false\necho still here\n")
    ran = run_block(block, tmp_path, clean_env(PATH=path_with_tools()))
    assert ran.returncode != 0
    assert "still here" not in ran.stdout


def test_the_reference_project_is_the_documented_one(
    reference_project: GatewayProcess,
) -> None:
    """The docs call it the reference servers: the repository's example config names them."""
    example = json.loads((ROOT / "examples" / "reference.toolscript.json").read_text())
    assert set(example["mcpServers"]) == set(
        reference_project.client.get("health").json()["servers"]
    )
