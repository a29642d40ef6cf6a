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
