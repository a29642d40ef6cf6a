"""The gateway's warm type checker (`deno lsp`) against real Deno, real servers, real exec.

Its answers are compared with the slow path's: the same script run through an ephemeral
gateway, which keeps no checker, so Deno checks it as it starts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests import helpers
from tests.helpers import (
    GatewayProcess,
    argv,
    clean_env,
    fixture_server,
    python_bin,
    toolscript_cli,
)

CONFIG = {
    "mcpServers": {"time": {"command": python_bin("mcp-server-time")}, "fx": fixture_server()},
    # Types learned from results would change the module between these tests' checks.
    "types": {"inferResults": False},
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warm-home")


def start(config: dict[str, Any], directory: Path, home: Path) -> GatewayProcess:
    directory.mkdir(parents=True, exist_ok=True)
    gateway = GatewayProcess(config, directory, env={"TOOLSCRIPT_HOME": str(home)})
    wait_until(lambda: checker(gateway)["state"] == "ready", "the checker never got ready")
    return gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[GatewayProcess]:
    started = start(CONFIG, tmp_path_factory.mktemp("warm"), home)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def cold_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same servers in a project with no gateway running: exec starts an ephemeral one."""
    directory = tmp_path_factory.mktemp("cold")
    (directory / ".toolscript.json").write_text(json.dumps(CONFIG))
    return directory


def wait_until(condition: Any, message: str, timeout: float = 120) -> None:
    helpers.wait_until(condition, bool, timeout, message)


def checker(gateway: GatewayProcess) -> dict[str, Any]:
    return dict(gateway.client.get("health").json()["checker"])


def language_servers(gateway: GatewayProcess) -> list[psutil.Process]:
    found = []
    for process in gateway.descendants():
        try:
            if "lsp" in argv(process):
                found.append(process)
        except psutil.Error:
            continue
    return found


def exec_env(home: Path, gateway: GatewayProcess | None) -> dict[str, str]:
    env = {"TOOLSCRIPT_HOME": str(home)}
    if gateway is not None:
        env["TOOLSCRIPT_GATEWAY_URL"] = gateway.url
    return env


def exec_process(
    code: str, *, home: Path, cwd: Path, gateway: GatewayProcess
) -> subprocess.Popen[bytes]:
    """An exec running in the background (toolscript_cli's command and environment)."""
    return subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", code],
        env=clean_env(**exec_env(home, gateway)),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def run_exec(
    *args: str,
    home: Path,
    cwd: Path,
    gateway: GatewayProcess | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    return toolscript_cli(
        "exec", *args, cwd=cwd, env=exec_env(home, gateway), stdin=stdin, timeout=180
    )


WRAPPED = 'import { tools } from "toolscript";\nconst n: number = "x";\nawait tools.time.nope();\nreturn n;'
ONE_LINE = 'import { tools } from "toolscript"; const n: number = "x"; return n'
INTO_THE_MODULE = (
    'import { tools } from "toolscript";\nawait tools.time.getCurrentTime({ timezone: 42 });\n'
)
CHAINED = 'import { tools } from "toolscript";\nexport const t: { a: string } = await tools.fx.nothing();\nconsole.log("ran");\n'


@pytest.mark.parametrize(
    ("how", "code", "places"),
    [
        ("inline", WRAPPED, ["<inline>.ts:2:7", "<inline>.ts:3:18", "type 'TimeTools'"]),
        ("inline", ONE_LINE, [f"{ONE_LINE}\n", "<inline>.ts:1:43"]),
        (
            "inline",
            'import { nope } from "toolscript";\nreturn nope;',
            ["has no exported member 'nope'", "<inline>.ts:1:10"],
        ),
        ("stdin", INTO_THE_MODULE, ["<stdin>.ts:2:35", "at toolscript:"]),
        ("file", CHAINED, ["job.ts:2:14", "\n  Type 'null' is not assignable"]),
    ],
)
def test_type_errors_read_as_deno_checks_and_nothing_runs(
    gateway: GatewayProcess,
    home: Path,
    cold_project: Path,
    tmp_path: Path,
    how: str,
    code: str,
    places: list[str],
) -> None:
    args: list[str] = [code]
    stdin = None
    if how == "stdin":
        args, stdin = ["-"], code
    elif how == "file":
        (tmp_path / "job.ts").write_text(code)
        (cold_project / "job.ts").write_text(code)
        args = ["job.ts"]
    before = checker(gateway)["checks"]
    warm = run_exec(*args, home=home, cwd=tmp_path, gateway=gateway, stdin=stdin)
    assert checker(gateway)["checks"] == before + 1, "the warm checker did not answer"
    assert warm.returncode == 1
    assert warm.stdout == ""  # nothing of the script ran
    for place in places:
        assert place in warm.stderr, warm.stderr
    assert "__toolscriptCheck" not in warm.stderr and "slot.ts" not in warm.stderr
    cold = run_exec(*args, home=home, cwd=cold_project, stdin=stdin)
    assert (cold.returncode, cold.stdout) == (1, "")
    assert warm.stderr == cold.stderr


def test_a_file_beside_the_checkers_scripts_is_not_part_of_their_check(tmp_path: Path) -> None:
    """``deno check`` sees the script and what it imports: a stray `.ts` in the checker's
    folder (declaring a global) is no part of a script's check."""
    home = tmp_path / "home"
    where = "from toolscript.plumbing.paths import user_cache_dir; print(user_cache_dir())"
    cache = subprocess.run(
        [sys.executable, "-c", where],
        env=clean_env(TOOLSCRIPT_HOME=str(home)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    stray = Path(cache) / "checker" / "stray.ts"
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_text("declare global {\n  var strayGlobal: number;\n}\nexport {};\n")
    gateway = start({"mcpServers": {"fx": fixture_server()}}, tmp_path / "project", home)
    try:
        before = checker(gateway)["checks"]
        found = run_exec("return strayGlobal;", home=home, cwd=tmp_path, gateway=gateway)
        assert checker(gateway)["checks"] == before + 1, "the warm checker did not answer"
        assert found.returncode == 1 and found.stdout == ""
        assert "TS2304 [ERROR]: Cannot find name 'strayGlobal'." in found.stderr, found.stderr
    finally:
        assert gateway.stop() == []


def test_a_checked_script_runs_and_is_not_checked_again(
    gateway: GatewayProcess, home: Path, tmp_path: Path
) -> None:
    code = f'import {{ tools }} from "toolscript";\n// {time.time_ns()}\nreturn await tools.fx.plainText({{ text: "hi" }});'
    before = checker(gateway)["checks"]
    first = run_exec(code, home=home, cwd=tmp_path, gateway=gateway)
    assert (first.returncode, first.stdout, first.stderr) == (0, '"hi"\n', "")
    assert checker(gateway)["checks"] == before + 1
    again = run_exec(code, home=home, cwd=tmp_path, gateway=gateway)
    assert (again.returncode, again.stdout) == (0, '"hi"\n')
    assert checker(gateway)["checks"] == before + 1  # remembered: no second check


def test_two_execs_check_at_once(gateway: GatewayProcess, home: Path, tmp_path: Path) -> None:
    nonce = time.time_ns()
    scripts = [
        f'import {{ tools }} from "toolscript"; // {nonce}\nconst x: string = 1;',
        f'import {{ tools }} from "toolscript"; // {nonce}\nreturn (await tools.fx.structured({{ city: "Oslo" }})).city;',
    ] * 2
    before = checker(gateway)["checks"]
    running = [
        exec_process(code + f" // {index}", home=home, cwd=tmp_path, gateway=gateway)
        for index, code in enumerate(scripts)
    ]
    results = [(p.wait(120), *p.communicate()) for p in running]
    for code, (status, out, err) in zip(scripts, results, strict=True):
        if "const x: string = 1" in code:
            assert status == 1 and out == b"", err
            assert b"TS2322 [ERROR]: Type 'number' is not assignable to type 'string'." in err
            assert b"<inline>.ts:2:7" in err
        else:
            assert (status, out) == (0, b'"Oslo"\n'), err
    assert checker(gateway)["checks"] >= before + 3  # one may have waited too long: deno check


def test_a_module_change_is_seen_by_the_next_check(home: Path, tmp_path: Path) -> None:
    config = {"mcpServers": {"time": CONFIG["mcpServers"]["time"]}}
    gateway = start(config, tmp_path / "project", home)
    try:
        code = 'import { tools } from "toolscript";\nreturn await tools.fx.plainText();'
        missing = run_exec(code, home=home, cwd=tmp_path, gateway=gateway)
        assert missing.returncode == 1
        assert "Property 'fx' does not exist on type 'Tools'" in missing.stderr
        first = checker(gateway)
        gateway.config_path.write_text(json.dumps(CONFIG))  # a server (and its tools) arrives
        # fx's tools in the module, and the checker holding it: the module changes more than
        # once (the types setting at once, fx's tools once it has connected and the build
        # after ran: "connected" comes first, and CI under load checked the script between)
        wait_until(
            lambda: (
                gateway.health()["servers"].get("fx", {}).get("state") == "connected"
                and (now := checker(gateway))["state"] == "ready"
                and now["module"] not in (None, first["module"])
                and now["module"] == (current := gateway.client.get("runtime/hash").json()["hash"])
                and "plainText" in gateway.client.get(f"runtime/tools.ts?_t={current}").text
            ),
            "the checker never took the new module",
        )
        before = checker(gateway)["checks"]
        found = run_exec(code, home=home, cwd=tmp_path, gateway=gateway)
        assert (found.returncode, found.stdout) == (0, '"hello"\n'), found.stderr
        assert checker(gateway)["checks"] == before + 1
    finally:
        assert gateway.stop() == []


def test_a_check_during_the_checkers_start_waits_for_it(home: Path, tmp_path: Path) -> None:
    """A script that comes while the checker starts is checked by it once it is up, not
    by a cold deno check racing it for the CPU."""
    gateway = start(CONFIG, tmp_path / "project", home)
    try:
        (old,) = language_servers(gateway)
        config = {"mcpServers": {"time": CONFIG["mcpServers"]["time"]}}
        gateway.config_path.write_text(json.dumps(config))  # a server goes: a new checker
        found: list[psutil.Process] = []
        wait_until(
            lambda: found.extend(p for p in language_servers(gateway) if p.pid != old.pid) or found,
            "no new checker started",
        )
        starting = found[0]
        starting.suspend()  # held in its start
        assert checker(gateway)["state"] == "starting"
        before = checker(gateway)["checks"]
        code = f'return "fine"; // {time.time_ns()}'
        running = exec_process(code, home=home, cwd=tmp_path, gateway=gateway)
        wait_until(  # (the old code answered "unavailable" at once: a cold deno check)
            lambda: checker(gateway).get("waiting") == 1 or running.poll() is not None,
            "the script's check never came",
        )
        assert running.poll() is None, "the script was checked without the starting checker"
        starting.resume()
        out, err = running.communicate(timeout=120)
        assert (running.returncode, out) == (0, b'"fine"\n'), err
        assert checker(gateway)["checks"] == before + 1
    finally:
        assert gateway.stop() == []


def test_a_hung_or_killed_checker_falls_back_and_is_replaced(home: Path, tmp_path: Path) -> None:
    gateway = start(CONFIG, tmp_path / "project", home)

    def replaced(old: psutil.Process) -> psutil.Process:
        wait_until(lambda: not old.is_running(), "the broken checker was left running")
        wait_until(
            lambda: checker(gateway)["state"] == "ready" and len(language_servers(gateway)) == 1,
            "no new checker",
        )
        (new,) = language_servers(gateway)
        assert new.pid != old.pid
        return new

    try:
        (hung,) = language_servers(gateway)
        os.kill(hung.pid, signal.SIGSTOP)  # the check hangs: exec waits, then Deno checks
        code = f'const n: number = "x"; // {time.time_ns()}\nreturn n;'
        answered = run_exec(code, home=home, cwd=tmp_path, gateway=gateway)
        assert answered.returncode == 1 and answered.stdout == ""
        assert "TS2322 [ERROR]" in answered.stderr and "<inline>.ts:1:7" in answered.stderr
        dying = replaced(hung)
        os.kill(dying.pid, signal.SIGSTOP)  # hold the next check in the middle, then kill it
        running = exec_process(
            f'return "fine" // {time.time_ns()}', home=home, cwd=tmp_path, gateway=gateway
        )
        time.sleep(1.5)
        assert running.poll() is None, "the check did not wait for the checker"
        dying.kill()
        out, err = running.communicate(timeout=120)
        assert (running.returncode, out) == (0, b'"fine"\n'), err
        replaced(dying)
    finally:
        assert gateway.stop() == []


def test_no_checker_is_left_after_the_gateway_stops(home: Path, tmp_path: Path) -> None:
    gateway = start(CONFIG, tmp_path / "project", home)
    (server,) = language_servers(gateway)
    assert gateway.stop() == []
    wait_until(lambda: not server.is_running(), "the checker outlived its gateway", timeout=10)


def test_gateway_status_names_the_checker(
    gateway: GatewayProcess, home: Path, tmp_path: Path
) -> None:
    env = exec_env(home, gateway)
    shown = toolscript_cli("gateway", "status", cwd=tmp_path, env=env, timeout=60)
    assert "type checks: warm" in shown.stdout, shown.stdout + shown.stderr
    described = toolscript_cli("gateway", "status", "--json", cwd=tmp_path, env=env, timeout=60)
    assert json.loads(described.stdout)["checker"]["state"] == "ready"


def test_a_gateway_without_a_checker_leaves_checks_to_deno(home: Path, tmp_path: Path) -> None:
    directory = tmp_path / "project"
    directory.mkdir()
    gateway = GatewayProcess(
        CONFIG, directory, "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(home)}
    )
    try:
        assert checker(gateway)["state"] == "off"
        assert language_servers(gateway) == []
        failed = run_exec('const n: number = "x";', home=home, cwd=tmp_path, gateway=gateway)
        assert failed.returncode == 1 and "TS2322 [ERROR]" in failed.stderr
    finally:
        assert gateway.stop() == []
