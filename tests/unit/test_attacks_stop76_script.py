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
