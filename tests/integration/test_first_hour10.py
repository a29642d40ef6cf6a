"""A user's first hour, tenth pass: the angles the earlier ones (test_first_hour.py to
test_first_hour9.py, test_agent_first_hour.py) did not take. The second day and the next
week: a git branch switched under a running gateway and back again, and a machine whose
limits stop Deno (a file-size limit smaller than what Deno writes to its cache).

Each test asserts what the user is told, as the CLI shows it, with real processes.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import GatewayProcess, clean_env, fixture_server, wait_until

MAIN = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
FEATURE = {"mcpServers": {"fixture": fixture_server()}, "search": {"semantic": False}}
# A bound on each wait for the gateway, not a timing: a loaded machine is slow to connect.
WAIT = 120
ECHO = 'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "hi" })'


def user_env(tmp_path: Path) -> dict[str, str]:
    """A user of their own (home, trusted configs) who trusts only what they ran `trust` on."""
    return {
        "TOOLSCRIPT_HOME": str(tmp_path / "home"),
        "TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "trust"),
        "TOOLSCRIPT_TRUSTED_PATHS": "",
    }


def cli(tmp_path: Path, cwd: Path, *args: str, file_size_limit: int | None = None) -> Any:
    """The CLI run by the user in ``cwd``; ``file_size_limit``: their shell's `ulimit -f`,
    in bytes."""

    def limit_file_size() -> None:
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run(
        [sys.executable, "-m", "toolscript", *args],
        cwd=cwd,
        env={**clean_env(), **user_env(tmp_path)},
        capture_output=True,
        text=True,
        timeout=180,
        preexec_fn=limit_file_size,
    )


def trusted_project(tmp_path: Path) -> tuple[Path, GatewayProcess]:
    """A project holding MAIN, trusted by the user, and its gateway started."""
    project = tmp_path / "repo"
    project.mkdir()
    (project / ".toolscript.json").write_text(json.dumps(MAIN))
    assert cli(tmp_path, project, "trust").returncode == 0
    return project, GatewayProcess(MAIN, project, "--ready-wait", "20", env=user_env(tmp_path))


def test_a_branch_switched_back_to_is_served_again_without_trusting_it_anew(
    tmp_path: Path,
) -> None:
    """`git switch feature` (a server renamed), `toolscript trust`, then `git switch main`
    under the running gateway: main's config, trusted yesterday, was "not trusted yet" and
    the gateway went on serving the branch's, until the user trusted bytes they had already
    read. A config never trusted is still refused."""
    project, gateway = trusted_project(tmp_path)
    try:

        def serves(name: str) -> Any:
            return lambda health: (
                health["servers"].get(name, {}).get("state") == "connected"
                and not (health.get("config") or {}).get("error")
            )

        gateway.wait_for_health(serves("fx"), what="fx connected", timeout=WAIT)
        gateway.config_path.write_text(json.dumps(FEATURE))  # git switch feature
        gateway.wait_for_health(
            lambda health: "not trusted yet" in ((health.get("config") or {}).get("error") or ""),
            what="the branch's config refused until trusted",
            timeout=WAIT,
        )
        assert cli(tmp_path, project, "trust").returncode == 0
        gateway.wait_for_health(
            serves("fixture"), what="the branch's server connected", timeout=WAIT
        )

        gateway.config_path.write_text(json.dumps(MAIN))  # git switch main
        gateway.wait_for_health(
            serves("fx"), what="main's server back, no trust asked", timeout=WAIT
        )
        listed = cli(tmp_path, project, "list-servers")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("fx\tstdio\tconnected"), listed.stdout
        assert "not trusted" not in listed.stderr
        done = cli(tmp_path, project, "exec", ECHO)
        assert (done.returncode, done.stdout.strip()) == (0, '"hi"'), done.stderr

        # a config no one trusted: refused as ever
        gateway.config_path.write_text(json.dumps({"mcpServers": {"other": fixture_server()}}))
        gateway.wait_for_health(
            lambda health: "not trusted yet" in ((health.get("config") or {}).get("error") or ""),
            what="an untrusted config refused",
            timeout=WAIT,
        )
    finally:
        gateway.stop()


def test_a_sandbox_killed_by_the_file_size_limit_says_so_and_what_to_do(tmp_path: Path) -> None:
    """A shell with a small `ulimit -f` (a CI runner's, a hardened account's): Deno, writing
    its cache past it, is killed by SIGXFSZ, and `exec` exited 153 with nothing on stderr.
    It names the signal, the limit and what to do; the next run in an ordinary shell runs."""
    project, gateway = trusted_project(tmp_path)
    try:
        wait_until(
            gateway.health,
            lambda health: health["servers"]["fx"]["state"] == "connected",
            WAIT,
            "fx connected",
        )
        limited = cli(tmp_path, project, "exec", ECHO, file_size_limit=16 * 1024)
        # Deno killed writing its cache, or (the module not cached yet: the gateway's own
        # write races the CLI's) the CLI refused writing the module: said either way
        assert limited.returncode in (1, 128 + signal.SIGXFSZ), limited.stdout + limited.stderr
        assert limited.returncode == 1 or "killed by SIGXFSZ" in limited.stderr, limited.stderr
        assert "ulimit -f" in limited.stderr and "Traceback" not in limited.stderr, limited.stderr
        done = cli(tmp_path, project, "exec", ECHO)
        assert (done.returncode, done.stdout.strip()) == (0, '"hi"'), done.stderr
    finally:
        gateway.stop()
