"""Stop 76: a script file that is no regular file. ``exec x.ts`` opened it to read: a FIFO
named x.ts waited for a writer for ever (the command hung); a link to /dev/zero or
/dev/urandom was read up to the 1 MiB limit. Each is refused at once (exit 2) now."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolscript.errors import UsageError
from toolscript.execution.command import fast_exec


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom", "folder"])
def test_a_script_that_is_no_regular_file_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    script = tmp_path / "x.ts"
    if kind == "fifo":
        os.mkfifo(script)  # no writer: opening it to read waited for one
    elif kind == "folder":
        script.mkdir()
    else:
        script.symlink_to(f"/dev/{kind}")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="not a regular file") as refused:
        fast_exec(["--no-check", "x.ts"])
    assert refused.value.exit_code == 2


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_tool_file_that_is_no_regular_file_does_not_stall_the_build(
    tmp_path: Path, kind: str
) -> None:
    """The build's digest of a local tool file read it whole: a FIFO in localTools.dir
    stalled every build after it (a tool a server added was never served), /dev/zero grew
    it without end. It is digested as a file that is missing."""
    from toolscript.config import ServerConfig
    from toolscript.pipeline.tasks.fetch import settings_digest

    tool_file = tmp_path / "t.py"
    if kind == "fifo":
        os.mkfifo(tool_file)
    else:
        tool_file.symlink_to("/dev/zero")
    server = ServerConfig(name="t", transport="local", command=str(tool_file))
    assert len(settings_digest(server)) == 64  # returned, having read nothing of it
