"""Where toolscript keeps things: a cache SQLite can open, errors that say what moves a folder."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from toolscript.plumbing.paths import (
    project_cache_dir,
    storage_error,
    user_cache_dir,
    user_state_dir,
)


def test_a_project_cache_stays_in_the_project_when_sqlite_can_reach_it(tmp_path: Path) -> None:
    assert project_cache_dir(tmp_path) == tmp_path / ".toolscript"


def test_a_project_too_deep_for_sqlite_keeps_its_cache_in_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLSCRIPT_CACHE_DIR", raising=False)
    deep = tmp_path.joinpath(*["d" * 60] * 8)
    chosen = project_cache_dir(deep)
    assert chosen.parent == user_cache_dir() / "projects"
    assert len(str(chosen / "embeddings.db-journal")) < 512
    assert project_cache_dir(deep) == chosen  # the same folder every time
    assert project_cache_dir(deep / "other") != chosen


def test_a_folder_that_cannot_be_written_names_the_variable_that_moves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLSCRIPT_HOME", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    failure = OSError(errno.EROFS, "Read-only file system", str(tmp_path / "state" / "toolscript"))
    error = storage_error(failure)
    assert error.message.endswith("Read-only file system")
    assert error.hint == "set TOOLSCRIPT_HOME (or XDG_STATE_HOME) to a folder you can write"
    inside = OSError(errno.ENOSPC, "No space left", str(tmp_path / ".toolscript" / "x.db"))
    assert "TOOLSCRIPT_CACHE_DIR" in (storage_error(inside).hint or "")


def test_the_cache_dir_variable_is_named_when_its_folder_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It said "set TOOLSCRIPT_HOME", which moves nothing that TOOLSCRIPT_CACHE_DIR names.
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOOLSCRIPT_CACHE_DIR", str(tmp_path / "a-file" / "cache"))
    failure = OSError(errno.ENOTDIR, "Not a directory", str(tmp_path / "a-file" / "cache"))
    assert storage_error(failure).hint == (
        "TOOLSCRIPT_CACHE_DIR (or --cache-dir) names that folder: point it at one you can write"
    )


def test_a_project_folder_that_cannot_be_written_keeps_its_cache_in_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cloned repository on a read-only mount: every command needing a gateway failed, as
    # the ephemeral one could not make .toolscript/ beside the config.
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLSCRIPT_CACHE_DIR", raising=False)
    project = tmp_path / "cloned"
    project.mkdir()
    project.chmod(0o555)
    try:
        if os.access(project, os.W_OK):
            pytest.skip("this user writes a folder whatever its mode (root)")
        chosen = project_cache_dir(project)
        assert chosen.parent == user_cache_dir() / "projects"
        assert project_cache_dir(project) == chosen
    finally:
        project.chmod(0o755)
    assert project_cache_dir(project) == project / ".toolscript"


def test_a_relative_xdg_folder_is_ignored_as_the_spec_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # XDG_CACHE_HOME=cache named a folder of whatever folder a command ran in: a cache, a
    # state and a trust kept per folder, and exec's traceback (a relative file URL).
    from toolscript.store.trust import trust_file

    monkeypatch.delenv("TOOLSCRIPT_HOME", raising=False)
    monkeypatch.delenv("TOOLSCRIPT_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for variable in ("XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(variable, variable.lower())
    home = tmp_path / "home"
    assert user_cache_dir() == home / ".cache" / "toolscript"
    assert user_state_dir() == home / ".local" / "state" / "toolscript"
    assert trust_file() == home / ".config" / "toolscript" / "trusted.json"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert user_cache_dir() == tmp_path / "cache" / "toolscript"


@pytest.mark.parametrize("variable", ["TOOLSCRIPT_HOME", "TOOLSCRIPT_CONFIG_HOME"])
def test_a_relative_toolscript_home_is_refused_with_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    # TOOLSCRIPT_HOME=tshome kept a home in each folder a command ran in: a gateway started
    # in a project's subfolder was "not running" from its root.
    from toolscript.errors import UsageError
    from toolscript.store.trust import trust_file

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(variable, "tshome")
    with pytest.raises(UsageError) as refused:
        user_state_dir() if variable == "TOOLSCRIPT_HOME" else trust_file()
    assert refused.value.message.startswith(f"{variable} is a relative path (tshome)")
    assert refused.value.hint == f'make it absolute, as `export {variable}="$HOME/tshome"`'
    assert refused.value.exit_code == 2
    monkeypatch.setenv(variable, "~/tshome")  # the shell left it unexpanded: still the home's
    chosen = user_state_dir() if variable == "TOOLSCRIPT_HOME" else trust_file().parent
    assert chosen == tmp_path / "tshome"
