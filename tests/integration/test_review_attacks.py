"""Attacks on the day's changes (the lean check libs, remembered passes, the face's gateway in
its process) that worked, each kept as the test that failed before its fix."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    GatewayProcess,
    clean_env,
    fixture_server,
    gateway_with_warm_checker,
    python_bin,
    toolscript_cli,
)

CONFIG = {"mcpServers": {"fx": fixture_server()}, "types": {"inferResults": False}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("attacks-home")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[GatewayProcess]:
    with gateway_with_warm_checker(CONFIG, tmp_path_factory.mktemp("attacks"), home) as started:
        yield started


def run(
    gateway: GatewayProcess, home: Path, cwd: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], int]:
    """``toolscript exec args`` through ``gateway``, and how many checks its checker answered."""
    before = gateway.checker()["checks"]
    env = {"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
    done = toolscript_cli("exec", *args, cwd=cwd, env=env, timeout=180)
    return done, gateway.checker()["checks"] - before


def test_a_script_left_in_the_checker_lends_no_types_to_the_next(
    gateway: GatewayProcess, home: Path, tmp_path: Path
) -> None:
    """A .mts script naming Node's lib (which `uses_node` does not see: no `node:`, no Node
    global) stayed open in the warm checker's .mts slot; the next .ts script, checked in its
    own slot, had Node's types from it and passed where deno check refuses it. The pass was
    remembered, and every later run of it skipped the check."""
    tag = time.time_ns()
    planter = tmp_path / "planter.mts"
    planter.write_text(f'/// <reference lib="node" />\nconsole.log("planted {tag}");\n')
    planted, answered = run(gateway, home, tmp_path, "--file", str(planter))
    assert (planted.returncode, planted.stdout) == (0, f"planted {tag}\n"), planted.stderr
    assert answered == 1, "the warm checker did not answer"

    victim = f"const loader: unknown = require; // {tag}\nconsole.log(typeof loader);\n"
    first, answered = run(gateway, home, tmp_path, victim)
    assert answered == 1, "the warm checker did not answer"
    assert first.returncode == 1, first.stderr
    assert "TS2591 [ERROR]: Cannot find name 'require'." in first.stderr, first.stderr
    # and it is not taken for checked the next time
    again, _ = run(gateway, home, tmp_path, victim)
    assert "Cannot find name 'require'" in again.stderr, again.stderr


# A cloned repository's Python files, named as toolscript's own package and as a module of the
# standard library: importing either leaves a line in the marker file.
PLANTED = 'open({marker!r}, "a").write("imported {name}\\n")\n'


def planted_project(directory: Path, marker: Path) -> Path:
    """A project whose config names nothing to run (trusted: a person read it), beside a
    `toolscript/` package and a `json.py` of the repository's."""
    directory.mkdir(exist_ok=True)
    (directory / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    package = directory / "toolscript"
    package.mkdir()
    for name in ("__init__.py", "__main__.py"):
        (package / name).write_text(PLANTED.format(marker=str(marker), name="toolscript"))
    (directory / "json.py").write_text(PLANTED.format(marker=str(marker), name="json"))
    return directory


def installed_cli(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """The `toolscript` command as installed (its console script), as a user runs it."""
    return subprocess.run(
        [python_bin("toolscript"), *args],
        cwd=cwd,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_exec_in_a_cloned_repository_imports_none_of_its_python(tmp_path: Path, home: Path) -> None:
    """`toolscript exec` started its ephemeral gateway as `python -m toolscript` in the
    current folder, which Python puts first on the module path: a repository's
    `toolscript/` ran outside the sandbox, its config trusted but naming nothing to run."""
    marker = tmp_path / "marker"
    project = planted_project(tmp_path / "repo", marker)
    code = 'import { tools } from "toolscript";\nconsole.log(typeof tools);\n'
    done = installed_cli("exec", code, cwd=project, env={"TOOLSCRIPT_HOME": str(home)})
    assert not marker.exists(), marker.read_text()
    assert (done.returncode, done.stdout) == (0, "object\n"), done.stderr


def test_a_gateway_and_its_background_runner_import_none_of_the_projects_python(
    tmp_path: Path, home: Path
) -> None:
    """`gateway start` (as the plugin's hook starts it) and a background run's runner, whose
    folder is the project's, were `python -m` processes in that folder."""
    marker = tmp_path / "marker"
    project = planted_project(tmp_path / "repo", marker)
    gateway = GatewayProcess({"mcpServers": {}}, project, env={"TOOLSCRIPT_HOME": str(home)})
    try:
        env = {"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_GATEWAY_URL": gateway.url}
        started = installed_cli("exec", "--background", "--json", "return 7;", cwd=project, env=env)
        assert started.returncode == 0, started.stderr
        run_id = json.loads(started.stdout)["run"]
        waited = installed_cli("runs", "wait", run_id, cwd=project, env=env)
        assert waited.returncode == 0, waited.stderr
    finally:
        gateway.stop()
    assert not marker.exists(), marker.read_text()


def test_a_linked_check_folder_in_the_cache_is_not_written_through(
    tmp_path: Path, home: Path
) -> None:
    """The saved scripts' check folder of a cloned repository's `.toolscript/`, a link to a
    folder elsewhere: the module, the import map and the scripts were written there."""
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    (victim / "kept.txt").write_text("kept\n")
    project = tmp_path / "repo"
    (project / ".toolscript").mkdir(parents=True)
    (project / ".toolscript" / "saved-check").symlink_to(victim)
    (project / "toolscripts").mkdir()
    (project / "toolscripts" / "hello.ts").write_text(
        "/** Says hello. */\n"
        "export default async function hello(args: { name: string }): Promise<string> {\n"
        "  return `hello ${args.name}`;\n}\n"
    )
    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    gateway = GatewayProcess(
        config, project, "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(home)}
    )
    try:
        scripts = gateway.client.get("runtime/scripts.json").json()
    finally:
        gateway.stop()
    assert sorted(p.name for p in victim.iterdir()) == ["kept.txt"]
    assert "hello" in json.dumps(scripts)  # it was checked, in a folder of its own
