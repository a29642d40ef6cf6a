"""exec has two parsers (typer for --help, argparse for start-up speed) and one table of options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from toolscript.cli.exec import exec_command
from toolscript.cli.lazy import resolved
from toolscript.execution.command import EXEC_OPTIONS, exec_parser


def _typer_options() -> dict[str, tuple[set[str], object]]:
    app = typer.Typer()
    app.command()(resolved(exec_command))  # its options made typer's, as main.py makes them
    command = typer.main.get_command(app)
    return {param.name: (set(param.opts), param.default) for param in command.params if param.name}


def test_both_parsers_read_the_same_table() -> None:
    typer_options = _typer_options()
    for name, option in EXEC_OPTIONS.items():
        if name in ("config", "cache_dir"):
            continue  # shared options of every command (cli/options.py), same flags
        flags, default = typer_options[name]
        assert flags == set(option.flags), name
        assert default == option.default, name


def test_the_fast_parser_reads_every_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLSCRIPT_CONFIG", raising=False)
    parsed = exec_parser().parse_args(
        [
            "--timeout",
            "3",
            "--memory",
            "64",
            "--max-output",
            "100",
            "-f",
            "x.ts",
            "--no-check",
            "-c",
            "c.json",
        ]
    )
    assert (parsed.timeout, parsed.memory, parsed.max_output) == (3.0, 64, 100)
    assert parsed.file == Path("x.ts") and parsed.check is False and parsed.config == "c.json"
    defaults = exec_parser().parse_args([])
    assert defaults.timeout == EXEC_OPTIONS["timeout"].default
    assert defaults.memory == EXEC_OPTIONS["memory"].default


def test_environment_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSCRIPT_CONFIG", "from-env.json")
    assert exec_parser().parse_args([]).config == "from-env.json"


def test_the_help_says_what_max_output_does() -> None:
    """It keeps and previews output past the cap; it does not stop the script."""
    from toolscript.execution.command import EXEC_OPTIONS

    text = EXEC_OPTIONS["max_output"].help
    assert "Stop the script" not in text
    assert "kept in a file" in text and "exit 123" in text


def test_exec_and_run_declare_the_same_limits_each_default_shown_whole() -> None:
    """The limits are one declaration (cli/options.py) both commands use; an int's default
    reads as written (10485760, not 1.04858e+07)."""
    from toolscript.cli.scripts import run_command

    def limits(function: Any) -> dict[str, tuple[object, ...]]:
        app = typer.Typer()
        app.command()(resolved(function))
        command = typer.main.get_command(app)
        return {
            str(param.name): (tuple(param.opts), getattr(param, "help", None), param.show_default)
            for param in command.params
            if param.name in ("timeout", "memory", "max_output", "max_calls")
        }

    exec_limits = limits(exec_command)
    assert len(exec_limits) == 4 and exec_limits == limits(run_command)
    assert exec_limits["max_output"][2] == "10485760, or the resumed run's"
