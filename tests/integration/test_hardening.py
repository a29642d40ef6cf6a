"""Attacks from the security review, each performed for real and asserted to fail."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    LocalHTTPServer,
    argv,
    clean_env,
    fixture_server,
    running_gateway,
    toolscript_cli,
    wait_until,
)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running_gateway(
        {"mcpServers": {"fx": fixture_server()}}, tmp_path_factory.mktemp("hard")
    ) as started:
        yield started


def exec_in(
    gateway: GatewayProcess, home: Path, cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", *args],
        cwd=cwd,
        env=clean_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_GATEWAY_URL=gateway.url),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_local_storage_keeps_nothing_between_runs(gateway: GatewayProcess, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write = exec_in(
        gateway,
        home,
        tmp_path,
        "--no-check",
        'localStorage.setItem("planted", "yes"); console.log("STORED");',
    )
    assert write.returncode != 0
    assert "STORED" not in write.stdout
    assert "Not a directory" in write.stderr
    read = exec_in(
        gateway,
        home,
        tmp_path,
        "--no-check",
        'console.log(String(globalThis.localStorage?.getItem("planted")));',
    )
    assert "yes" not in read.stdout
    assert (home / "deno" / "location_data").is_file(), "Deno has nowhere to keep storage"


def test_the_user_cache_is_private_and_holds_no_token(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    home = tmp_path / "shared-home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    code = 'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "x" });'
    ran = exec_in(gateway, home, tmp_path, code)
    assert ran.returncode == 0, ran.stderr
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    token = gateway.url.rsplit("/", 1)[1]
    leaks = []
    for path in home.rglob("*"):
        if path.is_file() and token.encode() in path.read_bytes():
            leaks.append(str(path.relative_to(home)))
    assert leaks == [], "the gateway token was written to the cache"


@pytest.mark.parametrize("name", [".env", "passwd", "notes.txt", "config.json"])
def test_exec_file_refuses_what_is_not_a_script(
    gateway: GatewayProcess, tmp_path: Path, name: str
) -> None:
    secret = tmp_path / name
    secret.write_text("AWS_SECRET_ACCESS_KEY=very-secret-value\n")
    ran = exec_in(gateway, tmp_path / "home", tmp_path, "--file", str(secret))
    assert ran.returncode == 2
    assert "not a TypeScript or JavaScript file" in ran.stderr
    assert "very-secret-value" not in ran.stdout + ran.stderr


def test_an_oversized_request_body_is_refused_as_it_arrives(gateway: GatewayProcess) -> None:
    process = psutil.Process(gateway.process.pid)
    before = process.memory_info().rss

    def body() -> Iterator[bytes]:
        yield b'{"text": "'
        for _ in range(200):  # 200 MB, streamed
            yield b"x" * (1024 * 1024)
        yield b'"}'

    try:
        response = gateway.client.post("tools/fx__plain_text", content=body())
        status = response.status_code
        answer = response.json()
    except Exception:  # the gateway may close the connection once it has answered
        status, answer = 413, {"error": "request_too_large"}
    assert status == 413
    assert answer["error"] == "request_too_large"
    assert process.memory_info().rss - before < 100 * 1024 * 1024
    assert gateway.call("fx__plain_text", {"text": "fine"}).json() == "fine"


@pytest.mark.parametrize("depth", [100, 5000, 100_000])
def test_deeply_nested_json_is_refused_and_the_session_survives(
    gateway: GatewayProcess, depth: int
) -> None:
    pid = gateway.call("fx__pid").json()
    nested = '{"text": ' + "[" * depth + "]" * depth + "}"
    response = gateway.client.post("tools/fx__plain_text", content=nested.encode())
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_arguments"
    assert gateway.call("fx__pid").json() == pid, "the server session was not restarted"


def test_exec_file_still_runs_scripts(gateway: GatewayProcess, tmp_path: Path) -> None:
    script = tmp_path / "job.mts"
    script.write_text("return 40 + 2;\n")
    ran = exec_in(gateway, tmp_path / "home", tmp_path, "--file", str(script))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "42"


def _family(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def _wait_for_calls(exec_process: subprocess.Popen[str], calls: Path) -> list[psutil.Process]:
    """exec's processes once its script is looping: its tool calls are being answered."""
    wait_until(lambda: calls.exists() and calls.stat().st_size, bool, 60, "the script's calls")
    return _family(exec_process.pid)


@pytest.mark.parametrize(
    "how",
    [
        "SIGINT",
        "SIGTERM",
        "SIGHUP",
        "SIGKILL",
    ],
)
def test_the_sandbox_and_ephemeral_gateway_die_with_exec(tmp_path: Path, how: str) -> None:
    """Agents' shells stop long commands with signals, SIGKILL included: nothing may run on."""
    import signal as signals

    calls = tmp_path / "calls.txt"  # the server's stderr, where it logs each call it answers
    fx = fixture_server(args=[*fixture_server()["args"], "--log-calls", str(calls)])
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fx}}))
    code = 'import { tools } from "toolscript";\nwhile (true) { await tools.fx.plainText({ text: "again" }); }'
    stderr = (tmp_path / "stderr.txt").open("w")  # a file, not a pipe nobody reads
    exec_process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", code, "--timeout", "0"],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home")),
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
        # A shell's background job (CI runs this way) starts with SIGINT ignored, which exec
        # rightly keeps; a terminal's Ctrl+C reaches a process that has its default handler.
        preexec_fn=lambda: signals.signal(signals.SIGINT, signals.default_int_handler),
    )
    try:
        family = _wait_for_calls(exec_process, calls)
        names = " ".join(" ".join(argv(p)) for p in family)
        assert "--ephemeral" in names and "fixture_server" in names
        os.kill(exec_process.pid, getattr(signals, how))
        try:
            exec_process.wait(60)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                "exec did not exit: " + (tmp_path / "stderr.txt").read_text()[-2000:]
            ) from None
        _, alive = psutil.wait_procs(family, timeout=25)
        assert alive == [], [" ".join(argv(p))[:120] for p in alive]
        if how != "SIGKILL":
            assert exec_process.returncode in (130, 128 + getattr(signals, how))
    finally:
        stderr.close()
        if exec_process.poll() is None:
            exec_process.kill()


@pytest.mark.parametrize(
    "hoard",
    [
        "const kept = []; for (let i = 0; i < 16; i++) kept.push(new Uint8Array(128 << 20).fill(1));",
        "const kept = []; for (let i = 0; i < 16; i++) { const m = new WebAssembly.Memory({ initial: 2048 }); new Uint8Array(m.buffer).fill(1); kept.push(m); }",
    ],
    ids=["typed-arrays", "webassembly"],
)
def test_memory_outside_the_heap_is_capped(
    gateway: GatewayProcess, tmp_path: Path, hoard: str
) -> None:
    """--memory caps the V8 heap; the sandbox as a whole is capped too (exit 125)."""
    ran = exec_in(
        gateway,
        tmp_path / "home",
        tmp_path,
        "--no-check",
        "--memory",
        "64",
        hoard + ' console.log("HOARDED");',
    )
    assert ran.returncode == 125, ran.stderr[-400:]
    assert "HOARDED" not in ran.stdout
    assert "MB of memory in all" in ran.stderr


def test_a_planted_state_file_does_not_redirect_exec(
    tmp_path: Path, local_http_server: Callable[[bytes], LocalHTTPServer]
) -> None:
    """A repository that ships .toolscript/gateway.json pointing at its own server gets no call."""
    listener = local_http_server(b'{"hash": "planted"}')
    port = listener.port
    (tmp_path / ".toolscript.json").write_text(json.dumps({"mcpServers": {"fx": fixture_server()}}))
    planted = tmp_path / ".toolscript" / "gateway.json"
    planted.parent.mkdir()
    planted.write_text(json.dumps({"url": f"http://127.0.0.1:{port}/x", "pid": 1}))
    code = 'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "mine" });'
    ran = subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", code],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == "mine"
    assert listener.seen == [], "the planted URL was used"
    status = toolscript_cli(
        "gateway", "status", cwd=tmp_path, env={"TOOLSCRIPT_HOME": str(tmp_path / "home")}
    )
    assert status.returncode == 1


def test_secrets_expanded_into_args_never_reach_health_or_the_log(tmp_path: Path) -> None:
    """A server echoes its arguments to stderr and exits: whole or in part, the secret that
    ${VAR} put in its args must not show."""
    from tests.helpers import GatewayProcess as Gateway

    secret = "sk-live-4f9a8b7c6d5e4f3a2b1c"
    script = 'echo "starting with token $0" >&2; echo "key prefix $(printf %s "$0" | cut -c1-10)" >&2; exit 3'
    config = {"mcpServers": {"leaky": {"command": "sh", "args": ["-c", script, "${LEAKY_TOKEN}"]}}}
    gateway = Gateway(config, tmp_path, "--ready-wait", "5", env={"LEAKY_TOKEN": secret})
    try:
        health = gateway.client.get("health").json()
        leaky = health["servers"]["leaky"]
        assert leaky["state"] == "failed"
        shown = json.dumps(health) + gateway.log
        assert "starting with token ***" in shown
        assert secret not in shown and secret[:10] not in shown and secret[:8] not in shown
    finally:
        assert gateway.stop() == []


def test_silent_connections_cannot_starve_the_gateway(tmp_path: Path) -> None:
    """Hundreds of sockets that send nothing: health and calls still answer; the silent
    ones are closed; the log says so once."""
    import socket
    import time

    with running_gateway({"mcpServers": {"fx": fixture_server()}}, tmp_path) as gateway:
        host, port = gateway.url.split("/")[2].split(":")
        idle = []
        for _ in range(400):
            try:
                idle.append(socket.create_connection((host, int(port)), timeout=5))
            except OSError:
                break
        try:
            started = time.monotonic()
            assert gateway.client.get("health").status_code == 200
            assert gateway.call("fx__plain_text", {"text": "served"}).json() == "served"
            assert time.monotonic() - started < 5
            for sock in idle:  # closed by the gateway once its wait for a request is up
                sock.settimeout(30)
                assert sock.recv(1) == b"", "a silent connection was kept open"
            gateway.wait_for_log("sent no request within")
            assert gateway.log.count("sent no request within") == 1
            assert gateway.log.count("connections at once") <= 1
            assert "Traceback" not in gateway.log
        finally:
            for sock in idle:
                sock.close()
