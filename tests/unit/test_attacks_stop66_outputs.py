"""Stop 66's attack on kept output: a run's output past its cap was kept whole, up to 512 MB
per project's runs, with no budget shared by the projects (or the processes writing at
once): many runs, or a folder made per run, filled the disk. The budget
(``TOOLSCRIPT_KEPT_OUTPUT_MB``) is now shared by every project's kept outputs, as they are
written."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolscript.store.outputs import BudgetFull, open_output, output_file

MB = 1024 * 1024


def _kept(projects: Path) -> int:
    return sum(
        path.stat().st_size
        for path in projects.glob("*/runs/*/*")
        if path.is_file() and not path.name.endswith(".reserved")
    )


def test_outputs_of_other_projects_share_one_budget(projects: Path) -> None:
    for number in range(4):  # four projects (folders), one large kept output each
        with open_output(output_file(projects / f"p{number}", "run")) as kept:
            kept.write(b"x" * (MB * 6 // 10))
        assert _kept(projects) <= MB
    assert (projects / "p3" / "runs" / "run" / "output.txt").stat().st_size == MB * 6 // 10


def test_a_file_still_written_in_another_process_is_counted_never_dropped(
    projects: Path,
) -> None:
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from pathlib import Path
                from toolscript.store.outputs import open_output, output_file
                kept = open_output(output_file(Path({str(projects / "a")!r}), "run"))
                kept.write(b"x" * {MB * 7 // 10})
                print("written", flush=True)
                sys.stdin.read()
                kept.close()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "written\n"
        kept = open_output(output_file(projects / "b", "run"))
        with pytest.raises(BudgetFull, match="TOOLSCRIPT_KEPT_OUTPUT_MB"):
            kept.write(b"y" * (MB * 7 // 10))
        kept.write(b"y" * (MB // 10))  # what fits is written
        kept.close()
        assert (projects / "a" / "runs" / "run" / "output.txt").exists()
        assert _kept(projects) <= MB
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        writer.wait()
