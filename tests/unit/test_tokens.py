"""Where sign-ins are kept: the OS keyring only when a real one works, else private files."""

from __future__ import annotations

import pytest

from toolscript.store import tokens


def test_a_keyring_that_is_a_file_of_its_own_is_used_only_when_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keyring = pytest.importorskip("keyring", reason="keyring comes with the dev extra")
    alt = pytest.importorskip("keyrings.alt.file", reason="keyrings.alt comes with the dev extra")
    from keyring.backends import fail

    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    monkeypatch.delenv("TOOLSCRIPT_KEYRING", raising=False)
    monkeypatch.setattr(keyring, "get_keyring", lambda: alt.PlaintextKeyring())
    assert tokens._keyring() is None  # picked for want of better: our 0600 file is as good
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    assert tokens._keyring() is keyring  # named on purpose
    monkeypatch.setenv("TOOLSCRIPT_KEYRING", "0")
    assert tokens._keyring() is None  # turned off
    monkeypatch.delenv("TOOLSCRIPT_KEYRING")
    monkeypatch.setattr(keyring, "get_keyring", lambda: fail.Keyring())
    assert tokens._keyring() is None  # no backend at all


def test_nothing_kept_lists_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))
    assert tokens.signed_in() == []
    assert tokens.forget("http://127.0.0.1:1/mcp") is False
    store = tokens.TokenStore("http://127.0.0.1:1/mcp", "x")
    assert (store.has_tokens(), store.stamp()) == (False, 0.0)


def test_kept_tokens_count_their_life_from_when_they_came(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """A sign-in is kept after a session was opened and closed with its tokens (seconds under
    load): their life counted from then, the gateway sent a token the server had let expire,
    got a 401 and dropped the session it had just reported connected."""
    import asyncio
    from types import SimpleNamespace

    from mcp.shared.auth import OAuthToken

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))
    monkeypatch.setenv("TOOLSCRIPT_KEYRING", "0")
    clock = [1000.0]
    monkeypatch.setattr(tokens, "time", SimpleNamespace(time=lambda: clock[0]))
    url = "http://127.0.0.1:1/sse"
    for life, kept_after, left in ((3600, 20.0, 3600 - 20), (3, 1.5, 1)):
        pending = tokens.PendingSignIn(None)
        token = OAuthToken(access_token="a", expires_in=life, refresh_token="r")
        asyncio.run(pending.set_tokens(token))
        clock[0] += kept_after
        store = tokens.TokenStore(url, "secure")
        store.keep(pending)
        (kept,) = tokens.signed_in()
        assert kept.expires_at == clock[0] - kept_after + life
        loaded = asyncio.run(store.get_tokens())
        assert loaded is not None and loaded.expires_in == left
