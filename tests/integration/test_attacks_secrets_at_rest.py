"""Red team pass on secrets at rest and in transit: another user or process of the machine,
a hostile MCP server, a hostile HTTP endpoint a config names.

Found and fixed (each test fails on the code before it):
- ``toolscript auth --logout`` while a gateway runs: the gateway went on calling with the
  tokens it held, refreshed them and wrote the sign-in back (``auth --list`` listed it again,
  every later start used it). It is no longer used nor written; the server needs a sign-in.
  (Unit side, and a sign-in whose server the config no longer names:
  tests/unit/test_attacks_secrets_signout.py.)
- ``.toolscript/.doit.db`` (0644, in the project) held a plain SHA-256 of each server's
  settings, env and header values included: a guess of a password was checked offline
  against it (tests/unit/test_attacks_secrets_doitdb.py; here, a real build's records).
- Credentials sent over plain ``http://`` to another machine were said nowhere
  (tests/unit/test_attacks_secrets_cleartext.py).
- With HTTP_PROXY set (and no NO_PROXY), a server on this machine was reached through the
  proxy, which was sent its headers and tokens in the clear; it is reached directly.
- A kept sign-in was refreshed at the MCP server's own origin (``/token``, refresh token and
  client secret with it), never at its authorization server on another host.
- A file ``start_gateway`` makes for its URL (the gateway's token in it) had the umask's mode.
- Unit side only: a private write cut short by a full disk left part of a token
  (test_attacks_secrets_partial.py); the hook's ``CLAUDE_ENV_FILE`` was made 0644
  (test_attacks_secrets_envfile.py); a ``TOOLSCRIPT_HOME`` or trust file another user owns
  was used (test_attacks_secrets_foreign.py); ``auth --list`` printed a password in a URL.

Held, checked here for real (one gateway under umask 000, a stdio server handed a token in
``env``, an HTTP server a secret header):
- every folder toolscript keeps for its user is 0700, every file in it holding a token or
  the gateway's own is 0600, output kept past ``--max-output`` too; no file under the home,
  the cache or the project holds a configured secret (raw, hex or base64), not even after
  the gateway was killed with SIGKILL mid-run (no partial ``.tmp`` left either);
- no process's command line (the gateway's, its warm checker's, a background run's runner
  and Deno, the stdio server's) holds the gateway's token or a configured secret; the stdio
  server's environment is HOME, LOGNAME, PATH, SHELL, TERM, USER and its own ``env``; the
  sandbox's is the run's URL (a run token, not the gateway's);
- an HTTP server that redirects (307) to another host: the gateway follows no redirect off
  the server's origin, so that host never gets the configured header (nor any request);
- a URL holding ``user:${PASSWORD}@`` shows the password nowhere (health, list-servers, the
  gateway's log), its connection failing or not; a server quoting the header back in its
  HTTP error's reason (``HTTP 403 Key *** refused``) shows it masked;
- a gateway killed with SIGKILL leaves none of its processes running;
- the OAuth sign-in's ``state`` is checked, PKCE used, the loopback listener on 127.0.0.1
  only and closed after (tests/integration/test_oauth.py and the SDK's flow).
"""

from __future__ import annotations

import asyncio
import base64
import http.server
import json
import os
import signal
import socketserver
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import psutil
import pytest

from tests.helpers import (
    FIXTURE_SERVER,
    GatewayProcess,
    argv,
    background_server,
    free_port,
    fx_waits_for,
    gateway_cli,
    toolscript_cli,
    wait_until,
)
from tests.integration.test_oauth import OAuthServer, _wait_for_state, kept_files, project

FX_TOKEN = "ghp_AtRestZq8xR2mK9vLp3Tn7Yw"
API_KEY = "sk-AtRestHeader4Hs8Kd2Lq6Pz"
PASSWORD = "correct-horse-battery-staple"
SECRETS = (FX_TOKEN, API_KEY, PASSWORD)
STDIO_ENVIRONMENT = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}


def _spellings(secret: str) -> list[str]:
    raw = secret.encode()
    return [secret, raw.hex(), base64.b64encode(raw).decode().rstrip("=")]


class Recorder:
    """An HTTP server that keeps the headers of every request it gets (another host)."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                recorder.headers.append(dict(self.headers.items()))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.port: int = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Redirector(Recorder):
    """An MCP server's URL that answers every request 307 to another host's."""

    def __init__(self, target: str) -> None:
        self.headers = []
        redirector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                redirector.headers.append(dict(self.headers.items()))
                self.send_response(307)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()


class Echoer(Recorder):
    """A hostile endpoint: 403 with the header it was sent quoted in its reason phrase."""

    def __init__(self) -> None:
        self.headers = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.send_response(403, f"Key {self.headers.get('X-Api-Key')} refused")
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: object) -> None:
                pass

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()


class World:
    def __init__(
        self,
        gateway: GatewayProcess,
        home: Path,
        other_host: Recorder,
        redirect: Recorder,
        proxy: Recorder,
    ) -> None:
        self.gateway, self.home = gateway, home
        self.other_host, self.redirect, self.proxy = other_host, redirect, proxy

    @property
    def token(self) -> str:
        return self.gateway.url.rstrip("/").rpartition("/")[2]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("at-rest")
    home, directory = root / "home", root / "project"
    directory.mkdir()
    web_port = free_port()
    other_host = Recorder()
    proxy = Recorder()  # the user's HTTP_PROXY: another machine's, in a real shell
    echoer = Echoer()
    # localhost is another origin than 127.0.0.1 (a host of its own name, another port)
    redirect = Redirector(f"http://localhost:{other_host.port}/mcp")
    config = {
        "mcpServers": {
            "fx": {
                "command": sys.executable,
                "args": [str(FIXTURE_SERVER)],
                "env": {"FX_TOKEN": "${FX_TOKEN}"},
            },
            "web": {
                "url": f"http://127.0.0.1:{web_port}/mcp",
                "headers": {"X-Api-Key": "${MY_API_KEY}"},
            },
            "moved": {
                "url": f"http://127.0.0.1:{redirect.port}/mcp",
                "headers": {"X-Api-Key": "${MY_API_KEY}"},
            },
            "basic": {"url": f"http://me:${{SVC_PASSWORD}}@127.0.0.1:{free_port()}/mcp"},
            "echoes": {
                "url": f"http://127.0.0.1:{echoer.port}/mcp",
                "headers": {"X-Api-Key": "${MY_API_KEY}"},
            },
        },
        "search": {"semantic": False},
    }
    env = {
        "TOOLSCRIPT_HOME": str(home),
        "FX_TOKEN": FX_TOKEN,
        "MY_API_KEY": API_KEY,
        "SVC_PASSWORD": PASSWORD,
        "HTTP_PROXY": f"http://127.0.0.1:{proxy.port}",
        "http_proxy": f"http://127.0.0.1:{proxy.port}",
        "NO_PROXY": "",
        "no_proxy": "",
    }
    before = os.umask(0)  # the most permissive a user may have: modes come from toolscript
    try:
        with background_server(
            [sys.executable, str(FIXTURE_SERVER), "streamable-http", str(web_port)], web_port
        ):
            gateway = GatewayProcess(config, directory, env=env)
            try:
                gateway.wait_for_health(
                    lambda h: (
                        all(h["servers"][name]["state"] == "connected" for name in ("fx", "web"))
                        and h["servers"]["moved"]["attempts"] >= 1
                        and h["servers"]["echoes"]["state"] == "failed"
                    ),
                    60,
                    "fx and web connected, moved tried, echoes failed",
                )
                yield World(gateway, home, other_host, redirect, proxy)
            finally:
                gateway.stop()
    finally:
        os.umask(before)
        redirect.close()
        other_host.close()
        proxy.close()
        echoer.close()


def _no_secret_in_files(*folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*"):
            if not path.is_file() or path.is_symlink() or "deno" in path.parts:
                continue
            if "background" in path.parts and path.name in ("stdout", "stderr"):
                # what the script itself printed or returned: its own, kept as exec shows it
                assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
                continue
            data = path.read_bytes().decode("latin-1")
            for secret in SECRETS:
                for spelling in _spellings(secret):
                    assert spelling not in data, f"{path} holds {secret} as {spelling}"


def test_files_kept_for_the_user_are_theirs_alone_under_umask_000(world: World) -> None:
    gateway = world.gateway
    code, _, err = _exec(
        world,
        "--max-output",
        "1000",
        'import { tools } from "toolscript";\n'
        'const t = String(await tools.fx.env({ name: "FX_TOKEN" }));\n'
        'console.log("x".repeat(5000)); return t.length',
    )
    assert code == 123 and "the whole output is in" in err, err  # cut: kept in a file
    home = world.home
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    kept = list(home.rglob("output.txt"))
    assert kept, "exec kept no output past --max-output"
    for path in home.rglob("*"):
        if path.is_symlink() or "deno" in path.parts:
            continue
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_file() and path.parent == home / "gateways":
            assert mode == 0o600, f"{path} {oct(mode)}"  # the gateway's token
        if path.name in ("output.txt", "runs.sqlite", "recent-calls.json", "stdout", "stderr"):
            assert mode == 0o600, f"{path} {oct(mode)}"
    assert any(world.token in p.read_text() for p in (home / "gateways").glob("*.json"))
    _no_secret_in_files(home, gateway.directory)


def test_a_project_build_record_is_keyed_by_the_users_key(world: World) -> None:
    """A real ``.doit.db``: the fetch records of fx and web match the user's keyed digest,
    never the plain SHA-256 anyone holding the config can make for a guess."""
    import sqlite3

    from tests.unit.test_attacks_secrets_doitdb import _unkeyed
    from toolscript.config import load_config

    database = world.gateway.directory / ".toolscript" / ".doit.db"
    with sqlite3.connect(database) as connection:
        records = "\n".join(str(row) for row in connection.execute("select * from doit"))
    environment = {"FX_TOKEN": FX_TOKEN, "MY_API_KEY": API_KEY, "SVC_PASSWORD": PASSWORD}
    saved = {k: os.environ.get(k) for k in environment}
    os.environ.update(environment)
    try:
        config = load_config(world.gateway.config_path)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    for server in config.servers:
        assert _unkeyed(server) not in records, server.name
    assert "fetch:fx" in records


def test_no_command_line_holds_a_token_and_servers_get_only_their_environment(
    world: World,
) -> None:
    gateway = world.gateway
    started = gateway_cli(
        gateway,
        "exec",
        "--background",
        "--no-check",
        'import { tools } from "toolscript"; await tools.fx.sleep({ seconds: 30 }); return 1',
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip().split()[-1]
    try:

        def deno_running() -> list[psutil.Process]:
            return [
                p
                for p in gateway.descendants()
                if "run" in argv(p)[1:2] and any(a.startswith("--allow-net=") for a in argv(p))
            ]

        (sandbox,) = wait_until(deno_running, bool, 60, "the background run's Deno")
        processes = [psutil.Process(gateway.process.pid), *gateway.descendants()]
        for process in processes:
            try:
                line = " ".join(argv(process))
            except psutil.NoSuchProcess:
                continue
            for secret in (world.token, *SECRETS):
                assert secret not in line, f"{secret} in {line}"
        names = set(sandbox.environ())
        assert "TOOLSCRIPT_GATEWAY_URL" in names
        assert world.token not in sandbox.environ()["TOOLSCRIPT_GATEWAY_URL"]
        assert not any(secret in str(sandbox.environ()) for secret in SECRETS)
        fx_pid = int(gateway.call("fx__pid").json())
        fx_env = psutil.Process(fx_pid).environ()
        assert set(fx_env) - STDIO_ENVIRONMENT == {"FX_TOKEN"}, sorted(fx_env)
    finally:
        _cli(world, "runs", "stop", run_id)


def test_a_redirect_to_another_host_gets_no_header_and_a_urls_password_shows_nowhere(
    world: World,
) -> None:
    gateway = world.gateway
    moved = gateway.health()["servers"]["moved"]
    assert moved["state"] != "connected"
    assert world.redirect.headers and world.redirect.headers[0].get("X-Api-Key") == API_KEY
    assert world.other_host.headers == []  # the other host was never asked
    # servers on this machine are reached directly, whatever HTTP_PROXY says: the proxy was
    # sent their headers in the clear (and asked its own 127.0.0.1)
    assert world.proxy.headers == []
    echoed = gateway.health()["servers"]["echoes"]["error"]
    assert "HTTP 403 Key *** refused" in echoed, echoed
    listed = gateway_cli(gateway, "list-servers", "--json")
    health = gateway.client.get("health").text
    for text in (listed.stdout, listed.stderr, health, gateway.log):
        for secret in SECRETS:
            assert secret not in text


def test_a_gateway_killed_mid_run_leaves_no_secret_nor_partial_file(world: World) -> None:
    gateway = world.gateway
    started = gateway_cli(
        gateway,
        "exec",
        "--background",
        "--no-check",
        'import { tools } from "toolscript";\n'
        'const t = String(await tools.fx.env({ name: "FX_TOKEN" }));\n'
        "await tools.fx.plainText({ text: t });\n"
        "await tools.fx.sleep({ seconds: 120 }); return t",
    )
    assert started.returncode == 0, started.stderr
    # The run at its sleep. (The run log has the call once it ended: waiting for it there
    # killed a gateway whose run was done. A sleep past the wait below: a server left to
    # end its sleep by itself is not taken for one stopped with the gateway.)
    fx_waits_for(gateway, sleeping=120, timeout=60)
    children = gateway.descendants()
    gateway.process.send_signal(signal.SIGKILL)
    gateway.process.wait(10)
    _, alive = psutil.wait_procs(children, timeout=30)
    left = []
    for leftover in alive:
        try:
            left.append(" ".join(argv(leftover))[:160])
        except psutil.NoSuchProcess:
            continue
        leftover.kill()
    assert left == []  # its servers (a token in their environment) stopped with it
    _no_secret_in_files(world.home, gateway.directory)
    partial = [p for p in world.home.rglob("*.tmp")] + list(gateway.directory.rglob("*.tmp"))
    assert partial == []


def _cli(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    """``toolscript ARGS`` through the world's gateway, with its home (its run log)."""
    return toolscript_cli(
        *args,
        cwd=world.gateway.directory,
        env={"TOOLSCRIPT_GATEWAY_URL": world.gateway.url, "TOOLSCRIPT_HOME": str(world.home)},
    )


def _exec(world: World, *args: str) -> tuple[int, str, str]:
    done = _cli(world, "exec", "--no-check", *args)
    return done.returncode, done.stdout, done.stderr


def test_a_sign_in_signed_out_while_a_gateway_runs_is_neither_used_nor_kept(
    tmp_path: Path,
) -> None:
    server = OAuthServer("http", "--token-lifetime", "3")
    try:
        directory, env = project(tmp_path, server)
        config: dict[str, Any] = json.loads((directory / ".toolscript.json").read_text())
        signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
        assert signed.returncode == 0, signed.stderr
        (kept,) = kept_files(env)  # where its refreshes go (the test before this one)
        found = json.loads(kept.read_text())["authorization_server"]
        assert found["token_endpoint"] == server.base + "/token"
        gateway = GatewayProcess(config, directory, "--connect-timeout", "120", env=env)
        try:
            _wait_for_state(gateway, "connected", 60)
            assert gateway.call("secure__whoami").status_code == 200
            out = toolscript_cli("auth", "--logout", "secure", cwd=directory, env=env)
            assert out.returncode == 0, out.stderr
            time.sleep(4)  # past the access token's 3 s: a refresh is due
            after = gateway.call("secure__echo", {"text": "x"})
            assert after.status_code != 200, after.text
            assert kept_files(env) == []  # not written back by a refresh
            listed = toolscript_cli("auth", "--list", "--json", cwd=directory, env=env)
            assert json.loads(listed.stdout or "[]") == []
            _wait_for_state(gateway, "needs_auth", 60)
            refreshes = server.stats()["refreshes"]
            # said at once: it waited out the connect timeout first (then 60 s, the call's)
            again = gateway.client.post("tools/secure__echo", json={"text": "y"}, timeout=30)
            assert again.status_code == 503 and "toolscript auth secure" in again.text
            assert server.stats()["refreshes"] == refreshes
            assert kept_files(env) == []
        finally:
            assert gateway.stop() == []
    finally:
        server.stop()


class TokenEndpoint(Recorder):
    """An authorization server's token endpoint on a host of its own: it keeps each form it
    is sent and answers with fresh tokens."""

    def __init__(self) -> None:
        self.headers = []
        self.forms: list[dict[str, list[str]]] = []
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                endpoint.forms.append(parse_qs(self.rfile.read(length).decode()))
                body = json.dumps(
                    {
                        "access_token": "access-two",
                        "token_type": "Bearer",
                        "expires_in": 3600,
                        "refresh_token": "refresh-two",
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()


def test_a_kept_sign_in_is_refreshed_at_its_authorization_server_not_the_mcp_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK refreshes at the authorization server's token endpoint only when it has its
    metadata, which it learns at a 401: a gateway holding kept tokens had none, so each
    refresh went to the MCP server's own origin (``/token``) with the refresh token and the
    client secret, and failed where the authorization server is another host (the tokens
    were dropped, the calls went unauthenticated). The sign-in keeps the metadata it found
    (a real ``toolscript auth`` does: the test before) and the gateway refreshes there."""
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from toolscript.store.tokens import PendingSignIn, TokenStore

    home = tmp_path / "home"
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    monkeypatch.setenv("TOOLSCRIPT_KEYRING", "0")
    issuer = TokenEndpoint()
    port = free_port()
    url = f"http://localhost:{port}/mcp"  # the MCP server: another origin than the issuer's
    pending = PendingSignIn(
        OAuthClientInformationFull(
            client_id="toolscript-app",
            client_secret="client-secret-Zk3",
            redirect_uris=["http://127.0.0.1:1/callback"],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_post",
        )
    )
    base = f"http://127.0.0.1:{issuer.port}"
    pending.authorization_server = {
        "issuer": base,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
    }
    pending.tokens = OAuthToken(
        access_token="access-one", expires_in=60, refresh_token="refresh-one"
    )
    pending.received_at = time.time() - 3600  # expired an hour ago
    TokenStore(url, "split").keep(pending)
    try:
        with background_server(
            [sys.executable, str(FIXTURE_SERVER), "streamable-http", str(port)], port
        ):
            config = {"mcpServers": {"split": {"url": url}}, "search": {"semantic": False}}
            gateway = GatewayProcess(
                config, tmp_path, env={"TOOLSCRIPT_HOME": str(home), "TOOLSCRIPT_KEYRING": "0"}
            )
            try:
                gateway.wait_for_health(
                    lambda h: h["servers"]["split"]["state"] == "connected", 60, "split connected"
                )
                assert [form.get("refresh_token") for form in issuer.forms] == [["refresh-one"]]
                assert issuer.forms[0].get("client_secret") == ["client-secret-Zk3"]
                kept = asyncio.run(TokenStore(url, "split").get_tokens())
                assert kept is not None and kept.refresh_token == "refresh-two"
            finally:
                assert gateway.stop() == []
    finally:
        issuer.close()


def test_a_url_file_a_gateway_start_makes_is_its_users_alone(tmp_path: Path) -> None:
    """``start_gateway(url_file=...)`` (the hook's detached gateway) writes the gateway's own
    URL, its token in it: a file it makes is 0600 whatever the umask (it was the umask's)."""
    from toolscript.gateway.launch import start_gateway

    url_file = tmp_path / "session.url"
    before = os.umask(0)
    try:
        # a gateway that cannot start (no such option): the file is made all the same
        start_gateway("--no-such-option", url_file=url_file, wait=30).stop(10)
    finally:
        os.umask(before)
    assert stat.S_IMODE(url_file.stat().st_mode) == 0o600
