"""The MCP face finds its project's state folder (where cut outputs are kept) once, not at
each execute; a folder removed while it runs is made again as at first (only its user
may enter it)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

from toolscript.mcpface.backend import Backend
from toolscript.plumbing.paths import project_state_dir


def test_the_state_folder_is_found_once_and_made_again_when_it_went(repo: Path) -> None:
    (repo / ".toolscript.json").write_text("{}")
    face = Backend(config=None, cache=None, lifeline=object(), cwd=repo)  # type: ignore[arg-type]
    first = face.state_dir()
    assert first == project_state_dir(repo)
    assert face.output_path("20261126-010000-abcdef").is_relative_to(first)
    shutil.rmtree(first.parent.parent)  # toolscript's whole state folder, the project's with it
    again = face.state_dir()
    assert again == first and again.is_dir()
    for folder in (again, again.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
