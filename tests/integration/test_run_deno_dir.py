"""A sandbox run's own DENO_DIR: Deno keeps its analysis caches in memory (a folder stands
where each SQLite file would be made, filled and removed with the run), and a TypeScript
script importing a module still runs, silently."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import deno_bin, deno_env
from toolscript.plumbing.denobinary import run_deno_dir


def test_a_run_writes_no_analysis_cache_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    code = tmp_path / "code"
    code.mkdir()
    (code / "module.ts").write_text(
        "export const greet = (name: string): string => `hi ${name}`;\n"
    )
    (code / "main.ts").write_text(
        'import { greet } from "./module.ts";\nconst who: string = "there";\n'
        "console.log(greet(who));\n"
    )
    with run_deno_dir() as deno_dir:
        ran = subprocess.run(
            [deno_bin(), "run", "--quiet", "--no-config", "--no-check", str(code / "main.ts")],
            env=deno_env(deno_dir),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, "hi there\n", "")
        # (a Deno that names them otherwise fails here: MEMORY_CACHES then needs its names)
        made = [path.name for path in deno_dir.iterdir() if "analysis" in path.name]
        assert made, "Deno made no analysis cache at all: the test no longer tests anything"
        assert [name for name in made if not (deno_dir / name).is_dir()] == []
        assert [name for name in made if any((deno_dir / name).iterdir())] == []
