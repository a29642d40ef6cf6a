"""What `toolscript search` says on stderr about a keyword-only answer: the missing
semantic extra once per user, a passing reason every time."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscript.cli import search as cli_search
from toolscript.search import semantic
from toolscript.search.semantic import NEEDS_EXTRA

KEYWORD = {"mode": "keyword", "hits": [{"name": "x"}]}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_missing_extra_is_said_once_not_on_every_search(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Every search of a `pip install .` (keyword-only) said it, on every call.
    answer = {**KEYWORD, "search": {"mode": "keyword", "reason": NEEDS_EXTRA}}
    cli_search._note_mode(answer)
    first = capsys.readouterr().err
    assert "pip install '.[semantic]'" in first and "said once" in first
    cli_search._note_mode(answer)
    assert capsys.readouterr().err == ""


def test_a_passing_reason_is_said_every_time(capsys: pytest.CaptureFixture[str]) -> None:
    answer = {**KEYWORD, "search": {"mode": "keyword", "reason": "the model is loading"}}
    for _ in range(2):
        cli_search._note_mode(answer)
        assert "note: keyword search only (the model is loading)" in capsys.readouterr().err


def test_a_one_command_gateway_without_the_extra_does_not_promise_meaning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # It said "a running one searches by meaning too", which no gateway of that install does.
    monkeypatch.setattr(semantic, "semantic_installed", lambda: False)
    cli_search._note_mode({**KEYWORD, "search": {"mode": "keyword"}}, ephemeral=True)
    said = capsys.readouterr().err
    assert "by meaning" not in said
    assert "pip install '.[semantic]'" in said
