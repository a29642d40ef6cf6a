"""Output past --max-output kept in a file that cannot be written, and kept by many runs at once.

The runs folder (``<TOOLSCRIPT_HOME state>/projects/<key>/runs``) is made read-only, full, a
file, or deleted mid-spill, for real: the run still ends at once with a preview of its value
and a message saying the whole output could not be kept. Concurrent runs past the cap prune
each other's folders without losing a return value, and keep the total under its limit.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import clean_env, toolscript_cli
from toolscript.plumbing.paths import project_state_dir

BIG_VALUE = 'return { total: 3000, items: Array.from({ length: 3000 }, (_, i) => ({ id: i, pad: "x".repeat(50) })) };'


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kept-home")


def _runs_folder(home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder exec keeps the outputs of ``project``'s runs in, under ``home``."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    return project_state_dir(project) / "runs"


def _exec(home: Path, project: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    # --timeout: a hung pump makes the run end at it (124) instead of at once.
    return toolscript_cli(
        "exec",
        "--no-check",
        "--max-output",
        "4000",
        "--timeout",
        "60",
        code,
        cwd=project,
        env={"TOOLSCRIPT_HOME": str(home), **env},
        timeout=180,
    )


def _assert_previewed_and_not_kept(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 123, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    shown = json.loads(result.stdout)  # the return value, previewed
    assert shown["total"] == 3000 and shown["items"][0]["id"] == 0
    assert "output cut:" in result.stderr
    assert "the whole output could not be kept" in result.stderr, result.stderr


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[list[Path]]:
    """Folders to mount on; each is unmounted afterwards."""
    points: list[Path] = []
    yield points
    for point in points:
        subprocess.run(["umount", str(point)], check=False, capture_output=True)


def _mount_tmpfs(point: Path, options: str, mounted: list[Path]) -> None:
    point.mkdir(parents=True, exist_ok=True)
    if sys.platform != "linux" or shutil.which("mount") is None:
        pytest.skip("needs Linux's mount to make a read-only or full folder")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    mounted.append(point)


def test_a_read_only_runs_folder_still_previews_and_ends_at_once(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mounted: list[Path]
) -> None:
    _mount_tmpfs(_runs_folder(home, tmp_path, monkeypatch), "ro,size=64k", mounted)
    result = _exec(home, tmp_path, BIG_VALUE)
    _assert_previewed_and_not_kept(result)
    assert "Read-only file system" in result.stderr
    assert "TOOLSCRIPT_HOME" in result.stderr  # what moves the folder


def test_a_full_runs_folder_still_previews_and_ends_at_once(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mounted: list[Path]
) -> None:
    runs = _runs_folder(home, tmp_path, monkeypatch)
    _mount_tmpfs(runs, "size=64k", mounted)
    result = _exec(home, tmp_path, BIG_VALUE)
    _assert_previewed_and_not_kept(result)
    assert "No space left on device" in result.stderr
    assert not list(runs.rglob("output.txt")), "a partial output is not left as if whole"


def test_a_runs_path_that_is_a_file_still_previews(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runs_folder(home, tmp_path, monkeypatch).write_text("not a folder")
    _assert_previewed_and_not_kept(_exec(home, tmp_path, BIG_VALUE))


def test_output_deleted_while_it_is_written_still_previews(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs_folder(home, tmp_path, monkeypatch)
    code = (
        'console.log("y".repeat(100000));\n'
        "await new Promise((done) => setTimeout(done, 4000));\n" + BIG_VALUE
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", "--no-check", "--max-output", "4000", code],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_HOME=str(home)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(runs.glob("*/output.txt")):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the output never spilled"
            time.sleep(0.02)
        for folder in runs.iterdir():
            shutil.rmtree(folder)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 123, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    assert "y" * 400 in stdout  # the preview, in the first line's place and the value's
    assert '"total":3000' in stdout.replace(" ", "")
    assert "deleted while it was written" in stderr, stderr


def test_concurrent_runs_past_the_cap_lose_no_value_and_keep_under_the_limit(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = _runs_folder(home, tmp_path, monkeypatch)
    limit_mb = 1.0
    # Each run keeps about 200 KB; 16 of them, 4 at a time, are far past 1 MB together.
    code = (
        "return { run: 'RUN', total: 3000, items: Array.from({ length: 3000 }, "
        '(_, i) => ({ id: i, pad: "x".repeat(50) })) };'
    )

    def one(number: int) -> tuple[int, subprocess.CompletedProcess[str]]:
        return number, _exec(
            home,
            tmp_path,
            code.replace("RUN", f"run{number}"),
            TOOLSCRIPT_KEPT_OUTPUT_MB=str(limit_mb),
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, range(16)))
    for number, result in results:
        assert result.returncode == 123, result.stderr[-2000:]
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
        assert json.loads(result.stdout)["run"] == f"run{number}"
    kept = sum(path.stat().st_size for path in runs.rglob("*") if path.is_file())
    assert 0 < kept <= limit_mb * 1024 * 1024, kept
