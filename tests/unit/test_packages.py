"""Declared packages: the config, what the module carries, the sandbox's command line, and
Deno's refusals in toolscript's words (the real fetch and runs: tests/integration/test_packages.py)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import anyio
import pytest

from toolscript.cli.types import render_markdown
from toolscript.config import load_config
from toolscript.errors import ConfigError
from toolscript.execution.locate import uses_gateway
from toolscript.execution.sandbox import DEFAULT_LIMITS, _command, _rewriter
from toolscript.execution.source import prepare
from toolscript.mcpface.backend import Backend
from toolscript.pipeline.tasks.packages import (
    _cache_open,
    _digest,
    fetch_command,
    fetch_config,
    lock_as_built,
)
from toolscript.plumbing.denobinary import deno_cache_dir, run_deno_dir
from toolscript.store.packages import (
    NPM_SETS,
    PACKAGES_MARKER,
    Package,
    Packages,
    import_entries,
    offered,
    package_name,
    packages_beside,
    packages_section,
    set_read_only,
)
from toolscript.store.savedscripts import write_module

LOCK = {
    "version": "5",
    "specifiers": {"npm:csv-parse@5": "5.6.0"},
    "npm": {"csv-parse@5.6.0": {"integrity": "sha512-abc"}},
}
PACKAGES = [Package("npm:csv-parse@^5", "5.6.0"), Package("npm:@scope/thing@1.2.3", "1.2.3")]


def config_error(tmp_path: Path, packages: object) -> str:
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps({"packages": packages}, indent=1))
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    return info.value.message + "\n" + (info.value.hint or "")


def test_packages_are_read_from_the_config(tmp_path: Path) -> None:
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps({"packages": ["npm:csv-parse@^5", "npm:@scope/thing@1"]}))
    assert load_config(path, environ={}).packages == ("npm:csv-parse@^5", "npm:@scope/thing@1")
    path.write_text("{}")
    assert load_config(path, environ={}).packages == ()


def test_a_package_without_a_version_range_is_refused_with_an_example(tmp_path: Path) -> None:
    message = config_error(tmp_path, ["csv-parse"])
    assert ":3:" in message and "packages[0]" in message
    assert '"npm:csv-parse@^5"' in message


def test_one_package_declared_twice_is_refused(tmp_path: Path) -> None:
    message = config_error(tmp_path, ["npm:csv-parse@^5", "npm:csv-parse@^4"])
    assert "packages[1]" in message and "declares again" in message


def test_jsr_packages_are_refused_for_now(tmp_path: Path) -> None:
    message = config_error(tmp_path, ["jsr:@std/path@^1"])
    assert "jsr: packages are not offered yet" in message and "npm:" in message


def test_names_and_import_map_entries() -> None:
    assert package_name("npm:csv-parse@^5") == "csv-parse"
    assert package_name("npm:@scope/thing@1.2.3") == "@scope/thing"
    assert import_entries(PACKAGES) == {
        "csv-parse": "npm:csv-parse@^5",
        "csv-parse/": "npm:/csv-parse@^5/",
        "@scope/thing": "npm:@scope/thing@1.2.3",
        "@scope/thing/": "npm:/@scope/thing@1.2.3/",
    }


def test_a_module_copy_gets_its_lock_beside_it(tmp_path: Path) -> None:
    text = "export const tools = {};\n" + packages_section(PACKAGES, json.dumps(LOCK))
    module = write_module(tmp_path / "abc.ts", text, {})
    found = packages_beside(module)
    assert found is not None
    assert found.packages == tuple(PACKAGES)
    assert json.loads(found.lock.read_text()) == LOCK
    assert offered(text)[0] == {
        "name": "csv-parse",
        "specifier": "npm:csv-parse@^5",
        "version": "5.6.0",
    }


def test_a_module_without_packages_has_nothing_beside_it(tmp_path: Path) -> None:
    assert packages_section([], "") == ""
    module = write_module(tmp_path / "abc.ts", "export const tools = {};\n", {})
    assert packages_beside(module) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc.ts"]
    assert offered("export const tools = {};\n") == []


def test_without_packages_the_sandbox_command_is_as_before(tmp_path: Path) -> None:
    command = _command(
        tmp_path / "s.ts", "http://127.0.0.1:9", tmp_path / "m.json", True, DEFAULT_LIMITS
    )
    assert command[2:8] == ["--quiet", "--no-prompt", "--no-config", "--no-lock", "--no-npm",
                            "--allow-import=127.0.0.1:9"]  # fmt: skip
    assert not any(flag.startswith(("--lock=", "--frozen", "--cached-only")) for flag in command)


def test_with_packages_npm_comes_only_through_the_frozen_lock(tmp_path: Path) -> None:
    packages = Packages(tuple(PACKAGES), tmp_path / "m.lock")
    command = _command(
        tmp_path / "s.ts",
        "http://127.0.0.1:9",
        tmp_path / "m.json",
        True,
        DEFAULT_LIMITS,
        packages=packages,
    )
    assert f"--lock={tmp_path / 'm.lock'}" in command
    assert "--frozen" in command and "--cached-only" in command
    assert "--no-npm" not in command and "--no-lock" not in command
    # Lifecycle scripts run only with --allow-scripts; nothing may read or write beyond before.
    assert not any(
        flag.startswith(("--allow-scripts", "--allow-read", "--allow-write", "--allow-all"))
        for flag in command
    )
    assert not any(flag.startswith("--node-modules-dir") for flag in command)


def test_a_run_links_the_package_cache_only_with_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))
    with run_deno_dir() as plain:
        assert not (plain / "npm").exists() and not (plain / "npm").is_symlink()
    with run_deno_dir(packages=True) as with_packages:
        assert (with_packages / "npm").is_symlink()


def test_read_only_and_back(tmp_path: Path) -> None:
    root = tmp_path / "npm"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "index.js").write_text("1")
    set_read_only(root, True)
    for path in (root, root / "pkg", root / "pkg" / "index.js"):
        assert path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) == 0
    if os.geteuid() != 0:  # root writes whatever the mode says
        with pytest.raises(PermissionError):
            (root / "pkg" / "new.js").write_text("1")
    set_read_only(root, False)
    (root / "pkg" / "new.js").write_text("1")


def test_scripts_importing_packages_get_the_module() -> None:
    assert uses_gateway('import { parse } from "csv-parse/sync";')
    assert uses_gateway('const m = await import("npm:left-pad@1");')
    assert uses_gateway('import x from "@scope/thing";')
    assert not uses_gateway('import fs from "node:fs"; console.log(1);')
    assert not uses_gateway('import x from "./local.ts";')
    assert not uses_gateway("console.log(1);")


def rewritten(lines: list[str], module: Path | None = None) -> str:
    script = Path("/cache/scripts/abc/inline.ts")
    rewrite = _rewriter(script, "<inline>.ts", "http://127.0.0.1:9", module, prepare("1").map)
    return "".join(rewrite(line.encode()).decode() for line in lines)


def test_an_undeclared_package_says_how_to_declare_it(tmp_path: Path) -> None:
    text = "export const tools = {};\n" + packages_section(PACKAGES, json.dumps(LOCK))
    module = write_module(tmp_path / "abc.ts", text, {})
    shown = rewritten(
        [
            "error: The lockfile is out of date. Run `deno install --frozen=false`, or rerun with `--frozen=false` to update it.\n",
            "changes:\n",
            ' 5 | +    "npm:left-pad@1": "1.3.0"\n',
            "   | ...\n",
            '14 | +    "left-pad@1.3.0": {\n',
            "    at file:///cache/scripts/abc/inline.ts:1:16\n",
        ],
        module,
    )
    assert "scripts import only the packages the project declares" in shown
    assert '"packages": ["npm:csv-parse@^5"]' in shown
    assert "offers csv-parse, @scope/thing" in shown
    assert "not declared: npm:left-pad@1" in shown
    assert "frozen=false" not in shown and "left-pad@1.3.0" not in shown
    assert "at <inline>.ts:" in shown


def test_npm_in_a_project_without_packages_says_how_to_declare_it() -> None:
    shown = rewritten(
        [
            "error: npm specifiers were requested; but --no-npm is specified\n",
            'error: Import "left-pad" not a dependency\n',
            "  hint: If you want to use the npm package, try running `deno add npm:left-pad`\n",
        ]
    )
    assert "--no-npm" not in shown and "deno add" not in shown
    assert shown.count("declare it in .toolscript.json") == 2
    assert "it offers none yet" in shown


def test_get_types_lists_the_packages() -> None:
    answer = {"declarations": "declare const x: 1;", "examples": [], "tools": []}
    assert "Packages" not in render_markdown(answer)
    answer["packages"] = [
        {"name": "csv-parse", "specifier": "npm:csv-parse@^5", "version": "5.6.0"}
    ]
    shown = render_markdown(answer)
    assert "csv-parse (npm:csv-parse@^5, 5.6.0)" in shown
    assert shown.index("csv-parse") < shown.index("```\n")  # in the declarations block


def test_the_marker_line_is_one_line() -> None:
    section = packages_section(PACKAGES, json.dumps(LOCK))
    marker_lines = [line for line in section.split("\n") if line.startswith(PACKAGES_MARKER)]
    assert len(marker_lines) == 1


def test_the_fetch_runs_no_lifecycle_script_and_makes_no_node_modules(tmp_path: Path) -> None:
    config = fetch_config(["npm:csv-parse@^5"], tmp_path / ".toolscript.lock")
    assert config["nodeModulesDir"] == "none"
    assert config["imports"] == {"csv-parse": "npm:csv-parse@^5"}
    assert config["lock"] == {"path": str(tmp_path / ".toolscript.lock")}
    assert not any("scripts" in part or "node-modules" in part for part in fetch_command())


def test_the_mcp_faces_get_types_names_the_packages() -> None:
    answers = {
        "declarations": "declare const x: 1;",
        "examples": [],
        "packages": [{"name": "csv-parse", "specifier": "npm:csv-parse@^5", "version": "5.6.0"}],
    }

    async def get(path: str, params: dict[str, object] | None = None) -> object:
        return answers

    backend = object.__new__(Backend)
    backend._get = get  # type: ignore[method-assign]
    text = anyio.run(backend.get_types, ["fx"]).text
    assert text.startswith("declare const x: 1;")
    assert "Packages this project offers" in text and "csv-parse (npm:csv-parse@^5, 5.6.0)" in text


def test_the_session_status_line_names_the_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.cli import client, hooks

    health = {
        "servers": {"fx": {"state": "connected", "error": None}},
        "tools": 3,
        "packages": {"offered": ["npm:csv-parse@^5", "npm:date-fns@^4"], "error": None},
    }
    monkeypatch.setattr(client.GatewayClient, "get_json", lambda self, path: health)
    line = hooks._status_line("http://127.0.0.1:9", tmp_path)
    assert "Scripts may import these packages: npm:csv-parse@^5, npm:date-fns@^4." in line
    health["packages"] = {"offered": [], "error": "packages: deno could not fetch ..."}
    line = hooks._status_line("http://127.0.0.1:9", tmp_path)
    assert "could not be fetched: packages: deno could not fetch" in line
    del health["packages"]
    assert "packages" not in hooks._status_line("http://127.0.0.1:9", tmp_path)


def test_a_locked_package_gone_from_the_cache_says_what_to_do(tmp_path: Path) -> None:
    text = "export const tools = {};\n" + packages_section(PACKAGES, json.dumps(LOCK))
    module = write_module(tmp_path / "abc.ts", text, {})
    shown = rewritten(
        [
            "error: Failed caching npm package 'csv-parse@5.6.0'\n",
            '    0: npm package not found in cache: "csv-parse", --cached-only is specified.\n',
        ],
        module,
    )
    assert "csv-parse@5.6.0 is locked but gone from toolscript's package cache" in shown
    assert "restart the gateway" in shown and "--cached-only" not in shown


def _package(root: Path, name: str) -> Path:
    folder = root / "npm" / "registry.npmjs.org" / name / "1.0.0"
    folder.mkdir(parents=True)
    (folder / "index.js").write_text("module.exports = 1;\n")
    return folder


def test_a_cache_fetched_before_locks_were_checked_is_fetched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A cache an older toolscript filled may hold one package's code under another's name
    (a cloned lock's foreign tarball): its packages and the sets linked from them go, once,
    and the fetch task is due for a project whose packages were cached."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))
    cache = deno_cache_dir()
    poisoned = _package(cache, "left-pad")
    (cache / NPM_SETS / "abc" / "registry.npmjs.org").mkdir(parents=True)
    set_read_only(cache / "npm", True)
    lock = tmp_path / ".toolscript.lock"
    lock.write_text("{}")
    values = {"lock": [str(lock), _digest(lock)], "cached": [str(poisoned)]}
    assert not lock_as_built(None, values)
    assert lock_as_built(None, {**values, "cached": []})  # no packages: nothing to fetch

    with _cache_open():
        assert not poisoned.exists() and not (cache / NPM_SETS).exists()
        fetched = _package(cache, "left-pad")
    assert "fetching every package again" in caplog.text
    assert not any("unchecked" in p.name for p in cache.iterdir())
    assert lock_as_built(None, {**values, "cached": [str(fetched)]})

    caplog.clear()
    with _cache_open():  # checked once: what is fetched since stays
        assert fetched.is_dir()
    assert "fetching every package again" not in caplog.text
