"""The warm checker's diagnostics read exactly as `deno check` prints them (Deno 2.x)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from toolscript.gateway import checker as checker_module
from toolscript.gateway.checker import (
    FAILED_TAIL,
    Document,
    WarmChecker,
    _Unsure,
    _v8_flags,
    render_diagnostics,
)

SCRIPT = "file:///checker/scripts/slot.ts"
MODULE = "file:///cache/modules/0123.ts"
SHOWN = "file:///cache/scripts/ab12/inline.ts"


def diagnostic(
    line: int, start: int, end: int, code: Any, message: str, **extra: Any
) -> dict[str, Any]:
    span = {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}
    return {"uri": SCRIPT, "range": span, "code": code, "message": message, **extra}


def documents(*lines: str, module: list[str] | None = None) -> dict[str, Document]:
    found = {SCRIPT: Document(SHOWN, list(lines))}
    if module is not None:
        found[MODULE] = Document("file:///home/me/.cache/toolscript/modules/0123.ts", module)
    return found


def test_one_error_with_a_single_character_caret() -> None:
    code = ['import { tools } from "toolscript";', 'const x: number = "a";']
    found = diagnostic(1, 6, 7, 2322, "Type 'string' is not assignable to type 'number'.")
    assert render_diagnostics([found], documents(*code)) == (
        "TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.\n"
        'const x: number = "a";\n'
        "      ^\n"
        f"    at {SHOWN}:2:7" + FAILED_TAIL
    )


def test_several_errors_are_counted_and_ranges_underlined() -> None:
    code = ["await tools.nope.nothing();", "let y = undefinedName + 1;"]
    found = [
        diagnostic(0, 12, 16, 2339, "Property 'nope' does not exist on type 'Tools'."),
        diagnostic(1, 8, 21, 2552, "Cannot find name 'undefinedName'. Did you mean 'undefined'?"),
    ]
    text = render_diagnostics(found, documents(*code))
    assert text.startswith(
        "TS2339 [ERROR]: Property 'nope' does not exist on type 'Tools'.\n"
        "await tools.nope.nothing();\n"
        "            ~~~~\n"
        f"    at {SHOWN}:1:13\n\n"
        "TS2552 [ERROR]: Cannot find name 'undefinedName'. Did you mean 'undefined'?\n"
        "let y = undefinedName + 1;\n"
        "        ~~~~~~~~~~~~~\n"
        f"    at {SHOWN}:2:9\n\n"
        "Found 2 errors.\n\nerror: Type checking failed.\n"
    )


def test_related_information_is_indented_under_its_error() -> None:
    code = ["type A = { a: { b: { c: number } } };", 'const v: A = { a: { b: { c: "s" } } };']
    span = {"start": {"line": 0, "character": 21}, "end": {"line": 0, "character": 22}}
    related = {
        "location": {"uri": SCRIPT, "range": span},
        "message": "The expected type comes from property 'c' which is declared here on type '{ c: number; }'",
    }
    found = diagnostic(
        1,
        25,
        26,
        2322,
        "Type 'string' is not assignable to type 'number'.",
        relatedInformation=[related],
    )
    assert render_diagnostics([found], documents(*code)) == (
        "TS2322 [ERROR]: Type 'string' is not assignable to type 'number'.\n"
        'const v: A = { a: { b: { c: "s" } } };\n'
        "                         ^\n"
        f"    at {SHOWN}:2:26\n\n"
        "    The expected type comes from property 'c' which is declared here on type '{ c: number; }'\n"
        "    type A = { a: { b: { c: number } } };\n"
        "                         ^\n"
        f"        at {SHOWN}:1:22" + FAILED_TAIL
    )


def test_a_place_in_the_module_is_named_by_the_module_exec_runs() -> None:
    span = {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 10}}
    related = {"location": {"uri": MODULE, "range": span}, "message": "declared here"}
    found = diagnostic(0, 0, 1, 2322, "bad", relatedInformation=[related])
    text = render_diagnostics([found], documents("x", module=["type P = {", "  timezone: string;"]))
    assert "    declared here\n      timezone: string;\n      ~~~~~~~~\n" in text
    assert "at file:///home/me/.cache/toolscript/modules/0123.ts:2:3" in text


def test_long_lines_are_not_quoted_and_tabs_keep_the_caret_aligned() -> None:
    long = "x" * 151
    text = render_diagnostics([diagnostic(0, 3, 4, 2304, "long")], documents(long))
    assert long not in text and f"at {SHOWN}:1:4" in text
    tabbed = render_diagnostics([diagnostic(0, 2, 3, 2304, "tab")], documents("\t\tx;"))
    assert "\t\tx;\n\t\t^\n" in tabbed


def test_a_message_chain_keeps_its_indentation() -> None:
    message = "Type 'X' is not assignable to type 'Y'.\n  The types of 'a' are incompatible.\n    Type 'number' is not assignable to type 'string'."
    text = render_diagnostics([diagnostic(0, 4, 5, 2322, message)], documents("let x: Y = y;"))
    assert text.startswith(f"TS2322 [ERROR]: {message}\nlet x: Y = y;\n    ^\n")


@pytest.mark.parametrize(
    "found",
    [
        diagnostic(0, 0, 1, "no-local", "Unable to load a local module"),  # Deno's resolution
        diagnostic(0, 0, 1, 1005, "';' expected."),  # a syntax error: deno run's parser says it
        diagnostic(
            0,
            0,
            1,
            2322,
            "bad",
            relatedInformation=[
                {
                    "location": {
                        "uri": "deno:/asset/lib.deno.window.d.ts",
                        "range": {
                            "start": {"line": 0, "character": 0},
                            "end": {"line": 0, "character": 1},
                        },
                    },
                    "message": "declared here",
                }
            ],
        ),
    ],
)
def test_what_deno_check_would_print_otherwise_is_left_to_it(found: dict[str, Any]) -> None:
    with pytest.raises(_Unsure):
        render_diagnostics([found], documents("x"))


def test_the_modules_lines_are_read_from_its_file_when_an_error_shows_one(
    tmp_path: Path,
) -> None:
    """The checker keeps no copy of the module's lines (2 MB at 1,600 tools): an error
    placed in the module shows its line read from the module's file, as deno check does."""
    module = tmp_path / "0123.ts"
    module.write_text("type P = {\n  timezone: string;\n};\n", encoding="utf-8")
    span = {"start": {"line": 1, "character": 2}, "end": {"line": 1, "character": 10}}
    related = {"location": {"uri": MODULE, "range": span}, "message": "declared here"}
    found = diagnostic(
        0, 0, 1, 2741, "Property 'timezone' is missing.", relatedInformation=[related]
    )
    shown = "file:///home/me/.cache/toolscript/modules/0123.ts"
    from_file = {**documents("x"), MODULE: Document(shown, path=module)}
    given = {**documents("x"), MODULE: Document(shown, module.read_text().split("\n"))}
    assert render_diagnostics([found], from_file) == render_diagnostics([found], given)
    assert "  timezone: string;\n" in render_diagnostics([found], from_file)
    module.unlink()  # gone (a cache cleaned): deno check says it, not a wrong line
    with pytest.raises(_Unsure):
        render_diagnostics([found], {**documents("x"), MODULE: Document(shown, path=module)})


@pytest.mark.parametrize(
    ("own", "expected"),
    [
        (
            "",
            "--max-old-space-size=512,--max-semi-space-size=1,--no-opt,--maglev,"
            "--no-maglev-inlining,--invocation-count-for-maglev=8000,--optimize-for-size",
        ),
        (
            "--no-optimize-for-size,--max-old-space-size=2048,--opt",
            "--no-optimize-for-size,--max-old-space-size=2048,--opt,--max-semi-space-size=1,"
            "--maglev,--no-maglev-inlining,--invocation-count-for-maglev=8000",
        ),
        (
            "--no-maglev,--invocation-count-for-maglev=400",
            "--no-maglev,--invocation-count-for-maglev=400,--max-old-space-size=512,"
            "--max-semi-space-size=1,--no-opt,--no-maglev-inlining,--optimize-for-size",
        ),
        (  # V8 reads "_" as "-", and "no" with or without its dash
            "--max_old_space_size=4096,--nomaglev,--no_opt,--min_semi_space_size=4",
            "--max_old_space_size=4096,--nomaglev,--no_opt,--min_semi_space_size=4,"
            "--no-maglev-inlining,--invocation-count-for-maglev=8000,--optimize-for-size",
        ),
    ],
)
def test_the_checker_runs_lean_unless_the_user_set_the_same_flags(
    monkeypatch: pytest.MonkeyPatch, own: str, expected: str
) -> None:
    monkeypatch.setenv("DENO_V8_FLAGS", own)
    assert _v8_flags() == expected


def _starting_checker(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[WarmChecker, asyncio.Event, asyncio.Event]:
    """A checker whose server's start blocks until ``release`` is set, then fails."""
    checker = WarmChecker()
    started, release = asyncio.Event(), asyncio.Event()

    async def blocked_start(*_: Any) -> Any:
        started.set()
        await release.wait()
        raise OSError("no server here")

    monkeypatch.setattr(checker, "_start", blocked_start)
    return checker, started, release


def test_a_check_during_a_start_waits_for_it_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        checker, started, release = _starting_checker(monkeypatch)
        await checker._await_start()  # no start under way: at once
        replacing = asyncio.create_task(checker._replace("hash", b"", {}))
        await started.wait()
        waiting = asyncio.create_task(checker._await_start())
        await asyncio.sleep(0.05)
        assert not waiting.done(), "the check did not wait for the start under way"
        assert checker.status()["waiting"] == 1
        release.set()
        await asyncio.wait_for(waiting, 1)
        assert await replacing is False and checker.state == "failed"
        assert checker.status()["waiting"] == 0
        await asyncio.wait_for(checker._await_start(), 1)  # none under way again

    asyncio.run(scenario())


def test_a_check_waits_for_a_start_only_so_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checker_module, "START_WAIT", 0.1)

    async def scenario() -> None:
        checker, started, release = _starting_checker(monkeypatch)
        replacing = asyncio.create_task(checker._replace("hash", b"", {}))
        await started.wait()
        await asyncio.wait_for(checker._await_start(), 5)
        assert not replacing.done(), "the wait ended with the start, not at its bound"
        assert checker.status()["waiting"] == 0
        release.set()
        await replacing

    asyncio.run(scenario())
