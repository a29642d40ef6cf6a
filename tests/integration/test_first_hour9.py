"""A new user's first hour, ninth pass: the angles the earlier ones (test_first_hour.py to
test_first_hour8.py, test_agent_first_hour.py) did not take. The user's own shell and
machine: a corporate proxy that refuses everything in every variable (the CLI, the sandbox,
an HTTP server elsewhere behind it, one on loopback reached directly), a standard stream the
caller closed, a project whose `toolscripts/` cannot be written, and a cache folder variable
naming a place that cannot be a folder.

Each test asserts what the user is told, as the CLI shows it, with real processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    FIXTURE_SERVER,
    GatewayProcess,
    background_server,
    clean_env,
    fixture_server,
    free_port,
    toolscript_cli,
)

# Nothing listens on port 9 (discard): a proxy that refuses every connection
REFUSING = "http://127.0.0.1:9"
PROXIES = {
    "HTTP_PROXY": REFUSING,
    "HTTPS_PROXY": REFUSING,
    "ALL_PROXY": "socks5://127.0.0.1:9",
    "http_proxy": REFUSING,
    "https_proxy": REFUSING,
    "all_proxy": "socks5://127.0.0.1:9",
}
SCRIPT = 'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "grüße ✓" })'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    project = tmp_path_factory.mktemp("first-hour9")
    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    gateway = GatewayProcess(
        config, project, "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(project / "home")}
    )
    try:
        gateway.wait_for_health(
            lambda h: h["servers"]["fx"]["state"] == "connected", what="fx connected"
        )
        yield gateway
    finally:
        gateway.stop()


def user_env(gateway: GatewayProcess, **extra: str) -> dict[str, str]:
    """The project's gateway found as a user's shell finds it (no TOOLSCRIPT_GATEWAY_URL)."""
    return {"TOOLSCRIPT_HOME": str(gateway.directory / "home"), **extra}


def test_a_proxy_that_refuses_everything_leaves_the_gateway_on_loopback_alone(
    gateway: GatewayProcess,
) -> None:
    # The CLI's client (httpx) and the sandbox (Deno) both read these variables: neither
    # may send the gateway's URL, its token in it, to a proxy.
    listed = toolscript_cli(
        "list-servers", "--json", cwd=gateway.directory, env=user_env(gateway, **PROXIES)
    )
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)[0]["state"] == "connected"
    ran = toolscript_cli("exec", SCRIPT, cwd=gateway.directory, env=user_env(gateway, **PROXIES))
    assert ran.returncode == 0, ran.stderr
    assert "grüße ✓" in ran.stdout


def test_an_http_server_behind_a_refusing_proxy_names_the_proxy_and_no_proxy(
    tmp_path: Path,
) -> None:
    # It said "cannot connect to http://HOST:PORT ... (is the server running, at that
    # address?)" of a server that ran: the proxy of the user's shell refused, unnamed. A
    # server on this machine is reached directly (the proxy was sent its headers in the
    # clear, and asked its own 127.0.0.1): one elsewhere goes through the proxy.
    port = free_port()
    with background_server(
        [sys.executable, str(FIXTURE_SERVER), "streamable-http", str(port)], port
    ):
        servers = {
            "web": {"url": f"http://127.0.0.1:{port}/mcp"},
            "far": {"url": f"http://mcp.internal.example:{port}/mcp"},
        }
        (tmp_path / ".toolscript.json").write_text(
            json.dumps({"mcpServers": servers, "search": {"semantic": False}})
        )
        signed_in = "http://someone:hunter2@127.0.0.1:9"  # a proxy's password: never shown
        proxied = {"TOOLSCRIPT_HOME": str(tmp_path / "home"), **PROXIES}
        proxied |= {"HTTP_PROXY": signed_in, "http_proxy": signed_in}
        refused = toolscript_cli("list-tools", "far", cwd=tmp_path, env=proxied)
        assert refused.returncode != 0
        assert "through the proxy http://127.0.0.1:9" in refused.stderr, refused.stderr
        assert "NO_PROXY" in refused.stderr
        assert "hunter2" not in refused.stderr
        # its hint: the proxy, not the server's entry, which holds nothing to fix
        hint = refused.stderr.partition("\nhint: ")[2]
        assert hint.startswith(
            "start the proxy http://127.0.0.1:9, or add mcp.internal.example to NO_PROXY"
        )
        assert ".toolscript.json" not in hint
        direct = toolscript_cli("list-tools", "web", cwd=tmp_path, env=proxied)
        assert direct.returncode == 0, direct.stderr
        assert "plain_text" in direct.stdout.split()


def test_a_script_runs_with_stdin_closed(gateway: GatewayProcess) -> None:
    # `toolscript exec CODE <&-` (a job runner, a service manager): Python's sys.stdin is
    # None, and exec asked it whether it is a terminal: AttributeError's traceback.
    ran = subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", SCRIPT],
        cwd=gateway.directory,
        env=clean_env(**user_env(gateway)),
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.close(0),  # as the shell's `<&-` closes it
        capture_output=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr.decode()
    assert "grüße ✓" in ran.stdout.decode()
    assert b"Traceback" not in ran.stderr


def test_save_where_toolscripts_cannot_be_made_says_so(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    # A folder it cannot write (a clone on a read-only mount; here a file in the way) was
    # the gateway's internal_error, its hint to restart the gateway.
    blocker = gateway.directory / "toolscripts"
    blocker.write_text("not a folder\n")
    script = tmp_path / "five.ts"
    script.write_text("export default async function five(input: {}) { return 5 }\n")
    try:
        saved = toolscript_cli(
            "save", "five", str(script), "--json", cwd=gateway.directory, env=user_env(gateway)
        )
    finally:
        blocker.unlink()
    assert saved.returncode == 1, saved.stderr
    error = json.loads(saved.stdout)
    assert error["error"] == "storage_error", error
    assert "five was not saved: toolscript cannot write" in error["message"]
    assert error["message"].endswith("toolscripts: it is not a folder")
    assert error["hint"].startswith("move ")
    assert "restart" not in saved.stderr


def test_a_cache_folder_that_cannot_be_made_is_named_with_what_moves_it(tmp_path: Path) -> None:
    # The ephemeral gateway's own error and hint: the message quoted its hint line as the
    # reason ("could not start: hint: ..."), and the hint said set TOOLSCRIPT_HOME.
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    (tmp_path / "a-file").write_text("")
    env = {
        "TOOLSCRIPT_HOME": str(tmp_path / "home"),
        "TOOLSCRIPT_CACHE_DIR": str(tmp_path / "a-file" / "cache"),
    }
    found = toolscript_cli("search", "time", "--json", cwd=tmp_path, env=env)
    assert found.returncode == 1, found.stderr
    error = json.loads(found.stdout)
    assert error["error"] == "storage_error", error  # the gateway's own kind, not "error"
    assert "could not start: toolscript cannot write" in error["message"], error
    assert "a-file" in error["message"]
    assert error["hint"].startswith("TOOLSCRIPT_CACHE_DIR (or --cache-dir) names that folder")
    assert "hint: hint:" not in found.stderr and "start: hint" not in found.stderr


def test_exec_from_a_subfolder_with_relative_xdg_folders(tmp_path: Path) -> None:
    # XDG_CACHE_HOME=.cache (relative, which the XDG spec says to ignore) made exec's
    # prepared script a relative path: "ValueError: relative path can't be expressed as a
    # file URI", and trust, cache and state were kept per folder the command ran in.
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    (tmp_path / "src").mkdir()
    relative = {v: f"rel-{v.lower()}" for v in ("XDG_CACHE_HOME", "XDG_STATE_HOME")}
    env = {"HOME": str(tmp_path / "home"), **relative}
    ran = toolscript_cli("exec", "return 6 * 7", cwd=tmp_path / "src", env=env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "42"
    assert not list((tmp_path / "src").iterdir())  # nothing kept in the folder it ran in
