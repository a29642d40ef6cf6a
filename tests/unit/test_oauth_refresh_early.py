"""The gateway refreshes kept tokens before they expire: a server counts their life in whole
seconds from when it issued them, so a token used to its last second got a 401, which asks
for a sign-in and dropped the session the gateway had just reported connected."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from mcp.shared.auth import OAuthToken

from toolscript.config import ServerConfig
from toolscript.store.tokens import PendingSignIn, TokenStore
from toolscript.upstream.oauth import EARLY_REFRESH, gateway_auth


def test_kept_and_refreshed_tokens_count_as_expired_ahead_of_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))
    monkeypatch.setenv("TOOLSCRIPT_KEYRING", "0")
    server = ServerConfig(name="secure", transport="sse", url="http://127.0.0.1:1/sse")
    assert server.url is not None
    signed = PendingSignIn(None)
    asyncio.run(signed.set_tokens(OAuthToken(access_token="a", expires_in=3600, refresh_token="r")))
    TokenStore(server.url, server.name).keep(signed)
    provider = gateway_auth(server)
    assert provider is not None
    asyncio.run(provider._initialize())
    context = provider.context
    assert context.token_expiry_time is not None
    assert context.token_expiry_time <= time.time() + 3600 - EARLY_REFRESH
    # a refresh's short-lived token: a third of its life taken off
    context.update_token_expiry(OAuthToken(access_token="b", expires_in=3, refresh_token="r"))
    assert context.token_expiry_time <= time.time() + 2
    assert context.token_expiry_time > time.time()  # still usable meanwhile
    # initialized again (after a refresh failed): taken off once, not twice
    asyncio.run(provider._initialize())
    context.update_token_expiry(OAuthToken(access_token="c", expires_in=30, refresh_token="r"))
    assert context.token_expiry_time > time.time() + 30 - 10 - 1
