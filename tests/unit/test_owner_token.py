"""Where the gateway's own token and the MCP face's secret are kept: the user's 0700 cache
only (findings 2 and 10 of the attack run, issue 42)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from toolscript.gateway.guard import agent_url
from toolscript.gateway.state import owner_url, sessions_dir, write_gateway_state
from toolscript.mcpface.server import face_token, face_token_file

OWNER = "http://127.0.0.1:4100/owner-secret-0123456789abcdefghij"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_owner_url_is_found_from_the_agents_in_the_state_file(tmp_path: Path) -> None:
    write_gateway_state(tmp_path / "project" / ".toolscript", {"url": OWNER, "pid": 1})
    assert owner_url(agent_url(OWNER)) == OWNER
    assert owner_url(OWNER) == OWNER  # the owner's URL is its own
    assert owner_url(agent_url("http://127.0.0.1:4100/another")) is None


def test_the_owner_url_is_found_from_the_agents_in_a_session_file() -> None:
    sessions_dir().mkdir(parents=True, exist_ok=True)
    (sessions_dir() / "s1.url").write_text(OWNER + "\n")
    assert owner_url(agent_url(OWNER) + "/") == OWNER


def test_a_state_file_naming_another_host_is_no_owner(tmp_path: Path) -> None:
    elsewhere = "http://evil.example:80/owner-secret-0123456789abcdefghij"
    write_gateway_state(tmp_path / "p", {"url": elsewhere, "pid": 1})
    assert owner_url(agent_url(elsewhere)) is None


def test_a_planted_project_mcp_token_is_ignored_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "project" / ".toolscript"
    cache.mkdir(parents=True)
    planted = "planted-by-the-repository-0123456789abcdef"
    (cache / "mcp-token").write_text(planted + "\n")
    (cache / "mcp-token").chmod(0o644)
    token = face_token(cache)
    assert token != planted and len(token) >= 32
    assert "ignoring" in capsys.readouterr().err
    kept = face_token_file(cache)
    assert not kept.is_relative_to(tmp_path / "project")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert face_token(cache) == token  # the URL survives restarts
    assert json.dumps(token) not in (cache / "mcp-token").read_text()
