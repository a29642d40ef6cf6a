"""Red team pass on secrets in transit: credentials sent over plain ``http://`` are said so.

A server entry ``"url": "http://api.example.com/mcp"`` with ``"headers": {"X-Api-Key":
"${API_KEY}"}`` sent the key unencrypted to another machine, and nothing said it: not
``trust`` (where the person decides), not ``config check``, not the gateway's log, not
``toolscript auth`` (whose tokens then go so too). Each says it now; this machine's
addresses (``localhost``, 127.0.0.0/8, ``::1``, ``0.0.0.0``) and ``https://`` are not warned about, nor a
server sent nothing secret.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.config import parse_config
from toolscript.upstream import oauth

SERVERS = {
    "mcpServers": {
        "api": {"url": "http://api.example.com/mcp", "headers": {"X-Api-Key": "${API_KEY}"}},
        "basic": {"type": "sse", "url": "http://me:${PW}@10.0.0.5:8080/sse"},
        "client": {
            "url": "http://auth.example.com/mcp",
            "oauth": {"clientId": "app", "clientSecret": "${CLIENT_SECRET}"},
        },
        "tls": {"url": "https://api.example.com/mcp", "headers": {"X-Api-Key": "${API_KEY}"}},
        "here": {"url": "http://localhost:3000/mcp", "headers": {"X-Api-Key": "${API_KEY}"}},
        "v6": {"url": "http://[::1]:3000/mcp", "headers": {"X-Api-Key": "${API_KEY}"}},
        "loop": {"url": "http://127.0.0.2:3000/mcp", "headers": {"X-Api-Key": "${API_KEY}"}},
        "any": {"url": "http://0.0.0.0:3000/mcp", "headers": {"X-Api-Key": "${API_KEY}"}},
        "open": {"url": "http://docs.example.com/mcp"},
    }
}
ENV = {"API_KEY": "k-123", "PW": "hunter2", "CLIENT_SECRET": "s3cret"}


def test_the_config_warns_of_each_server_sent_credentials_in_the_clear(tmp_path: Path) -> None:
    loaded = parse_config(json.dumps(SERVERS), tmp_path / ".toolscript.json", ENV)
    said = [w for w in loaded.warnings if "unencrypted" in w]
    assert said == [
        "server 'api' is sent its headers (X-Api-Key) unencrypted: its URL is http://, not "
        "https://, and api.example.com is not this machine",
        "server 'basic' is sent the credentials in its URL unencrypted: its URL is http://, "
        "not https://, and 10.0.0.5 is not this machine",
        "server 'client' is sent its OAuth client secret unencrypted: its URL is http://, "
        "not https://, and auth.example.com is not this machine",
    ]
    assert not any(value in " ".join(loaded.warnings) for value in ENV.values())


def test_trust_and_auth_say_it_where_the_person_decides(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / ".toolscript.json").write_text(json.dumps(SERVERS))
    shown = CliRunner().invoke(app, ["trust"], env=ENV)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    api = lines.index("  api: http://api.example.com/mcp")
    assert lines[api + 2] == (
        "    is sent its headers (X-Api-Key) unencrypted: its URL is http://, not https://, "
        "and api.example.com is not this machine"
    )
    assert sum("unencrypted" in line for line in lines) == 3
    as_json = json.loads(CliRunner().invoke(app, ["trust", "--json"], env=ENV).stdout)
    flagged = {s["name"] for s in as_json["servers"] if s["unencrypted"]}
    assert flagged == {"api", "basic", "client"}

    async def no_network(*args: object, **kwargs: object) -> None:  # a unit test goes nowhere
        raise oauth.SignInFailed("not signed in: this test reaches no network")

    monkeypatch.setattr(oauth, "sign_in", no_network)
    signing = CliRunner().invoke(app, ["auth", "open", "--no-browser"], env=ENV)
    assert isinstance(signing.exception, oauth.SignInFailed)
    assert (
        "warning: open's URL is http://, not https://: its tokens go to docs.example.com "
        "unencrypted" in signing.stderr
    )


def test_a_server_on_this_machine_is_never_reached_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With HTTP_PROXY set and no NO_PROXY (a corporate shell), a server on 127.0.0.1 was
    reached through the proxy: another machine was sent its headers and OAuth tokens in the
    clear, and asked its own 127.0.0.1. This machine's addresses go direct (as the CLI's
    client of the gateway does); any other host through the proxy."""
    import httpx2

    from toolscript.upstream.sdk import create_mcp_http_client

    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, "http://proxy.corp.example:3128")
    client = create_mcp_http_client(headers={"X-Api-Key": "k"})
    here = [
        "http://127.0.0.1:3000/mcp",
        "http://127.8.0.1/mcp",
        "http://localhost:3000/mcp",
        "http://api.localhost/mcp",
        "http://[::1]:3000/mcp",
        "http://0.0.0.0:3000/mcp",
    ]
    for url in here:
        assert client._transport_for_url(httpx2.URL(url)) is client._transport, url
    for url in ("http://api.example.com/mcp", "https://localhost.example.com/mcp"):
        assert client._transport_for_url(httpx2.URL(url)) is not client._transport, url
