"""Declared packages attacked (real Deno, real npm registry): what a cloned repository's
``.toolscript.lock`` may hold, and what a script reaches in toolscript's shared npm cache
besides the packages its project declares."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from toolscript.config import Config
from toolscript.execution.sandbox import Script, run_toolscript
from toolscript.pipeline.artifacts import Artifacts, CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline
from toolscript.store.packages import parse_section
from toolscript.store.savedscripts import write_module

# A lock as a cloned repository could ship it: left-pad is declared, is-number is not, but
# its entry sits in "specifiers" (not in "workspace", which is all Deno prunes by).
PLANTED_LOCK = {
    "version": "5",
    "specifiers": {"npm:is-number@7": "7.0.0", "npm:left-pad@1": "1.3.0"},
    "npm": {
        "is-number@7.0.0": {
            "integrity": "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng=="
        },
        "left-pad@1.3.0": {
            "integrity": "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQGinBN9yTQT3bFlCBy/aVx2HrNcqQGsdot8ghrjyrvMCoEA=="
        },
    },
    "workspace": {"dependencies": ["npm:left-pad@1"]},
}


def run(module: Path, code: str) -> tuple[int, str, str]:
    out, err = io.BytesIO(), io.BytesIO()
    status = run_toolscript(
        Script(code, "t.ts"),
        "http://127.0.0.1:9",
        "test",
        module=module,
        check=False,
        stdout=out,
        stderr=err,
    )
    return status, out.getvalue().decode(), err.getvalue().decode()


def test_a_planted_lock_entry_does_not_offer_an_undeclared_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    (tmp_path / ".toolscript.lock").write_text(json.dumps(PLANTED_LOCK, indent=2))
    config = Config(tmp_path / ".toolscript.json", tmp_path, packages=("npm:left-pad@^1",))
    layout = CacheLayout(tmp_path / ".toolscript")
    assert not run_pipeline(config, layout, SnapshotSource({})).failures

    lock = json.loads((tmp_path / ".toolscript.lock").read_text())
    assert lock["specifiers"] == {"npm:left-pad@1": "1.3.0"}
    parsed = parse_section(layout.module.read_text())
    assert "is-number" not in json.dumps(lock)
    assert parsed is not None and "is-number" not in parsed[1]
    module = write_module(tmp_path / "copy" / "m.ts", layout.module.read_text(), {})
    status, out, err = run(module, 'import isNumber from "npm:is-number@7";\nconsole.log("IN");')
    assert status == 1 and "IN" not in out, (out, err)
    assert "scripts import only the packages the project declares" in err, err


def test_a_script_reaches_no_package_of_another_projects_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deno lets npm code read the npm cache without --allow-read, and a script gets
    ``require`` from ``process.getBuiltinModule``: a run sees its own lock's packages only."""
    home = tmp_path / "home"
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    modules = {}
    for project, declared in (("a", "npm:left-pad@^1"), ("b", "npm:is-number@^7")):
        folder = tmp_path / project
        folder.mkdir()
        layout = CacheLayout(folder / ".toolscript")
        config = Config(folder / ".toolscript.json", folder, packages=(declared,))
        assert not run_pipeline(config, layout, SnapshotSource({})).failures
        modules[project] = write_module(folder / "copy" / "m.ts", layout.module.read_text(), {})
    elsewhere = home / "deno" / "npm" / "registry.npmjs.org" / "left-pad" / "1.3.0" / "index.js"
    assert elsewhere.is_file()
    require = (
        'import isNumber from "is-number";\n'
        "console.log(isNumber(3));\n"
        'const { createRequire } = process.getBuiltinModule("module");\n'
        'const require = createRequire(import.meta.resolve("is-number"));\n'
    )
    for path in (json.dumps(str(elsewhere)), '"../../left-pad/1.3.0/index.js"'):
        status, out, err = run(
            modules["b"], require + f'console.log("LOADED", typeof require({path}));'
        )
        assert status == 1 and out == "true\n", (out, err)
        assert "LOADED" not in out
    # Its own package it reaches as before, and project a's its own.
    status, out, err = run(
        modules["a"], 'import leftPad from "left-pad";\nconsole.log(leftPad("a", 3));'
    )
    assert (status, out) == (0, "  a\n"), err


def test_a_cloned_toolscript_folder_does_not_steer_the_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.toolscript/`` comes with a cloned repository and trust does not cover it: an
    ``.npmrc`` there (another registry) or a ``package.json`` (more packages) is not read."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    planted = tmp_path / ".toolscript" / "packages"
    planted.mkdir(parents=True)
    (planted / ".npmrc").write_text("registry=http://127.0.0.1:9/\n")
    (planted / "package.json").write_text('{"dependencies": {"is-number": "7"}}')
    (planted / "deno.json").write_text('{"nodeModulesDir": "auto"}')
    config = Config(tmp_path / ".toolscript.json", tmp_path, packages=("npm:left-pad@^1",))
    layout = CacheLayout(tmp_path / ".toolscript")
    assert not run_pipeline(config, layout, SnapshotSource({})).failures

    parsed = parse_section(layout.module.read_text())
    assert parsed is not None, layout.packages.read_text()
    assert [package.version for package in parsed[0]] == ["1.3.0"]
    assert "is-number" not in (tmp_path / ".toolscript.lock").read_text()
    assert not (tmp_path / "node_modules").exists() and not (planted / "node_modules").exists()
    registries = tmp_path / "home" / "deno" / "npm"
    assert [path.name for path in registries.iterdir()] == ["registry.npmjs.org"]


def test_a_lock_that_is_a_symbolic_link_is_not_written_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cloned repository's ``.toolscript.lock`` linking to a lock elsewhere (another
    project's ``deno.lock``): Deno would rewrite that file."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    elsewhere = tmp_path / "another-project" / "deno.lock"
    elsewhere.parent.mkdir()
    theirs = json.dumps({**PLANTED_LOCK, "workspace": {"dependencies": ["npm:is-number@7"]}})
    elsewhere.write_text(theirs)
    (project / ".toolscript.lock").symlink_to(elsewhere)
    config = Config(project / ".toolscript.json", project, packages=("npm:left-pad@^1",))
    layout = CacheLayout(project / ".toolscript")
    assert not run_pipeline(config, layout, SnapshotSource({})).failures
    assert elsewhere.read_text() == theirs
    error = Artifacts.load(layout, []).packages_error
    assert error is not None and "symbolic link" in error, error
