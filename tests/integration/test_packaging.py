"""The wheel a user installs with ``pip install .`` holds the whole package.

The development install is editable, so every other test imports the source tree and
would pass even when a subpackage is missing from pyproject's package list (as
``toolscript.search`` once was: ``toolscript gateway start`` then failed on import).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_every_module_schema_and_template(tmp_path: Path) -> None:
    # Built from a copy: setuptools leaves build/ behind, and a stale one could hide a gap.
    source = tmp_path / "source"
    for name in ("toolscript", "schemas", "templates"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    [wheel] = tmp_path.glob("toolscript-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())

    expected = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "toolscript").rglob("*")
        if path.is_file()
        and path.suffix in (".py", ".typed", ".sh")
        and "__pycache__" not in path.parts
    }
    expected |= {f"toolscript/schemas/{path.name}" for path in (ROOT / "schemas").glob("*.json")}
    expected |= {  # (a __pycache__ appears once anything imported toolscript.templates)
        f"toolscript/templates/{path.name}"
        for path in (ROOT / "templates").iterdir()
        if path.is_file()
    }
    assert "toolscript/search/engine.py" in expected  # the walk found the tree
    assert "toolscript/execution/watchdog.sh" in expected  # (the watchdog is a shell script)
    assert sorted(expected - shipped) == []
