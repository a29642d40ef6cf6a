"""The options of a script's type check (``plumbing/checkoptions.py``): Deno's libs without
Node's types, which scripts keep Node's, and the verdicts that key on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.execution.sandbox import Script, _write_script, checked_before
from toolscript.plumbing import checkoptions
from toolscript.plumbing.checkoptions import (
    SCRIPT_LIBS,
    check_imports,
    check_tag,
    shared_check_config,
    uses_node,
    write_check_config,
)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "toolscript-home"))
    return tmp_path / "toolscript-home"


@pytest.mark.parametrize(
    "code",
    [
        "console.log(process.env.TOOLSCRIPT_GATEWAY_URL);",
        "const b = Buffer.from('x');",
        "setImmediate(() => {});",
        "let t: NodeJS.Timeout;",
        "console.log(globalThis.process);",
        "const g = global;",
        'import os from "node:os";',
        "const m = await import('node:fs');",
        "const url = `${process.argv}`;",
        # a regular expression's quote, backtick or slashes open no string, template or
        # comment that would hide what follows
        'if (/"/.test(s)) console.log(process.env.HOME, "x");',
        "const ok = /'/.test(s) && process.exit(0) || 'y';",
        "const q = /`/.test(s);\nconst b = Buffer.from('x');\nconst t = `y`;",
        "const u = s.replace(/\\/\\//g, ''); process.exit(0);",
        "const r = /[/*]/;\nconsole.log(process.env.X);\nconst z = 1; /* c */",
        'function f(s: string) { return /"/.test(s) }\nconsole.log(process.argv, "x");',
        "const t = `${/`/.test(s)}`;\nconst b = Buffer.alloc(1);",
        'const x = /"/.test(s);\nimport "node:fs";',
        # a division is no regular expression: the string after it is one
        'const half = a / 2; const s = "/"; console.log(process.pid, "x");',
        # a `/` that may begin one and begins none: unsure, so yes
        "let i = 0; const h = i++ / 2;",
        # Node's types by name, and a global by a string
        'const e: BufferEncoding = "utf8";',
        'const p = globalThis["process"];',
        "const b = globalThis?.['Buffer'];",
    ],
)
def test_a_script_using_node_is_checked_with_nodes_types(code: str) -> None:
    assert uses_node(code)


@pytest.mark.parametrize(
    "code",
    [
        "const processed = 1; const globalCount = 2; const myBuffer = 3;",
        "// process the results\nconsole.log(1);",
        "/* a global Buffer */ console.log(1);",
        "console.log(\"process\", 'Buffer');",
        "const $process = 1; const process_ = 2;",
        'console.log("http://x/" + 1); // process',
        "const x = a / b / c; console.log('process');",
        "const r = /a\\/b/g; const n = (1 + 2) / 3; console.log(`process ${n / 2}`);",
        # CommonJS's names are undefined in the sandbox: the lean check says so before a run
        "console.log(__dirname, __filename);",
    ],
)
def test_a_script_not_using_node_gets_the_lean_libs(code: str) -> None:
    assert not uses_node(code)


def test_the_config_names_libs_without_nodes_types_and_a_globals_file_of_its_own(
    cache: Path,
) -> None:
    assert "deno.window" not in SCRIPT_LIBS and "deno.shared_globals" not in SCRIPT_LIBS
    assert {"esnext", "deno.ns", "deno.console", "deno.web", "deno.fetch"} <= set(SCRIPT_LIBS)
    path = write_check_config()
    assert path.parent == cache / "check" and check_tag() in path.name
    assert path.stat().st_mode & 0o077 == 0  # private, as the cache is
    config = json.loads(path.read_text())
    assert config["compilerOptions"]["lib"] == list(SCRIPT_LIBS)
    assert config["lock"] is False
    (globals_url,) = config["compilerOptions"]["types"]
    assert check_imports() == {globals_url: globals_url}  # through the sandbox's import map
    text = Path(globals_url.removeprefix("file://")).read_text()
    assert "declare var console: Console;" in text and "declare var self:" in text
    assert "declare function setTimeout" in text and "<reference" not in text
    # A module's packages are declared as their fetch declared them (a frozen lock's terms).
    declared = {"left-pad": "npm:left-pad@^1"}
    with_packages = write_check_config(dependencies=declared)
    assert with_packages != path and with_packages.parent == path.parent
    assert json.loads(with_packages.read_text())["imports"] == declared
    with_lock = write_check_config(cache / "mine.json", {"path": "/l", "frozen": True})
    assert json.loads(with_lock.read_text())["lock"] == {"path": "/l", "frozen": True}


def test_a_pass_under_other_options_is_not_taken_for_one(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = Script("console.log(1);", "inline.ts")
    path, _ = _write_script(script)  # (its run's copy: the marks are in its content's folder)
    (path.parent.parent / f".{path.name}.checked-abc").write_text("")  # as passes were kept before
    assert not checked_before(script, "abc")
    (path.parent.parent / f".{path.name}.checked-abc-{check_tag()}").write_text("")
    assert checked_before(script, "abc")
    monkeypatch.setattr(checkoptions, "_VERSION", "other")
    check_tag.cache_clear()
    try:
        assert not checked_before(script, "abc")
    finally:
        check_tag.cache_clear()


def test_without_denos_types_the_check_keeps_denos_default_lib(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_DENO", "/bin/false")  # a Deno whose `deno types` fails
    check_tag.cache_clear()
    try:
        assert shared_check_config() is None  # then `--no-config`, as before
    finally:
        check_tag.cache_clear()


def test_a_checked_run_reads_the_checks_config_and_no_other(tmp_path: Path) -> None:
    from toolscript.execution.sandbox import DEFAULT_LIMITS, _command

    config = tmp_path / "deno-x.json"
    args = (tmp_path / "s.ts", "http://127.0.0.1:9", tmp_path / "m.json", True, DEFAULT_LIMITS)
    command = _command(*args, config=config)
    assert f"--config={config}" in command and "--no-config" not in command
    assert "--no-config" in _command(*args)
