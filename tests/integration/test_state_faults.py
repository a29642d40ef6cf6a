"""Where toolscript keeps its files, under faults made for real: a read-only home folder (a
read-only mount) and a project folder deeper than SQLite can open files in."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, toolscript_cli


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "home"
    home.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(home)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only folder here: {mounted.stderr.strip()}")
    try:
        yield home
    finally:
        subprocess.run(["umount", str(home)], check=False)


@pytest.mark.parametrize(
    "command",
    [("trust",), ("runs",), ("exec", "return 42"), ("gateway", "start", "--port", "0")],
    ids=["trust", "runs", "exec", "gateway-start"],
)
def test_a_read_only_home_is_named_with_what_moves_it(
    read_only_home: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".toolscript.json").write_text('{"mcpServers": {}, "search": {"semantic": false}}')
    done = toolscript_cli(
        *command,
        cwd=project,
        env={
            "HOME": str(read_only_home),
            "XDG_CACHE_HOME": "",
            "XDG_STATE_HOME": "",
            "XDG_CONFIG_HOME": "",
        },
        timeout=60,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert f"toolscript cannot write {read_only_home}" in done.stderr
    assert "Read-only file system" in done.stderr
    assert "hint: set TOOLSCRIPT_" in done.stderr


def test_a_project_deeper_than_sqlite_reaches_keeps_its_cache_elsewhere(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["d" * 60] * 8)
    deep.mkdir(parents=True)
    assert len(str(deep / ".toolscript" / "embeddings.db-journal")) > 512
    gateway = GatewayProcess({"mcpServers": {}, "search": {"semantic": False}}, deep)
    try:
        ran = toolscript_cli("exec", "return 5", cwd=deep)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == "5"
        status = toolscript_cli("gateway", "status", cwd=deep)
        assert status.returncode == 0 and "running" in status.stdout, status.stderr
    finally:
        gateway.stop()
    assert "Traceback" not in gateway.log
