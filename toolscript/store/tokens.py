"""OAuth sign-ins, kept per user outside every project (so they are never committed).

One file per server URL under ``user_state_dir()/auth`` (the folder 0700, each file 0600,
written whole through ``write_private``). The secrets (the tokens the server's
authorization server issued, the client it registered for toolscript) go to the OS
keyring when the ``keyring`` package is installed and has a backend that works (macOS
Keychain, Windows Credential Locker, Secret Service, or one named by
``PYTHON_KEYRING_BACKEND``; keyrings.alt's file backends only when named so); the file
then keeps only what ``auth --list`` shows. Without
one, or with ``TOOLSCRIPT_KEYRING=0``, the file holds them. ``TokenStore`` is the SDK's
``TokenStorage`` for one server. Nothing here prints or logs a token.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolscript.plumbing.deferredinit import defer_mcp_inits
from toolscript.plumbing.paths import user_state_dir
from toolscript.plumbing.privatefile import write_private

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = ["PendingSignIn", "SignIn", "TokenStore", "auth_dir", "forget", "signed_in"]


KEYRING_SERVICE = "toolscript-oauth"
defer_mcp_inits()  # before the ``mcp.shared.auth`` imports below
_SECRETS = ("tokens", "client")


def auth_dir() -> Path:
    return user_state_dir() / "auth"


def _keyring() -> Any:
    """The ``keyring`` module when its backend can keep secrets here, else None (files)."""
    if os.environ.get("TOOLSCRIPT_KEYRING", "").lower() in ("0", "false", "no", "off"):
        return None
    try:
        import keyring
        from keyring.backends import fail, null

        backend = keyring.get_keyring()
    except Exception:  # not installed, or a backend that fails to load
        return None
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    # keyrings.alt's backends are files of their own (some in plain text), picked only
    # because nothing better is there: ours is 0600 already. Used when named on purpose.
    if type(backend).__module__.startswith("keyrings.alt") and not os.environ.get(
        "PYTHON_KEYRING_BACKEND"
    ):
        return None
    return keyring


def _path_for(url: str) -> Path:
    return auth_dir() / f"{hashlib.sha256(url.encode()).hexdigest()[:24]}.json"


@dataclass(frozen=True)
class SignIn:
    """What ``auth --list`` shows of one kept sign-in: never a token."""

    url: str
    server: str
    signed_in_at: float
    expires_at: float | None  # of the access token; refreshed before then while in use
    refreshable: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "url": self.url,
            "signed_in_at": self.signed_in_at,
            "expires_at": self.expires_at,
            "refreshable": self.refreshable,
        }


class TokenStore:
    """The SDK's ``TokenStorage`` for one server URL, in a private file."""

    def __init__(self, url: str, server: str) -> None:
        self.url, self.server = url, server
        self.path = _path_for(url)
        # When the sign-in whose tokens ``get_tokens`` gave was made: the gateway holds them
        # in memory, and must not use or keep them once that sign-in is forgotten or replaced.
        self._held: float | None = None

    def _file(self) -> dict[str, Any]:
        """What the file says, without the secrets a keyring may keep."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("url") == self.url else {}

    def _read(self) -> dict[str, Any]:
        data = self._file()
        if data.pop("keyring", False):
            keyring = _keyring()
            try:
                kept = keyring.get_password(KEYRING_SERVICE, self.url) if keyring else None
            except Exception:  # a locked or broken keyring: as if nothing were kept
                kept = None
            data.update(json.loads(kept) if kept else {})
        return data

    def _write(self, data: dict[str, Any]) -> None:
        record = {**data, "url": self.url, "server": self.server}
        secrets = {key: record.pop(key) for key in _SECRETS if key in record}
        keyring = _keyring()
        stored = False
        if keyring is not None:
            try:
                keyring.set_password(KEYRING_SERVICE, self.url, json.dumps(secrets))
                stored = True
            except Exception:  # the keyring refused: the private file keeps them
                stored = False
        if stored:  # what --list shows, no secret
            record["keyring"] = True
            tokens = secrets.get("tokens") or {}
            record["signed_in"] = bool(tokens)
            record["refreshable"] = bool(tokens.get("refresh_token"))
        else:
            record.update(secrets)
        write_private(self.path, json.dumps(record))

    def has_tokens(self) -> bool:
        return bool(self._read().get("tokens"))

    def stamp(self) -> float:
        """When the kept tokens last changed (0: none): a gateway waiting for a sign-in polls
        it (the file alone: no keyring read every second)."""
        return float(self._file().get("updated_at") or 0.0)

    def _kept_sign_in(self) -> float | None:
        """When the sign-in kept now was made (the file alone), None when none is kept."""
        made = self._file().get("signed_in_at")
        return float(made) if isinstance(made, int | float) else None

    def sign_in_changed(self) -> bool:
        """Whether the sign-in whose tokens were read is no longer the one kept: signed out
        (``auth --logout``) or replaced by a new ``toolscript auth``."""
        return self._held is not None and self._kept_sign_in() != self._held

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        data = self._read()
        made = data.get("signed_in_at")
        self._held = float(made) if isinstance(made, int | float) else None
        if not data.get("tokens"):
            return None
        token = OAuthToken.model_validate(data["tokens"])
        expires_at = data.get("expires_at")
        if expires_at is not None:  # what is left of its life, as the SDK counts from now
            token.expires_in = max(0, int(expires_at - time.time()))
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        if self.sign_in_changed():
            # A refresh of a sign-in forgotten since: kept, it was the sign-in again, listed
            # by ``auth --list`` and used at the next start, after the user signed out.
            return
        data = self._read()
        _put_tokens(data, tokens)
        self._write(data)

    def authorization_server(self) -> dict[str, Any] | None:
        """The authorization server's metadata the sign-in found (None for a sign-in kept
        before it was kept)."""
        found = self._file().get("authorization_server")
        return found if isinstance(found, dict) else None

    def client_info(self) -> OAuthClientInformationFull | None:
        """The client registered for toolscript (by the SDK, or from the config)."""
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.sign_in_changed():
            return
        data = self._read()
        data["client"] = client_info.model_dump(mode="json", exclude_none=True)
        self._write(data)

    def keep(self, signed: PendingSignIn) -> None:
        """A sign-in that succeeded replaces whatever was kept for this server."""
        data: dict[str, Any] = {"signed_in_at": time.time()}
        if signed.authorization_server is not None:
            data["authorization_server"] = signed.authorization_server
        if signed.client is not None:
            data["client"] = signed.client.model_dump(mode="json", exclude_none=True)
        assert signed.tokens is not None
        _put_tokens(data, signed.tokens, signed.received_at)
        self._write(data)


class PendingSignIn:
    """The SDK's ``TokenStorage`` while a sign-in is under way: in memory, so a sign-in that
    fails leaves the kept one (if any) as it was; ``TokenStore.keep`` keeps a good one."""

    def __init__(self, client: OAuthClientInformationFull | None) -> None:
        self.client = client  # an app registered by hand; else the SDK registers one
        self.tokens: OAuthToken | None = None
        # The authorization server's metadata the sign-in found (its token endpoint): no
        # secret, kept so that a refresh goes where the tokens came from.
        self.authorization_server: dict[str, Any] | None = None
        # When they came: their life counts from then, not from when the sign-in is kept
        # (after a session was opened and closed with them, seconds later under load).
        self.received_at: float | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.received_at = time.time()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def _put_tokens(data: dict[str, Any], tokens: OAuthToken, received_at: float | None = None) -> None:
    """``received_at``: when the tokens came (now if not said), whence their life counts."""
    now = time.time()
    start = now if received_at is None else received_at
    data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
    data["expires_at"] = start + tokens.expires_in if tokens.expires_in is not None else None
    data["updated_at"] = now
    data.setdefault("signed_in_at", now)


def signed_in() -> list[SignIn]:
    """Every kept sign-in, by server name."""
    found = []
    for path in sorted(auth_dir().glob("*.json")) if auth_dir().is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        tokens = data.get("tokens") or {}
        if not (tokens or data.get("signed_in")):
            continue
        found.append(
            SignIn(
                url=str(data.get("url")),
                server=str(data.get("server")),
                signed_in_at=float(data.get("signed_in_at") or 0.0),
                expires_at=data.get("expires_at"),
                refreshable=bool(tokens.get("refresh_token") or data.get("refreshable")),
            )
        )
    return sorted(found, key=lambda sign_in: sign_in.server)


def forget(url: str) -> bool:
    """Remove everything kept for ``url`` (tokens and registered client); False if nothing was."""
    path = _path_for(url)
    keyring = _keyring()
    if keyring is not None:
        with contextlib.suppress(Exception):  # nothing kept there, or a keyring that refuses
            keyring.delete_password(KEYRING_SERVICE, url)
    for partial in path.parent.glob(f"{path.name}.*.tmp"):  # a write cut short by a full disk
        with contextlib.suppress(OSError):
            partial.unlink()
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
