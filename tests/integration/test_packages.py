"""Declared npm packages for real: a gateway whose pipeline has Deno fetch and lock real
packages from the npm registry (registry.npmjs.org, reached by this machine), then exec runs
scripts that import them offline in the sandbox, and every way around it is refused: an
undeclared npm:, bare or https: import (also computed at run time, also a dependency that
sits in the cache), a package that reads files or env or reaches the network, a write into
the package cache. The warm checker checks scripts against the packages' own types."""

from __future__ import annotations

import io
import json
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import helpers
from tests.helpers import GatewayProcess, clean_env, fixture_server
from toolscript.config import Config
from toolscript.execution.sandbox import Script, run_toolscript
from toolscript.pipeline.artifacts import Artifacts, CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline
from toolscript.store.packages import set_read_only
from toolscript.store.savedscripts import write_module

PACKAGES = [
    "npm:csv-parse@^5",
    "npm:date-fns@^4",
    "npm:jsonfile@^6",  # reads files (and, through graceful-fs, env)
    "npm:dotenv@^16",  # reads env and files
    "npm:ky@^1",  # fetches
]
CONFIG = {
    "mcpServers": {"fx": fixture_server()},
    "packages": PACKAGES,
    "types": {"inferResults": False},
}
HOW_TO_DECLARE = 'declare it in .toolscript.json, e.g. "packages": ["npm:csv-parse@^5"]'


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("packages-home")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("packages-project")
    started = GatewayProcess(CONFIG, directory, env={"TOOLSCRIPT_HOME": str(home)})
    try:
        helpers.wait_until(
            lambda: started.client.get("runtime/tools.ts").text,
            lambda module: "toolscript-packages:" in module,
            180,
            "the module with the packages",
            log=lambda: started.log,
        )
        helpers.wait_until(
            lambda: started.health()["checker"]["state"], lambda s: s == "ready", 120, "checker"
        )
        yield started
    finally:
        started.stop()


def run(
    gateway: GatewayProcess, home: Path, code: str, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", *args, code],
        cwd=gateway.directory,
        env=clean_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_GATEWAY_URL=gateway.url),
        capture_output=True,
        text=True,
        timeout=180,
    )


def checks(gateway: GatewayProcess) -> int:
    return int(gateway.health()["checker"]["checks"])


def test_declared_packages_run_offline_by_name_and_by_specifier(
    gateway: GatewayProcess, home: Path
) -> None:
    before = checks(gateway)
    done = run(
        gateway,
        home,
        'import { parse } from "csv-parse/sync";\n'
        'import { format } from "npm:date-fns@^4";\n'
        'return { rows: parse("a,b\\n1,2\\n"), year: format(new Date(0), "yyyy") };\n',
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"rows": [["a", "b"], ["1", "2"]], "year": "1970"}
    assert checks(gateway) == before + 1, "the warm checker did not check it"


def test_the_lock_beside_the_config_holds_exact_versions_and_integrity(
    gateway: GatewayProcess,
) -> None:
    lock = json.loads((gateway.directory / ".toolscript.lock").read_text())
    assert set(lock["specifiers"]) == {"npm:csv-parse@5", "npm:date-fns@4", "npm:jsonfile@6",
                                       "npm:dotenv@16", "npm:ky@1"}  # fmt: skip
    assert all(entry["integrity"].startswith("sha512-") for entry in lock["npm"].values())
    assert not (gateway.directory / "node_modules").exists()
    assert not (gateway.directory / ".toolscript" / "packages" / "node_modules").exists()


def test_the_warm_checker_checks_against_the_packages_types(
    gateway: GatewayProcess, home: Path
) -> None:
    before = checks(gateway)
    done = run(
        gateway,
        home,
        'import { format } from "date-fns";\nconst year: number = format(new Date(0), "yyyy");\n',
    )
    assert done.returncode == 1
    assert "TS2322" in done.stderr and "'string' is not assignable to type 'number'" in done.stderr
    assert checks(gateway) == before + 1


@pytest.mark.parametrize(
    "code",
    [
        'import leftPad from "npm:left-pad@1";\nreturn leftPad("a", 3);',
        'import leftPad from "left-pad";\nreturn leftPad("a", 3);',
        'const m = await import("npm:" + "left-pad@1");\nreturn m.default("a", 3);',
        # A dependency of a declared package sits in the cache, but is not in the lock's
        # specifiers: as undeclared as any other.
        'import u from "npm:universalify@2";\nreturn typeof u;',
        'const m = await import("npm:" + "universalify@2");\nreturn typeof m;',
    ],
)
def test_an_undeclared_package_is_refused_and_says_how_to_declare_it(
    gateway: GatewayProcess, home: Path, code: str
) -> None:
    done = run(gateway, home, code, "--no-check")
    assert done.returncode == 1, done.stdout
    assert HOW_TO_DECLARE in done.stderr, done.stderr
    assert "this project offers csv-parse, date-fns, jsonfile, dotenv, ky" in done.stderr
    assert "deno add" not in done.stderr and "frozen=false" not in done.stderr


def test_remote_and_jsr_imports_stay_refused(gateway: GatewayProcess, home: Path) -> None:
    for code in (
        'import x from "https://esm.sh/left-pad@1";\nreturn x;',
        'const m = await import("jsr:" + "@std/path@1");\nreturn typeof m;',
        'const m = await import("https://registry.npmjs.org/" + "left-pad");\nreturn 1;',
    ):
        done = run(gateway, home, code, "--no-check")
        assert done.returncode == 1, (code, done.stdout)
        assert done.stdout == ""


@pytest.mark.parametrize(
    ("code", "refusal"),
    [
        (
            'import jsonfile from "jsonfile";\nreturn jsonfile.readFileSync("/etc/hostname");',
            "scripts cannot read files",
        ),
        (
            'import dotenv from "dotenv";\nreturn dotenv.config({ path: "/etc/hostname" });',
            "scripts cannot see environment variables",
        ),
        (
            'import ky from "ky";\nreturn await ky.get("https://example.com").text();',
            "scripts reach only the gateway",
        ),
    ],
)
def test_a_package_is_refused_files_env_and_network_like_any_script(
    gateway: GatewayProcess, home: Path, code: str, refusal: str
) -> None:
    done = run(gateway, home, code, "--no-check")
    assert done.returncode == 1, done.stdout
    assert "NotCapable" in done.stderr and refusal in done.stderr, done.stderr


def test_the_package_cache_cannot_be_written(gateway: GatewayProcess, home: Path) -> None:
    package = home / "deno" / "npm" / "registry.npmjs.org" / "csv-parse"
    (version,) = [p for p in package.iterdir() if p.is_dir()]
    target = version / "lib" / "index.js"
    done = run(
        gateway,
        home,
        f'import "csv-parse";\nawait Deno.writeTextFile({json.dumps(str(target))}, "x");\n',
        "--no-check",
    )
    assert done.returncode == 1 and "scripts cannot write files" in done.stderr, done.stderr
    # Not the script, and not Deno itself: no file or folder of the cache is writable.
    for path in [package, version, target, *version.rglob("*")]:
        mode = path.lstat().st_mode
        assert stat.S_ISLNK(mode) or mode & 0o222 == 0, path
    assert target.read_text() != "x"


def test_get_types_names_the_packages(gateway: GatewayProcess) -> None:
    answer: dict[str, Any] = gateway.client.get("types", params={"server": "fx"}).json()
    names = [package["name"] for package in answer["packages"]]
    assert names == ["csv-parse", "date-fns", "jsonfile", "dotenv", "ky"]
    assert all(package["version"] for package in answer["packages"])
    assert gateway.health()["packages"] == {"offered": PACKAGES, "error": None}


def test_the_packages_task_locks_once_and_fetches_again_what_the_cache_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    declared = Config(project / ".toolscript.json", project, packages=("npm:left-pad@^1",))
    layout = CacheLayout(project / ".toolscript")

    first = run_pipeline(declared, layout, SnapshotSource({}))
    assert "packages" in first.executed and not first.failures, first.failures
    lock = json.loads((project / ".toolscript.lock").read_text())
    assert lock["specifiers"] == {"npm:left-pad@1": "1.3.0"}
    assert "toolscript-packages:" in layout.module.read_text()
    assert run_pipeline(declared, layout, SnapshotSource({})).executed == []

    cached = tmp_path / "home" / "deno" / "npm" / "registry.npmjs.org" / "left-pad"
    set_read_only(cached, False)
    shutil.rmtree(cached)
    assert run_pipeline(declared, layout, SnapshotSource({})).executed == ["packages"]
    assert (cached / "1.3.0" / "package.json").stat().st_mode & 0o222 == 0

    without = run_pipeline(
        Config(project / ".toolscript.json", project), layout, SnapshotSource({})
    )
    assert "packages" in without.executed
    assert "toolscript-packages:" not in layout.module.read_text()


def test_the_projects_node_modules_are_not_a_way_in(gateway: GatewayProcess, home: Path) -> None:
    package = gateway.directory / "node_modules" / "left-pad"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"name": "left-pad", "version": "1.3.0"}')
    (package / "index.js").write_text('module.exports = () => "from node_modules";\n')
    (gateway.directory / "package.json").write_text('{"dependencies": {"left-pad": "1"}}')
    try:
        done = run(
            gateway, home, 'import leftPad from "left-pad";\nreturn leftPad();', "--no-check"
        )
    finally:
        shutil.rmtree(gateway.directory / "node_modules")
        (gateway.directory / "package.json").unlink()
    assert done.returncode == 1 and "from node_modules" not in done.stdout
    assert HOW_TO_DECLARE in done.stderr, done.stderr


def test_an_undeclared_package_fails_the_type_check_too(
    gateway: GatewayProcess, home: Path
) -> None:
    done = run(gateway, home, 'import leftPad from "npm:left-pad@1";\nreturn leftPad("a", 3);')
    assert done.returncode == 1 and done.stdout == ""
    assert HOW_TO_DECLARE in done.stderr, done.stderr
    # Neither the checker nor the sandbox went to the registry for it.
    assert not (home / "deno" / "npm" / "registry.npmjs.org" / "left-pad").exists()


def test_a_package_that_cannot_be_fetched_leaves_the_tools_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    missing = "npm:toolscript-no-such-package-7f3a9c@^1"
    config = Config(tmp_path / ".toolscript.json", tmp_path, packages=(missing,))
    layout = CacheLayout(tmp_path / ".toolscript")
    first = run_pipeline(config, layout, SnapshotSource({}))
    assert not first.failures and "scripts" in first.executed, first
    assert "toolscript-packages:" not in layout.module.read_text()
    error = Artifacts.load(layout, []).packages_error
    assert error is not None and "toolscript-no-such-package-7f3a9c" in error
    assert "packages" in run_pipeline(config, layout, SnapshotSource({})).executed  # tried again


def test_packages_declared_while_the_gateway_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config: dict[str, Any] = {"mcpServers": {"fx": fixture_server()}}
    (tmp_path / "project").mkdir()
    gateway = GatewayProcess(config, tmp_path / "project", env={"TOOLSCRIPT_HOME": str(home)})
    try:
        gateway.config_path.write_text(json.dumps({**config, "packages": ["npm:left-pad@^1"]}))
        helpers.wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda module: "toolscript-packages:" in module,
            180,
            "the module with left-pad",
            log=lambda: gateway.log,
        )
        done = run(gateway, home, 'import leftPad from "left-pad";\nreturn leftPad("a", 3);')
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == "  a"
    finally:
        gateway.stop()


def test_a_package_importing_a_local_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script's literal import of a local file loads before any permission check (the
    import map closes that); a package's is checked: a tampered package reads nothing."""
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    config = Config(tmp_path / ".toolscript.json", tmp_path, packages=("npm:csv-parse@^5",))
    layout = CacheLayout(tmp_path / ".toolscript")
    assert not run_pipeline(config, layout, SnapshotSource({})).failures
    module = write_module(tmp_path / "copy" / "m.ts", layout.module.read_text(), {})
    package = tmp_path / "home" / "deno" / "npm" / "registry.npmjs.org" / "csv-parse"
    (version,) = [path for path in package.iterdir() if path.is_dir()]
    entry = version / "lib" / "sync.js"
    set_read_only(version, False)
    secret = tmp_path / "secret.txt"
    secret.write_text("the user's secret")
    entry.write_text(
        f"import leaked from {json.dumps(str(secret))} with {{ type: 'text' }};\n"
        'console.log("LEAKED", leaked);\n' + entry.read_text()
    )
    set_read_only(version, True)
    out, err = io.BytesIO(), io.BytesIO()
    code = run_toolscript(
        Script('import { parse } from "csv-parse/sync";\nconsole.log(parse("a\\n1"));', "t.ts"),
        "http://127.0.0.1:9",
        "test",
        module=module,
        check=False,
        stdout=out,
        stderr=err,
    )
    assert code == 1 and b"secret" not in out.getvalue(), out.getvalue()
    assert b"scripts cannot read files" in err.getvalue(), err.getvalue()
