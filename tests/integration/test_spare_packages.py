"""A spare sandbox (execution/spare.py) and declared npm packages (store/packages.py): a spare
gets the flags, import-map entries and npm set a fresh run of the same module gets, and one
spawned for other packages (none declared yet, or another lock) does not fit a run: it is
discarded and a fresh Deno runs the script. Packages are fetched for real from the npm
registry, as in test_packages.py."""

from __future__ import annotations

import io
import json
import signal
from pathlib import Path

import pytest

from tests.helpers import wait_for_exit
from toolscript.config import Config
from toolscript.execution.sandbox import Limits, Script, run_toolscript
from toolscript.execution.spare import Spare, spare_key
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline
from toolscript.store.packages import packages_beside
from toolscript.store.savedscripts import write_module

URL = "http://127.0.0.1:9"  # the scripts here call no tool
SCRIPT = (
    'import leftPad from "left-pad";\n'
    "console.log(JSON.stringify({ padded: leftPad('a', 3), spare: "
    'Deno.mainModule.endsWith("/boot.ts") }));\n'
)


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module offering left-pad, its packages fetched and locked by the pipeline."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    config = Config(tmp_path / ".toolscript.json", tmp_path, packages=("npm:left-pad@^1",))
    layout = CacheLayout(tmp_path / ".toolscript")
    assert not run_pipeline(config, layout, SnapshotSource({})).failures
    written = write_module(tmp_path / "copy" / "m.ts", layout.module.read_text(), {})
    assert packages_beside(written) is not None
    return written


def run(module: Path, spare: Spare) -> tuple[int, dict[str, object], str]:
    out, err = io.BytesIO(), io.BytesIO()
    code = run_toolscript(
        Script(SCRIPT, "job.ts"),
        URL,
        "test",
        module=module,
        check=False,
        limits=Limits(timeout=60),
        stdout=out,
        stderr=err,
        spare=spare,
    )
    text = out.getvalue().decode()
    return code, (json.loads(text) if code == 0 else {}), err.getvalue().decode()


def test_a_spare_runs_a_script_that_imports_a_declared_package(
    module: Path, tmp_path: Path
) -> None:
    spare = Spare(URL, module, 512)
    packages = packages_beside(module)
    assert packages is not None
    flags = list(spare.process.args)  # (as spawned: /proc's may be empty a moment after exec)
    assert f"--lock={packages.lock}" in flags
    assert "--frozen" in flags and "--cached-only" in flags and "--no-npm" not in flags
    code, seen, err = run(module, spare)
    assert code == 0, err
    assert seen == {"padded": "  a", "spare": True}


def test_a_spare_spawned_before_the_packages_does_not_fit_and_is_discarded(
    module: Path, tmp_path: Path
) -> None:
    beside = module.with_name(module.stem + ".packages.json")
    aside = tmp_path / "aside.json"
    beside.rename(aside)  # the module as it was before packages were declared
    spare = Spare(URL, module, 512)
    assert "--no-npm" in list(spare.process.args)
    assert spare.fits(URL, module, 512)
    aside.rename(beside)  # packages declared since the spare's spawn
    assert not spare.fits(URL, module, 512)
    code, seen, err = run(module, spare)
    assert code == 0, err
    assert seen == {"padded": "  a", "spare": False}  # a fresh Deno, with the packages, ran it
    wait_for_exit(spare.process.pid)
    # discarded: its stdin closed (it exits by itself, 0) and killed, whichever came first
    assert spare.process.returncode in (0, -signal.SIGKILL)


def test_a_spare_does_not_fit_once_the_lock_changed(module: Path, tmp_path: Path) -> None:
    packages = packages_beside(module)
    assert packages is not None
    spare = Spare(URL, module, 512)
    try:
        assert spare.fits(URL, module, 512)
        text = packages.lock.read_text()
        packages.lock.write_text(text + "\n")  # locked anew: another npm set
        assert not spare.fits(URL, module, 512)
        packages.lock.write_text(text)
        # what it was spawned for again (its process may have read the changed lock while it
        # booted, under load, and stopped: then it fits no run, rightly)
        assert spare.key == spare_key(URL, module, 512)
    finally:
        spare.discard()
