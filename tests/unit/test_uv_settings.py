"""The settings an external local tool's uv worker reads: the user's or the machine's,
never a project's (``upstream/local.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_uv_settings_are_the_users_else_the_machines_never_a_projects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An external tool's worker runs uv with --no-config and one settings file by name:
    the user's, else the system's (a company's mirror), found as uv finds them."""
    from toolscript.upstream.local import _user_uv_config

    user, system = tmp_path / "user", tmp_path / "system"
    monkeypatch.delenv("UV_CONFIG_FILE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(system))
    found = _user_uv_config()
    assert found is None or found == Path("/etc/uv/uv.toml")  # (this machine's own, if any)
    (system / "uv").mkdir(parents=True)
    (system / "uv" / "uv.toml").write_text('index-url = "https://mirror.example/simple"\n')
    assert _user_uv_config() == system / "uv" / "uv.toml"
    (user / "uv").mkdir(parents=True)
    (user / "uv" / "uv.toml").write_text("")
    assert _user_uv_config() == user / "uv" / "uv.toml"
    monkeypatch.setenv("UV_CONFIG_FILE", str(tmp_path / "chosen.toml"))
    assert _user_uv_config() == tmp_path / "chosen.toml"
