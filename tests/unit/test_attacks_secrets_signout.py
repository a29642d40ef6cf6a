"""Red team pass on secrets at rest: a sign-in the user forgot stays forgotten.

- A gateway that read a sign-in's tokens, then saw it forgotten (``auth --logout``) or
  replaced (a new ``toolscript auth``), keeps no refresh of it: the SDK's refresh was written
  back whole, the sign-in listed again and used at every later start (the gateway's side,
  with a real OAuth server, is in tests/integration/test_attacks_secrets_at_rest.py).
- A sign-in whose server the config no longer names (taken out, its URL changed, the project
  gone) can be signed out by the name or URL ``auth --list`` shows: ``auth --logout`` said
  "server not found", and its refresh token stayed on disk with no command to remove it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthToken
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.errors import UsageError
from toolscript.store import tokens

URL = "http://127.0.0.1:9/mcp"


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOOLSCRIPT_KEYRING", "0")
    return tmp_path / "home"


def _sign_in(url: str, server: str, refresh: str) -> None:
    pending = tokens.PendingSignIn(None)
    asyncio.run(pending.set_tokens(OAuthToken(access_token="a-" + refresh, refresh_token=refresh)))
    tokens.TokenStore(url, server).keep(pending)


def test_a_refresh_of_a_sign_in_forgotten_since_is_not_kept(home: Path) -> None:
    _sign_in(URL, "secure", "refresh-one")
    held = tokens.TokenStore(URL, "secure")  # what a running gateway holds
    assert asyncio.run(held.get_tokens()) is not None and not held.sign_in_changed()
    assert tokens.forget(URL)  # toolscript auth --logout secure
    assert held.sign_in_changed()
    asyncio.run(held.set_tokens(OAuthToken(access_token="b", refresh_token="refresh-two")))
    assert tokens.signed_in() == [] and not list((home / "auth").glob("*.json"))


def test_a_refresh_of_a_replaced_sign_in_leaves_the_new_one(home: Path) -> None:
    _sign_in(URL, "secure", "refresh-old")
    held = tokens.TokenStore(URL, "secure")
    asyncio.run(held.get_tokens())
    _sign_in(URL, "secure", "refresh-new")  # toolscript auth secure again
    asyncio.run(held.set_tokens(OAuthToken(access_token="b", refresh_token="refresh-stale")))
    kept = asyncio.run(tokens.TokenStore(URL, "secure").get_tokens())
    assert kept is not None and kept.refresh_token == "refresh-new"


def test_a_server_taken_out_of_the_config_can_be_signed_out(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    monkeypatch.chdir(project)
    _sign_in(URL, "old", "refresh-old")
    _sign_in("http://127.0.0.1:9/other", "twin", "refresh-1")
    _sign_in("http://127.0.0.1:10/other", "twin", "refresh-2")
    runner = CliRunner()
    done = runner.invoke(app, ["auth", "--logout", "old"])
    assert done.exit_code == 0, done.output
    assert "signed out of old (http://127.0.0.1:9/mcp)" in done.output
    assert [s.server for s in tokens.signed_in()] == ["twin", "twin"]
    both = runner.invoke(app, ["auth", "--logout", "twin"])
    assert isinstance(both.exception, UsageError)  # exit 2 (CliRunner leaves it unshown)
    assert "2 sign-ins are kept for a server named 'twin'" in str(both.exception)
    by_url = runner.invoke(app, ["auth", "--logout", "http://127.0.0.1:10/other"])
    assert by_url.exit_code == 0, by_url.output
    assert [s.url for s in tokens.signed_in()] == ["http://127.0.0.1:9/other"]
    unknown = runner.invoke(app, ["auth", "--logout", "never"])
    assert unknown.exit_code != 0 and "never" in str(unknown.exception)


def test_a_kept_sign_ins_url_shows_no_password_it_holds(home: Path) -> None:
    """A sign-in is kept under its URL expanded (``https://me:${PASSWORD}@host/mcp``, a
    ``?api_key=${KEY}``): ``auth --list`` printed the values."""
    url = "http://me:hunter2-horse@127.0.0.1:9/mcp?api_key=k-9f8e7d6c5b4a"
    _sign_in(url, "keyed", "refresh-k")
    runner = CliRunner()
    for args in (["auth", "--list"], ["auth", "--list", "--json"]):
        shown = runner.invoke(app, args)
        assert shown.exit_code == 0, shown.output
        assert "keyed" in shown.stdout and "127.0.0.1:9/mcp" in shown.stdout
        assert "hunter2-horse" not in shown.stdout and "k-9f8e7d6c5b4a" not in shown.stdout
