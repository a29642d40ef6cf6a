"""Red team pass on secrets at rest: the project's ``.doit.db`` is no guessing oracle.

The fetch task's record of a server's settings (``settings_digest``) was a plain SHA-256 of
the settings, ``env`` and header values included, kept in ``.toolscript/.doit.db``: a file
in the project, 0644, that other users, backups and archives of the folder read. Everything
else in it is in the config, so a guess of a password (``"DB_PASSWORD": "${DB_PASSWORD}"``)
was checked offline against it. It is keyed by the user's own digest key now (0600, in
their cache), as the artifacts' digests are; the gateway's side is checked with a real
``.doit.db`` in tests/integration/test_attacks_secrets_at_rest.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from toolscript.config import ServerConfig
from toolscript.pipeline.tasks import settings as task_settings
from toolscript.pipeline.tasks.fetch import digest_settings, settings_digest


def _server(password: str) -> ServerConfig:
    return ServerConfig(
        name="db", transport="stdio", command="db-mcp", env={"DB_PASSWORD": password}
    )


def _unkeyed(server: ServerConfig) -> str:
    """The digest as it was made, which anyone holding the config can make for a guess."""
    settings = digest_settings(server)
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def _digest_in(home: Path, server: ServerConfig, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    task_settings.digest_key.cache_clear()
    return settings_digest(server)


def test_a_guess_of_a_servers_secret_cannot_be_checked_against_the_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _digest_in(tmp_path / "mine", _server("Winter2024!"), monkeypatch)
    assert kept != _unkeyed(_server("Winter2024!"))  # the right guess, made as before
    assert kept == _digest_in(tmp_path / "mine", _server("Winter2024!"), monkeypatch)
    assert kept != _digest_in(tmp_path / "mine", _server("Winter2025!"), monkeypatch)
    # another user's key (the attacker's own install) makes another digest
    assert kept != _digest_in(tmp_path / "theirs", _server("Winter2024!"), monkeypatch)
    task_settings.digest_key.cache_clear()
