"""Stop 64's attacks, each made for real (real Deno, the real npm registry).

Got through, fixed:

- a cloned repository's ``.toolscript.lock`` naming, for the declared ``left-pad@1.3.0``,
  another published package's file (``"tarball": ".../is-number/-/is-number-7.0.0.tgz"``
  with that file's integrity): Deno checks only that the URL is on the registry's host and
  that the file matches the lock's integrity, so the fetch put is-number's code in
  toolscript's shared npm cache as left-pad 1.3.0. Every script importing left-pad ran it,
  in that project and in every other project of the user locking the same version, while
  `toolscript trust` had shown ``npm:left-pad@^1``. Such a lock is made anew now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_packages_attacks import run
from toolscript.config import Config
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline
from toolscript.store.savedscripts import write_module

IS_NUMBER = "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng=="
SWAPPED_LOCK = {
    "version": "5",
    "specifiers": {"npm:left-pad@1": "1.3.0"},
    "npm": {
        "left-pad@1.3.0": {
            "integrity": IS_NUMBER,
            "tarball": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
        }
    },
    "workspace": {"dependencies": ["npm:left-pad@1"]},
}


def test_a_lock_naming_another_packages_file_gets_no_code_into_a_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    modules = {}
    for project in ("cloned", "mine"):
        folder = tmp_path / project
        folder.mkdir()
        if project == "cloned":
            (folder / ".toolscript.lock").write_text(json.dumps(SWAPPED_LOCK, indent=2))
        layout = CacheLayout(folder / ".toolscript")
        config = Config(folder / ".toolscript.json", folder, packages=("npm:left-pad@^1",))
        assert not run_pipeline(config, layout, SnapshotSource({})).failures
        modules[project] = write_module(folder / "copy" / "m.ts", layout.module.read_text(), {})
    # The lock was made anew from the registry, and said so.
    lock = json.loads((tmp_path / "cloned" / ".toolscript.lock").read_text())
    assert "is-number" not in json.dumps(lock)
    assert lock["npm"]["left-pad@1.3.0"]["integrity"] != IS_NUMBER
    assert "left-pad@1.3.0" in caplog.text and "made anew" in caplog.text
    cached = home / "deno" / "npm" / "registry.npmjs.org" / "left-pad" / "1.3.0" / "index.js"
    assert "leftPad" in cached.read_text()
    # Both projects' scripts run left-pad, never the other package.
    for module in modules.values():
        status, out, err = run(
            module, 'import leftPad from "left-pad";\nconsole.log(leftPad("a", 3));'
        )
        assert (status, out) == (0, "  a\n"), err
