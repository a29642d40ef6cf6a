"""What a server names (a tool, a server) as a terminal shows it, beyond the approval
views: bidi controls always escaped, zero-width characters inside names too (``delete\u200b_all``
is no ``delete_all``), and free text keeping the joiners of its emoji."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolscript.cli import output
from toolscript.config import Config

HIDDEN = "delete\u200b_all"  # a zero-width space inside
TURNED = "read\u202eelif"  # a right-to-left override: shown as "readfile" reversed
CODER = "\U0001f469\u200d\U0001f4bb"  # woman technologist: two emoji and a zero-width joiner


def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdout a terminal: the one capsys captures, once the test runs (not in a fixture's
    setup, where pytest's own capture holds sys.stdout)."""
    import sys

    monkeypatch.setattr(output, "stdout_is_terminal", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)


def _answering(monkeypatch: pytest.MonkeyPatch, module: Any, answer: Any) -> None:
    """``module``'s command asks a gateway that answers ``answer``."""

    class Client:
        def get_json(self, *args: Any, **kwargs: Any) -> Any:
            if args and args[0] == "/health":  # list-tools asks whether the server is connected
                return {"servers": {}}
            return answer

    @contextlib.contextmanager
    def client(loaded: Any, **kwargs: Any) -> Iterator[Client]:
        yield Client()

    monkeypatch.setattr(
        module,
        "config_for_the_gateway",
        lambda config: (Config(path=None, project_dir=Path()), False),
    )
    monkeypatch.setattr(module, "gateway_client", client)


def test_a_name_on_a_terminal_has_its_invisible_characters_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal(monkeypatch)
    assert output.shown_name(HIDDEN) == "delete\\u200b_all"
    assert output.shown_name(TURNED) == "read\\u202eelif"
    for hidden in ("\u200c", "\u200d", "\u2060", "\ufeff"):
        assert "\\u" in output.shown_name(f"a{hidden}b")


def test_a_name_in_a_pipe_is_as_it_is() -> None:
    assert output.shown_name(HIDDEN) == HIDDEN  # (pytest's stdout is no terminal)


def test_list_tools_shows_names_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal(monkeypatch)
    # list-tools printed each name as the server sent it: an override turned the line
    from toolscript.cli import tools

    _answering(monkeypatch, tools, [{"name": HIDDEN}, {"name": TURNED}])
    tools.list_tools("s")
    assert capsys.readouterr().out.split() == ["delete\\u200b_all", "read\\u202eelif"]


def test_a_table_escapes_its_names_and_keeps_the_joiners_of_free_text(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal(monkeypatch)
    output.print_rows(
        ["tool", "description"], [[HIDDEN, f"for {CODER} \u202efolks"]], names=("tool",)
    )
    shown = capsys.readouterr().out
    assert "delete\\u200b_all" in shown
    assert CODER in shown  # a description's emoji, whole
    assert "\\u202e" in shown and "\u202e" not in shown  # its bidi control, escaped


def test_get_types_shows_a_servers_descriptions_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal(monkeypatch)
    # the declarations went to the terminal as the server wrote its descriptions: an ESC
    # sequence cleared the screen, an override turned what followed
    from toolscript.cli import types

    answer = {
        "declarations": "/** Read a file.\x1b[2J \u202eevil */\ndeclare function f(): void;",
        "tools": [{"function": "f"}],
        "examples": ["tools.s.f()"],
    }
    _answering(monkeypatch, types, answer)
    types.get_types("s", ["f"])
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "\\u001b[2J" in shown and "\\u202eevil" in shown
