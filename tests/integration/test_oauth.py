"""Signing in to OAuth-protected servers: a real authorization server and MCP server built
on the SDK's server auth (tests/servers/oauth_server.py), the real CLI and gateway.

The browser is a command in ``BROWSER`` (Python's webbrowser reads it) that follows the
authorization URL the way a browser would, landing on toolscript's loopback redirect.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import SERVERS, GatewayProcess, free_port, toolscript_cli, wait_for_port
from toolscript.cli.hooks import _status_line
from toolscript.plumbing.processes import stop_process

OAUTH_SERVER = SERVERS / "oauth_server.py"
# Follows the sign-in URL (the authorization server approves at once and redirects to the
# loopback callback), as a person's browser would.
FOLLOWER = "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=30).read()"


class OAuthServer:
    def __init__(self, transport: str, *extra: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = self.base + ("/mcp" if transport == "http" else "/sse")
        self.transport = transport
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(OAUTH_SERVER),
                "--port",
                str(self.port),
                "--transport",
                transport,
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port, process=self.process)

    def stats(self) -> dict[str, int]:
        return httpx.get(self.base + "/admin/stats").json()

    def revoke(self) -> None:
        httpx.post(self.base + "/admin/revoke")

    def stop(self) -> None:
        stop_process(self.process, 10)


@pytest.fixture(params=["http", "sse"])
def oauth_server(request: pytest.FixtureRequest) -> Iterator[OAuthServer]:
    server = OAuthServer(request.param, "--token-lifetime", "3")
    yield server
    server.stop()


def project(tmp_path: Path, server: OAuthServer, **entry: Any) -> tuple[Path, dict[str, str]]:
    """A project whose config names the server "secure", and the environment to run in."""
    directory = tmp_path / "project"
    directory.mkdir(exist_ok=True)
    config = {"mcpServers": {"secure": {"type": server.transport, "url": server.url, **entry}}}
    (directory / ".toolscript.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    env = {"TOOLSCRIPT_HOME": str(home), "BROWSER": f"{sys.executable} -c '{FOLLOWER}' %s"}
    return directory, env


def kept_files(env: dict[str, str]) -> list[Path]:
    return sorted((Path(env["TOOLSCRIPT_HOME"]) / "auth").glob("*.json"))


def test_sign_in_end_to_end_then_list_and_logout(tmp_path: Path, oauth_server: OAuthServer) -> None:
    directory, env = project(tmp_path, oauth_server)
    signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
    assert signed.returncode == 0, signed.stderr
    assert signed.stdout.startswith("signed in to secure (token until ")
    assert "Sign in to secure in your browser; if none opens, visit:" in signed.stderr
    assert f"{oauth_server.base}/authorize?" in signed.stderr
    assert oauth_server.stats()["registrations"] == 1  # dynamic client registration
    (kept,) = kept_files(env)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    data = json.loads(kept.read_text())
    secrets = [data["tokens"]["access_token"], data["tokens"]["refresh_token"]]
    listed = toolscript_cli("auth", "--list", "--json", cwd=directory, env=env)
    (entry,) = json.loads(listed.stdout)
    assert entry["server"] == "secure" and entry["url"] == oauth_server.url
    assert entry["refreshable"] is True and entry["expires_at"] > time.time() - 5
    table = toolscript_cli("auth", "--list", cwd=directory, env=env)
    assert table.stdout.startswith("secure\t" + oauth_server.url)
    for output in (signed.stdout, signed.stderr, listed.stdout, table.stdout, table.stderr):
        assert not any(secret in output for secret in secrets)
    # a sign-in that does not finish keeps the one there was
    unfinished = toolscript_cli(
        "auth", "secure", "--no-browser", "--timeout", "5", cwd=directory, env=env, timeout=60
    )
    assert unfinished.returncode == 1
    assert "no sign-in came back within 5 s" in unfinished.stderr
    assert json.loads(kept.read_text())["tokens"]["access_token"] == secrets[0]
    out = toolscript_cli("auth", "--logout", "secure", cwd=directory, env=env)
    assert (out.returncode, out.stdout) == (0, "signed out of secure\n")
    assert kept_files(env) == []
    again = toolscript_cli("auth", "--logout", "secure", cwd=directory, env=env)
    assert again.returncode == 2 and "server 'secure' is not signed in" in again.stderr


def test_a_server_without_dynamic_registration_names_the_config_keys(tmp_path: Path) -> None:
    port = free_port()
    server = OAuthServer(
        "http",
        "--no-registration",
        "--client-id",
        "toolscript-app",
        "--client-secret",
        "s3cret",
        "--redirect-uri",
        f"http://127.0.0.1:{port}/callback",
    )
    try:
        directory, env = project(tmp_path, server)
        refused = toolscript_cli(
            "auth", "secure", "--timeout", "20", cwd=directory, env=env, timeout=60
        )
        assert refused.returncode == 1
        assert "secure does not let toolscript register itself as a client" in refused.stderr
        assert '"callbackPort": PORT} in its entry of .toolscript.json' in (refused.stderr)
        directory, env = project(
            tmp_path,
            server,
            oauth={"clientId": "toolscript-app", "clientSecret": "s3cret", "callbackPort": port},
        )
        signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
        assert signed.returncode == 0, signed.stderr
        assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback" in signed.stderr
        assert "s3cret" not in signed.stderr + signed.stdout
        assert server.stats()["registrations"] == 0
    finally:
        server.stop()


def test_auth_refuses_what_cannot_sign_in(tmp_path: Path) -> None:
    directory = tmp_path
    (directory / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"local": {"command": "true"}}})
    )
    env = {"TOOLSCRIPT_HOME": str(tmp_path / "home")}
    stdio = toolscript_cli("auth", "local", cwd=directory, env=env)
    assert stdio.returncode == 2
    assert "server 'local' is a stdio server: only http and sse servers sign in" in stdio.stderr
    missing = toolscript_cli("auth", "nope", cwd=directory, env=env)
    assert missing.returncode != 0 and "nope" in missing.stderr
    nothing = toolscript_cli("auth", "--list", cwd=directory, env=env)
    assert nothing.returncode == 0 and "no server is signed in" in nothing.stderr
    (directory / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"down": {"url": f"http://127.0.0.1:{free_port()}/mcp"}}})
    )
    down = toolscript_cli("auth", "down", "--no-browser", cwd=directory, env=env, timeout=60)
    assert down.returncode == 1
    assert "signing in to down failed: ConnectError" in down.stderr
    never = toolscript_cli("auth", "--logout", "down", cwd=directory, env=env)
    assert never.returncode == 2 and "server 'down' is not signed in" in never.stderr


def test_the_gateway_calls_with_the_token_refreshes_it_and_asks_for_a_new_sign_in(
    tmp_path: Path, oauth_server: OAuthServer
) -> None:
    directory, env = project(tmp_path, oauth_server)
    gateway = GatewayProcess(
        json.loads((directory / ".toolscript.json").read_text()), directory, env=env
    )
    try:
        # no sign-in yet: the server needs one, and says how
        server = _wait_for_state(gateway, "needs_auth")
        assert "toolscript auth secure" in (server.get("hint") or "")
        # the Claude Code plugin's SessionStart status line names it
        line = _status_line(gateway.url, directory)
        assert "0/1 servers connected" in line
        assert "Need a sign-in (ask the user to run it" in line
        assert "`toolscript auth secure`" in line
        signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
        assert signed.returncode == 0, signed.stderr
        _wait_for_state(gateway, "connected")  # picked up without a restart
        first = gateway.call("secure__whoami")
        assert first.status_code == 200, first.text
        assert first.json()["client_id"]
        time.sleep(4)  # past the access token's 3 s
        after = gateway.call("secure__echo", {"text": "still here"})
        assert after.status_code == 200, after.text
        assert after.json() == {"result": "still here"}
        assert oauth_server.stats()["refreshes"] >= 1
        token = json.loads(kept_files(env)[0].read_text())["tokens"]["access_token"]
        health = gateway.client.get("health").text
        assert token not in health and token not in gateway.log
        oauth_server.revoke()  # the user took the app's access away
        time.sleep(4)
        refused = gateway.call("secure__echo", {"text": "x"})
        assert refused.status_code == 503, refused.text
        server = _wait_for_state(gateway, "needs_auth")
        assert "toolscript auth secure" in (server.get("hint") or "")
        status = toolscript_cli("gateway", "status", cwd=directory, env=env)
        assert "needs_auth" in status.stdout and "toolscript auth secure" in status.stdout
    finally:
        assert gateway.stop() == []


def _wait_for_state(gateway: GatewayProcess, state: str, timeout: float = 30) -> dict[str, Any]:
    health = gateway.wait_for_health(
        lambda health: health["servers"]["secure"]["state"] == state, timeout, f"secure {state}"
    )
    server: dict[str, Any] = health["servers"]["secure"]
    return server


def test_tokens_go_to_the_keyring_when_one_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("keyrings.alt", reason="keyrings.alt comes with the dev extra")
    from keyrings.alt.file import PlaintextKeyring

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # where that keyring lives
    server = OAuthServer("http")
    try:
        directory, env = project(tmp_path, server)
        env.update(
            PYTHON_KEYRING_BACKEND="keyrings.alt.file.PlaintextKeyring",
            XDG_DATA_HOME=str(tmp_path / "data"),
        )
        signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
        assert signed.returncode == 0, signed.stderr
        (kept,) = kept_files(env)
        record = json.loads(kept.read_text())
        assert record["keyring"] is True and "tokens" not in record and "client" not in record
        vault = PlaintextKeyring()
        kept_secrets = json.loads(vault.get_password("toolscript-oauth", server.url) or "{}")
        assert kept_secrets["tokens"]["access_token"]  # the secrets are in the keyring
        assert kept_secrets["tokens"]["access_token"] not in signed.stdout + signed.stderr
        listed = json.loads(
            toolscript_cli("auth", "--list", "--json", cwd=directory, env=env).stdout
        )
        assert [(s["server"], s["refreshable"]) for s in listed] == [("secure", True)]
        gateway = GatewayProcess(
            json.loads((directory / ".toolscript.json").read_text()), directory, env=env
        )
        try:
            _wait_for_state(gateway, "connected")
            assert gateway.call("secure__whoami").status_code == 200
        finally:
            assert gateway.stop() == []
        out = toolscript_cli("auth", "--logout", "secure", cwd=directory, env=env)
        assert out.returncode == 0 and kept_files(env) == []
        assert vault.get_password("toolscript-oauth", server.url) is None
        # told not to use the keyring, the private file holds them
        env["TOOLSCRIPT_KEYRING"] = "0"
        assert toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60).returncode == 0
        assert "access_token" in json.loads(kept_files(env)[0].read_text())["tokens"]
    finally:
        server.stop()


# A browser that first lets other local requests reach the loopback (a wrong state, none, and
# the right one carrying a provider's error when asked to), writing down what each got, then
# follows the sign-in URL as FOLLOWER does.
MEDDLER = """
import json, sys, urllib.error, urllib.parse, urllib.request
url, record, mode = sys.argv[1], sys.argv[2], sys.argv[3]
query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
callback, state = query["redirect_uri"][0], query["state"][0]
def visit(params):
    try:
        with urllib.request.urlopen(callback + "?" + urllib.parse.urlencode(params), timeout=10) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.read().decode()]
seen = [visit({"code": "forged", "state": "not-the-state"}), visit({"code": "forged"})]
if mode == "error":
    seen.append(visit({"state": state, "error": "access_denied",
                       "error_description": "no\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x9b31m"}))
else:
    urllib.request.urlopen(url, timeout=30).read()
open(record, "w").write(json.dumps(seen))
"""


def _meddling_project(
    tmp_path: Path, server: OAuthServer, mode: str
) -> tuple[Path, dict[str, str], Path]:
    directory, env = project(tmp_path, server)
    browser, record = tmp_path / "meddler.py", tmp_path / "seen.json"
    browser.write_text(MEDDLER)
    env["BROWSER"] = f"{sys.executable} {browser} %s {record} {mode}"
    return directory, env, record


def test_a_callback_without_the_sign_in_state_is_refused_and_the_sign_in_goes_on(
    tmp_path: Path,
) -> None:
    server = OAuthServer("http")
    try:
        directory, env, record = _meddling_project(tmp_path, server, "follow")
        signed = toolscript_cli(
            "auth", "secure", "--timeout", "30", cwd=directory, env=env, timeout=60
        )
        assert signed.returncode == 0, signed.stderr
        assert signed.stdout.startswith("signed in to secure")
        wrong, missing = json.loads(record.read_text())
        for status, page in (wrong, missing):
            assert status == 400, page
            assert "Signed in" not in page
        assert len(kept_files(env)) == 1
    finally:
        server.stop()


def test_a_providers_error_text_is_printed_without_its_control_characters(tmp_path: Path) -> None:
    server = OAuthServer("http")
    try:
        directory, env, record = _meddling_project(tmp_path, server, "error")
        refused = toolscript_cli(
            "auth", "secure", "--timeout", "30", cwd=directory, env=env, timeout=60
        )
        assert refused.returncode == 1
        assert "secure refused the sign-in: access_denied" in refused.stderr
        assert "\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J\\u009b31m" in refused.stderr
        assert not any(c in refused.stderr for c in "\x1b\x07\x9b")
        *_, answered = json.loads(record.read_text())
        assert answered[0] == 200 and "Signed in" not in answered[1]
        assert kept_files(env) == []
    finally:
        server.stop()


ECHOES_ITS_TOKEN = """import { tools } from "toolscript";
const token = (await tools.secure.myToken({})).result;
let error = "";
try { await tools.secure.failWithToken({}); } catch (e) { error = String(e); }
console.log(JSON.stringify({ long: token.length > 8, failed: error.includes("refused"),
  leaked: error.includes(token) }));
"""


def test_a_server_echoing_its_bearer_token_leaves_it_out_of_the_logs(tmp_path: Path) -> None:
    """The kept sign-in's tokens are masked as a ``${VAR}`` secret is: a server that sends its
    caller's bearer token back (in a result, in an error) put it into the run log, the
    recent calls and the error the script got."""
    server = OAuthServer("http")
    directory, env = project(tmp_path, server)
    try:
        signed = toolscript_cli("auth", "secure", cwd=directory, env=env, timeout=60)
        assert signed.returncode == 0, signed.stderr
        gateway = GatewayProcess(
            json.loads((directory / ".toolscript.json").read_text()), directory, env=env
        )
        try:
            _wait_for_state(gateway, "connected")
            (directory / "echo.ts").write_text(ECHOES_ITS_TOKEN)
            done = toolscript_cli("exec", "echo.ts", cwd=directory, env=env, timeout=120)
            assert done.returncode == 0, done.stderr
            assert json.loads(done.stdout) == {"long": True, "failed": True, "leaked": False}
            token = json.loads(kept_files(env)[0].read_text())["tokens"]["access_token"]
            shown = gateway.client.get("types", params={"server": "secure", "tool": "my_token"})
            assert (
                shown.status_code == 200
                and shown.json()["recent"][0]["result"] == '{"result":"***"}'
            )
            runs = toolscript_cli("runs", "--json", cwd=directory, env=env)
            (run,) = json.loads(runs.stdout)
            listed = toolscript_cli("runs", "show", run["id"], cwd=directory, env=env)
            assert "refused" in listed.stdout and token not in listed.stdout
        finally:
            gateway.stop()
        from toolscript.plumbing.paths import project_state_dir

        state = project_state_dir(directory)
        kept = b"".join(p.read_bytes() for p in state.glob("*") if p.is_file())
        assert token.encode() not in kept
        assert token not in gateway.log
    finally:
        server.stop()
