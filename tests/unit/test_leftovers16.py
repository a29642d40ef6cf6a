"""The sixteenth stop's leftovers, where the logic is pure: `help` given an option, ..."""

from __future__ import annotations

import json
import sys

import pytest

from toolscript.cli.entry import main


def _main(monkeypatch: pytest.MonkeyPatch, *arguments: str) -> int:
    monkeypatch.setattr(sys, "argv", ["toolscript", *arguments])
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    return code if isinstance(code, int) else 0


@pytest.mark.parametrize("option", ["--json", "-x"])
def test_help_given_an_option_is_a_usage_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    """`toolscript help --json` was click's "No such option: --json (Possible options:
    --version)" with a hint to run `--help`: help is text; it takes command names."""
    assert _main(monkeypatch, "help", option) == 2
    shown = capsys.readouterr()
    assert f"`toolscript help` takes command names, not options ({option})" in shown.err
    assert "Possible options" not in shown.err + shown.out
    if option == "--json":  # as every command's error with --json: one object on stdout
        assert json.loads(shown.out)["error"] == "usage_error"
    else:
        assert shown.out == ""


def test_help_of_a_command_still_shows_its_help(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(monkeypatch, "help", "exec") == 0
    assert "Usage: toolscript exec" in capsys.readouterr().out
