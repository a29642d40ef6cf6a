"""Red team pass on secrets at rest: the agent's URL the plugin's SessionStart hook writes.

The hook appends ``export TOOLSCRIPT_GATEWAY_URL=<agent URL>`` to Claude Code's
``CLAUDE_ENV_FILE``; where that file was not there yet, ``open(..., "a")`` made it with the
umask's mode (0644 under 022, 0666 under 000): another user of the machine who read it ran
scripts through the gateway, calling the user's servers with the user's credentials. A file
the hook makes is 0600; one Claude Code made keeps its own mode.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from toolscript.cli import hooks


def test_an_env_file_the_hook_makes_is_its_users_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "session-env" / "hook.sh"
    env_file.parent.mkdir()
    monkeypatch.setenv("CLAUDE_ENV_FILE", str(env_file))
    before = os.umask(0)
    try:
        hooks._export("http://127.0.0.1:4100/owner-token-abc")
    finally:
        os.umask(before)
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    (line,) = env_file.read_text().splitlines()
    assert line.startswith("export TOOLSCRIPT_GATEWAY_URL=http://127.0.0.1:4100/")
    assert "owner-token-abc" not in line  # the agent's token, never the gateway's own
    env_file.chmod(0o640)  # one Claude Code made: appended to, its mode kept
    hooks._export("http://127.0.0.1:4100/owner-token-abc")
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o640
    assert len(env_file.read_text().splitlines()) == 2
