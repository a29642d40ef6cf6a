"""A server's stderr file is kept to its end (``plumbing/stderrfile.py``): cut back once past
its bound, the lines that say why a server failed are still its last, and what the server
writes after the cut follows them (the file is appended to, whatever the server's offset)."""

from __future__ import annotations

import os
import subprocess
import sys

from toolscript.plumbing.stderrfile import CUT_PAST, KEPT, keep_end, new_stderr_file, read_end

WRITER = (
    "import sys\n"
    f"sys.stderr.write('a log line\\n' * {CUT_PAST // 5} + 'the last line before\\n')\n"
    "sys.stderr.flush()\n"
    "print('written', flush=True)\n"
    "input()\n"
    "sys.stderr.write('the line after\\n')\n"
)


def test_a_processs_stderr_past_its_bound_keeps_its_end_and_what_follows() -> None:
    with new_stderr_file() as stderr:
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        try:
            assert writer.stdin is not None and writer.stdout is not None
            assert writer.stdout.readline() == "written\n"
            assert os.fstat(stderr.fileno()).st_size > CUT_PAST
            keep_end(stderr)
            assert os.fstat(stderr.fileno()).st_size == KEPT
            writer.stdin.write("\n")
            writer.stdin.flush()
            assert writer.wait(30) == 0
        finally:
            writer.kill()
        assert os.fstat(stderr.fileno()).st_size == KEPT + len(b"the line after\n")
        assert read_end(stderr, 100).splitlines()[-2:] == ["the last line before", "the line after"]
