"""The MCP face asks before each tool call whether the project's config can be used: the
loader's error while it cannot (read again at each call), nothing once it can (read again
only when its file, the trust records or a file it imports changed); the error as a tool
result with the file's control characters made visible."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from toolscript.errors import ConfigError, UntrustedConfigError
from toolscript.mcpface import configwatch
from toolscript.mcpface.backend import Backend, error_answer
from toolscript.mcpface.configwatch import ConfigWatch
from toolscript.mcpface.server import build_server
from toolscript.mcpface.tools import CONFIG_BROKEN, INSTRUCTIONS
from toolscript.store.trust import trust

WRONG_TYPE = '{"mcpServers": {"time": {"command": 5}}}'  # the field at 1:37
VALID = json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}})


def edit(path: Path, text: str) -> None:
    """Write ``text`` a second later than the file's last change, as an editor's save is."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


@pytest.fixture
def trusted(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLSCRIPT_TRUSTED_PATHS", str(repo))
    return repo / ".toolscript.json"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The configs the watch loaded, one entry a read."""
    seen: list[str | None] = []
    load = configwatch.load_config

    def counted(explicit: str | None, **options: object) -> object:
        seen.append(explicit)
        return load(explicit, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(configwatch, "load_config", counted)
    return seen


def test_the_loaders_error_until_the_file_is_fixed_and_again_when_it_breaks(
    trusted: Path, repo: Path
) -> None:
    trusted.write_text(WRONG_TYPE)
    watch = ConfigWatch(None, repo)
    with pytest.raises(ConfigError) as raised:
        watch.check()
    assert raised.value.message.startswith(f"{trusted}:1:37: mcpServers.time.command: ")
    assert "config schema" in (raised.value.hint or "")
    edit(trusted, VALID)
    watch.check()
    edit(trusted, "{")
    with pytest.raises(ConfigError, match="invalid JSON"):
        watch.check()


def test_a_usable_config_is_read_again_only_when_a_file_it_depends_on_changed(
    trusted: Path, repo: Path, reads: list[str | None]
) -> None:
    trusted.write_text(VALID)
    os.utime(trusted, ns=(1_000_000_000, 1_000_000_000))  # long settled
    watch = ConfigWatch(None, repo)
    for _ in range(3):
        watch.check()
    assert len(reads) == 1
    edit(trusted, VALID + "\n")
    watch.check()
    assert len(reads) == 2


def test_a_same_size_edit_within_the_clocks_tick_is_seen(trusted: Path, repo: Path) -> None:
    """A file system whose mtime ticks once a second gives an edit saved in the same second
    as the last read the same fingerprint: a file changed that recently is read again."""
    trusted.write_text(VALID)
    watch = ConfigWatch(None, repo)
    watch.check()
    tick = trusted.stat().st_mtime_ns
    broken = '{"mcpServers": {"time": {"command": 5' + " " * (len(VALID) - 40) + "}}}"
    assert len(broken) == len(VALID)
    trusted.write_text(broken)  # in place: the same inode, the same size
    os.utime(trusted, ns=(tick, tick))  # and the same tick
    with pytest.raises(ConfigError, match=r"mcpServers\.time\.command"):
        watch.check()


def test_a_config_that_cannot_be_used_is_read_again_at_each_check(
    trusted: Path, repo: Path, reads: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What it names may be what changes: here an environment variable it expands."""
    monkeypatch.delenv("FACE_WATCH_TOKEN", raising=False)
    trusted.write_text(json.dumps({"localTools": {"dir": "${FACE_WATCH_TOKEN}"}}))
    watch = ConfigWatch(None, repo)
    for _ in range(2):
        with pytest.raises(ConfigError, match="FACE_WATCH_TOKEN is not set"):
            watch.check()
    assert len(reads) == 2
    monkeypatch.setenv("FACE_WATCH_TOKEN", ".")
    watch.check()


def test_an_untrusted_config_is_refused_until_the_user_trusts_it(repo: Path) -> None:
    path = repo / ".toolscript.json"
    path.write_text(VALID)
    watch = ConfigWatch(None, repo)
    with pytest.raises(UntrustedConfigError):
        watch.check()
    trust(path)  # the trust records changed: read again
    watch.check()
    edit(path, VALID + " ")  # an edit the user has not trusted yet
    with pytest.raises(UntrustedConfigError):
        watch.check()


def test_a_gateway_named_by_url_is_used_whatever_the_projects_config_says(
    trusted: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trusted.write_text(WRONG_TYPE)
    face = Backend(config=None, cache=None, lifeline=object(), cwd=repo)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        face.check_config()
    monkeypatch.setenv("TOOLSCRIPT_GATEWAY_URL", "http://127.0.0.1:9/token")
    face.check_config()


def test_a_config_error_as_a_tool_result_shows_the_files_controls_and_what_to_do() -> None:
    error = ConfigError(
        "/p/.toolscript.json:1:20: bogus\x1b[2J: unknown key", hint="see\x07 the schema"
    )
    answer = error_answer(error)
    assert answer.is_error
    assert "\x1b" not in answer.text and "\x07" not in answer.text
    assert answer.text.startswith("/p/.toolscript.json:1:20: bogus\\u001b[2J: unknown key\n")
    assert "\nhint: see\\u0007 the schema\n" in answer.text
    assert answer.text.endswith("the next tool call reads it again.")

    untrusted = error_answer(
        UntrustedConfigError(
            "/p/.toolscript.json is not trusted yet",
            hint="read it, then run `toolscript trust` in /p",
        )
    )
    assert "the user must read it and run `toolscript trust` in /p" in untrusted.text
    assert "reads it again" not in untrusted.text


def test_the_instructions_say_in_one_line_that_the_config_cannot_be_used() -> None:
    """Only when it cannot be used as the face starts: every byte is in every session."""
    usable = build_server(object(), config_broken=False)  # type: ignore[arg-type]
    broken = build_server(object(), config_broken=True)  # type: ignore[arg-type]
    assert usable.create_initialization_options().instructions == INSTRUCTIONS
    said = broken.create_initialization_options().instructions or ""
    assert said == INSTRUCTIONS + CONFIG_BROKEN and CONFIG_BROKEN.count("\n") == 1
    assert "config cannot be used" in said
