"""``exec``'s options as data: their flags, help, ranges and fallbacks, read by the typer
commands (``cli/options.py``, for ``--help``) and exec's fast parser alike.

Light on purpose: every CLI module imports ``cli/options.py``, which reads these.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "DEFAULT_MAX_CALLS",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT",
    "EXEC_OPTIONS",
    "MIN_MEMORY_MB",
    "ExecOption",
]

DEFAULT_TIMEOUT = 300.0
DEFAULT_MEMORY_MB = 512
DEFAULT_MAX_OUTPUT = 10 * 1024 * 1024
DEFAULT_MAX_CALLS = 1000  # the gateway's own default too (gateway/runbook.py)
MIN_MEMORY_MB = 16  # below this V8 cannot start a script at all


class ExecOption(NamedTuple):
    """One option of ``exec``: read by the typer command (--help) and the fast parser alike."""

    flags: tuple[str, ...]
    kind: type
    default: Any
    help: str
    envvar: str | None = None
    minimum: float | None = None  # the allowed range, checked by click (and the fast parser)
    maximum: float | None = None
    # a limit's value when it is not given (default None): a resumed run's own, else this
    fallback: Any = None

    def allows(self, value: Any) -> bool:
        return value is None or not (
            (self.minimum is not None and value < self.minimum)
            or (self.maximum is not None and value > self.maximum)
        )


EXEC_OPTIONS: dict[str, ExecOption] = {
    "file": ExecOption(
        ("--file", "-f"),
        Path,
        None,
        "Run this .ts file (same as `toolscript FILE`; - reads stdin).",
    ),
    # The limits: not given, a resume keeps the stopped run's (docs/policy.md), else fallback.
    "timeout": ExecOption(
        ("--timeout",),
        float,
        None,
        "Stop the script after this many seconds (0: never).",
        minimum=0,
        fallback=DEFAULT_TIMEOUT,
    ),
    "memory": ExecOption(
        ("--memory",),
        int,
        None,
        "V8 heap limit in MB.",
        minimum=MIN_MEMORY_MB,
        fallback=DEFAULT_MEMORY_MB,
    ),
    "max_output": ExecOption(
        ("--max-output",),
        int,
        None,
        "Bytes of output (stdout and stderr together) printed whole; past them stdout is kept "
        "in a file and previewed (the script goes on; exit 123).",
        minimum=1,
        fallback=DEFAULT_MAX_OUTPUT,
    ),
    "max_calls": ExecOption(
        ("--max-calls",),
        int,
        None,
        "Stop the script at its Nth tool call (a runaway loop); exit 122.",
        minimum=1,
        fallback=DEFAULT_MAX_CALLS,
    ),
    "resume": ExecOption(
        ("--resume",),
        str,
        None,
        "Resume the run RUN_ID that stopped for an approval: calls it made are answered "
        "from its log, not made again.",
    ),
    "config": ExecOption(
        ("--config", "-c"), str, None, "Path of the config file.", envvar="TOOLSCRIPT_CONFIG"
    ),
    "cache_dir": ExecOption(
        ("--cache-dir",), str, None, "Where artifacts go.", envvar="TOOLSCRIPT_CACHE_DIR"
    ),
}
