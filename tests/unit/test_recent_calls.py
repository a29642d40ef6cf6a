"""One recent successful call per tool (gateway/recentcalls.py): redacted as the run log
is, trimmed to a size, kept per project, and shown by get-types only inside a comment."""

from __future__ import annotations

import json
from pathlib import Path

from toolscript.codegen.module import ToolFragment, recent_call_comment, render_declarations
from toolscript.gateway.recentcalls import LIMITS, MAX_TOOLS, RecentCalls, trimmed

SECRET = "sk-live-4f9a1c7e2b8d6a3f"


def fragment() -> ToolFragment:
    return ToolFragment(
        server="fx",
        tool="plain_text",
        namespace="fx",
        function="plainText",
        types="export type FxPlainTextParams = { text?: string };",
        signature="    plainText(params?: FxPlainTextParams): Promise<ToolResult>;",
        method="",
        example="tools.fx.plainText()",
    )


def test_a_call_is_kept_redacted_and_survives_a_restart(tmp_path: Path) -> None:
    calls = RecentCalls(tmp_path, lambda: [SECRET])
    # the result is the server's (the arguments, as sent: test_attacks_stop70_examples)
    calls.note("fx__plain_text", {"text": "hello", "apiKey": "abc12345"}, f"key {SECRET}")
    calls.save()
    kept = (tmp_path / "recent-calls.json").read_text()
    assert SECRET not in kept and "abc12345" not in kept and SECRET[:8] not in kept
    again = RecentCalls(tmp_path, lambda: [SECRET]).of("fx__plain_text")
    assert again is not None
    assert json.loads(again.arguments) == {"text": "hello", "apiKey": "***"}
    assert json.loads(again.result) == "key ***"
    assert (tmp_path / "recent-calls.json").stat().st_mode & 0o077 == 0


def test_a_call_is_redacted_of_the_secrets_of_the_config_it_was_made_under(
    tmp_path: Path,
) -> None:
    # a reload during the call took the server with SECRET out: settled with the config's
    # secrets of then alone, the call was kept (and shown to agents) with SECRET whole
    calls = RecentCalls(tmp_path, tuple)  # the config now: no secret
    calls.note("fx__plain_text", {"text": "hi"}, f"it said {SECRET}", secrets=[SECRET])
    calls.save()
    assert SECRET[:8] not in (tmp_path / "recent-calls.json").read_text()


def test_the_newest_call_is_shown(tmp_path: Path) -> None:
    calls = RecentCalls(tmp_path, tuple)
    calls.note("fx__plain_text", {"text": "one"}, "one")
    calls.note("fx__plain_text", {"text": "two"}, "two")
    found = calls.of("fx__plain_text")
    assert found is not None and found.result == '"two"'


def test_results_are_trimmed_to_a_size() -> None:
    big = {"items": [{"id": n, "text": "x" * 5000} for n in range(1000)], "more": list(range(50))}
    text, cut = trimmed(big)
    assert cut and len(text) <= LIMITS.result + 1
    assert "… 997 more" in text and "x" * (LIMITS.string + 1) not in text
    deep: object = "bottom"
    for _ in range(50):
        deep = [deep]
    assert trimmed(deep)[0].count("[") == LIMITS.depth
    wide = {f"key{n}": n for n in range(100)}
    assert json.loads(trimmed(wide)[0])["…"] == f"{100 - LIMITS.keys} more"
    assert trimmed({"a": 1}) == ('{"a":1}', False)


def test_a_secret_is_redacted_before_a_string_is_cut() -> None:
    # The secret begins just before the cut: cutting first would leave its first characters.
    text, _ = trimmed("y" * (LIMITS.string - 4) + SECRET, [SECRET])
    assert SECRET[:4] not in text and "***" in text


def test_the_tools_kept_are_capped(tmp_path: Path) -> None:
    calls = RecentCalls(tmp_path, tuple)
    for n in range(MAX_TOOLS + 10):
        calls.note(f"fx__tool{n}", {}, n)
        calls.settle()
    assert len(calls.calls) == MAX_TOOLS
    assert calls.of("fx__tool0") is None and calls.of(f"fx__tool{MAX_TOOLS + 9}") is not None


def test_switched_off_nothing_is_kept_or_shown(tmp_path: Path) -> None:
    calls = RecentCalls(tmp_path, tuple, enabled=False)
    calls.note("fx__plain_text", {}, "hi")
    calls.save()
    assert calls.of("fx__plain_text") is None
    assert not (tmp_path / "recent-calls.json").exists()


def test_a_damaged_file_is_set_aside(tmp_path: Path) -> None:
    (tmp_path / "recent-calls.json").write_text("[1, 2")
    calls = RecentCalls(tmp_path, tuple)
    assert calls.calls == {}
    assert any(path.name != "recent-calls.json" for path in tmp_path.iterdir())


def test_a_hostile_result_stays_inside_the_comment() -> None:
    hostile = "*/ export const pwned = 1; /* and */ declare const x: 1; //"
    text, cut = trimmed({"text": hostile})
    note = recent_call_comment(fragment(), '{"text":"hi"}', text, cut)
    assert note.startswith("/**") and note.endswith("*/")
    assert note.count("*/") == 1  # its own end only
    shown = render_declarations([fragment()], {"fx__plain_text": note})
    assert 'tools.fx.plainText({"text":"hi"})' in shown
    assert "export const pwned" in shown.split("/**")[1].split("*/")[0].replace("*\\/", "")
