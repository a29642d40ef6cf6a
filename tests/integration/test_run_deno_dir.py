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


def _run_in_own_dir(script: Path) -> subprocess.CompletedProcess[str]:
    with run_deno_dir() as deno_dir:
        return subprocess.run(
            [deno_bin(), "run", "--quiet", "--no-config", "--no-check", str(script)],
            env=deno_env(deno_dir),
            capture_output=True,
            text=True,
            timeout=60,
        )


def test_runs_share_what_deno_emits_for_local_files_but_not_for_data_imports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A module is transpiled once for every run after it (130 ms of each run's start at
    1,600 tools); a script's `data:` imports are emitted in its own DENO_DIR, gone with it
    (a loop of them would otherwise fill the user's disk); a changed file is emitted anew."""
    home = tmp_path / "home"
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    code = tmp_path / "code"
    code.mkdir()
    module = code / "module.ts"
    module.write_text('export const v: number = 1;\nconsole.log("module", v);\n')
    (code / "main.ts").write_text(
        'import "./module.ts";\n'
        'await import("data:application/typescript,const d: number = 7; console.log(d);");\n'
    )
    ran = _run_in_own_dir(code / "main.ts")
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "module 1\n7\n", "")
    shared = home / "deno" / "gen"
    emitted = sorted(path.name for path in shared.rglob("*") if path.is_file())
    assert emitted == ["main.ts.js", "module.ts.js"]  # no `data:` module among them
    assert not list((home / "run").glob("deno-*")), "the run's own DENO_DIR went with it"
    module.write_text('export const v: number = 2;\nconsole.log("module", v);\n')
    ran = _run_in_own_dir(code / "main.ts")
    assert (ran.returncode, ran.stdout) == (0, "module 2\n7\n")
