"""`gateway start` prints its URL on the stdout it started with, whatever a build step of
doit's made of ``sys.stdout`` meanwhile, and after it stdout is the log's."""

from __future__ import annotations

import subprocess
import sys

SWAPPED_WHILE_PRINTING = """
import io, sys
from toolscript.gateway.runner import _print_url, _stdout_to_log
captured = io.StringIO()
build_step_output, sys.stdout = sys.stdout, captured  # what doit does while a step runs
_print_url("http://127.0.0.1:1/token")
_stdout_to_log()
sys.stdout = build_step_output  # doit's step ends: it puts back what it found
print("printed by a tool after the URL")
sys.stderr.write("captured: " + repr(captured.getvalue()) + "\\n")
"""


def test_the_url_reaches_the_starter_while_doit_captures_stdout() -> None:
    """The URL went into doit's capture when a step ran as it was printed: the gateway
    served, and whoever started it waited 120 s for a URL (a CI failure, twice)."""
    done = subprocess.run(
        [sys.executable, "-c", SWAPPED_WHILE_PRINTING],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "http://127.0.0.1:1/token\n"
    assert "captured: ''" in done.stderr
    assert "printed by a tool after the URL" in done.stderr
