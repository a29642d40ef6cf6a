"""What a stdio server whose program was not found is told to check (plumbing/processes.py):
the PATH program a mistyped name is closest to, the file a relative path was looked for
as, and a `~` or `$NAME` no shell expanded."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscript.plumbing.processes import missing_program_hint


def hint_for(command: str, folder: Path, bin_dir: Path) -> str:
    return missing_program_hint(command, cwd=folder, env={"PATH": str(bin_dir)})


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "mcp-server-time").write_text("#!/bin/sh\n")
    (folder / "mcp-server-time").chmod(0o755)
    return folder


def test_a_mistyped_name_names_the_program_path_has(tmp_path: Path, bin_dir: Path) -> None:
    hint = hint_for("mcp-server-tiem", tmp_path, bin_dir)
    assert hint == f' (did you mean "mcp-server-time"? PATH has it in {bin_dir})'
    assert hint_for("github-mcp-server", tmp_path, bin_dir) == ""


def test_a_relative_path_names_where_it_was_looked_for(tmp_path: Path, bin_dir: Path) -> None:
    hint = hint_for("./server.sh", tmp_path, bin_dir)
    assert hint.startswith(f" (no such file: {tmp_path / 'server.sh'}; ")
    (tmp_path / "server.sh").write_text("")
    assert hint_for("./server.sh", tmp_path, bin_dir) == ""  # not missing


@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("~/bin/srv", "${HOME}/bin/srv"),
        ("$HOME/bin/srv", "${HOME}/bin/srv"),
        ("$TOOLS/srv", "${TOOLS}/srv"),
    ],
)
def test_what_a_shell_would_expand_is_written_as_toolscript_expands_it(
    tmp_path: Path, bin_dir: Path, command: str, written: str
) -> None:
    hint = hint_for(command, tmp_path, bin_dir)
    assert "is not expanded: no shell runs the command" in hint
    assert f'"command": "{written}"' in hint


def test_a_launcher_not_installed_names_what_installs_it(tmp_path: Path, bin_dir: Path) -> None:
    """A machine without Node whose config names npx servers read "command not found: npx"
    and nothing of what to do, at the gateway's start, in list-servers and in config check."""
    hint = hint_for("npx", tmp_path, bin_dir)
    assert hint.startswith(" (npx comes with Node.js (its npm): install it, or, if it is ")
    assert "`command -v npx` in your shell prints it" in hint
    assert missing_program_hint("uvx", cwd=None, env={}).startswith(" (uvx comes with uv ")
