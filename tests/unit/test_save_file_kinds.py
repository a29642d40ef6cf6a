"""`toolscript save NAME FILE.ts` reads the file as exec does: only a regular file, and at
most a saved script's size. A FIFO named x.ts waited for a writer for ever (the command
hung before it reached the gateway); a link to /dev/zero was read until memory ran out."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.errors import UsageError
from toolscript.store.savedscripts import MAX_SCRIPT_BYTES

runner = CliRunner()


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "large"])
def test_a_file_to_save_that_is_no_small_regular_file_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    script = tmp_path / "x.ts"
    if kind == "fifo":
        os.mkfifo(script)
    elif kind == "folder":
        script.mkdir()
    elif kind == "large":
        script.write_text("// " + "x" * MAX_SCRIPT_BYTES)
    else:
        script.symlink_to("/dev/zero")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["save", "report", "x.ts"])
    refused = result.exception
    assert isinstance(refused, UsageError), result.output
    assert refused.exit_code == 2
    said = "is over 512 KB" if kind == "large" else "not a regular file"
    assert said in refused.message, refused.message
