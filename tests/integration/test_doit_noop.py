"""Standalone ``doit`` with nothing changed reads its database and starts no server; a changed
server setting, a server that was down, or ``doit -a fetch`` asks the server again."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURE_SERVER, run_doit
from toolscript.search.semantic import semantic_installed

# Notes each start in STARTS_FILE, refuses to start while DOWN_FILE exists, else the fixture.
WRAPPER = f"""
import os, sys
with open(os.environ["STARTS_FILE"], "a") as starts:
    starts.write("started\\n")
if os.path.exists(os.environ["DOWN_FILE"]):
    sys.exit(3)
os.execv(sys.executable, [sys.executable, {str(FIXTURE_SERVER)!r}])
"""


def project(tmp_path: Path, **env: str) -> Path:
    (tmp_path / "wrapper.py").write_text(WRAPPER)
    write_config(tmp_path, **env)
    return tmp_path


def write_config(tmp_path: Path, semantic: bool = False, **env: str) -> None:
    server: dict[str, Any] = {
        "command": sys.executable,
        "args": [str(tmp_path / "wrapper.py")],
        "env": {
            "STARTS_FILE": str(tmp_path / "starts"),
            "DOWN_FILE": str(tmp_path / "down"),
            **env,
        },
    }
    config = {"mcpServers": {"fx": server}, "search": {"semantic": semantic}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))


def doit(directory: Path, *args: str) -> str:
    done = run_doit(directory, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def starts(directory: Path) -> int:
    path = directory / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


def ran(output: str) -> list[str]:
    return [line[3:] for line in output.splitlines() if line.startswith(".  ")]


def test_doit_with_nothing_changed_starts_no_server(tmp_path: Path) -> None:
    directory = project(tmp_path)
    assert "fetch:fx" in ran(doit(directory))
    assert starts(directory) == 1
    assert ran(doit(directory)) == []
    listed = doit(directory, "list", "--all", "--status")
    assert {line.split()[0] for line in listed.splitlines()} == {"U"}, listed
    assert starts(directory) == 1  # neither run nor list started the server


def test_a_changed_server_setting_asks_the_server_again(tmp_path: Path) -> None:
    directory = project(tmp_path)
    doit(directory)
    write_config(directory, SOME_SETTING="1")
    # Asked again; the same tools leave everything after the fetch up to date.
    assert ran(doit(directory)) == ["fetch:fx"]
    assert starts(directory) == 2
    assert ran(doit(directory)) == []
    assert starts(directory) == 2


def test_doit_always_fetching_asks_every_server(tmp_path: Path) -> None:
    directory = project(tmp_path)
    doit(directory)
    assert ran(doit(directory, "-a", "fetch")) == ["fetch:fx"]
    assert starts(directory) == 2


def test_a_server_that_was_down_is_asked_again(tmp_path: Path) -> None:
    directory = project(tmp_path)
    (directory / "down").touch()
    doit(directory)
    assert json.loads((directory / ".toolscript" / "servers" / "fx.json").read_text()) == []
    (directory / "down").unlink()
    assert "fetch:fx" in ran(doit(directory))
    tools = json.loads((directory / ".toolscript" / "servers" / "fx.json").read_text())
    assert "plain_text" in {tool["name"] for tool in tools}
    assert starts(directory) == 2


def damaged(path: Path, how: str) -> None:
    if how == "deleted":
        path.unlink()
    elif how == "truncated":
        with path.open("r+b") as file:
            file.truncate(path.stat().st_size // 2)
    else:
        path.write_bytes(b"not a database\n")


def rows(path: Path, table: str) -> int:
    with sqlite3.connect(path) as db:
        count: int = db.execute(f"select count(*) from {table}").fetchone()[0]
    return count


def test_a_deleted_truncated_or_foreign_catalogue_is_built_again_alone(tmp_path: Path) -> None:
    """doit checked the catalogue by its inputs only: a truncated catalogue.db, or a file
    that is not SQLite, stayed as it was (a missing one doit itself builds again)."""
    directory = project(tmp_path)
    doit(directory)
    catalogue = directory / ".toolscript" / "catalogue.db"
    tools = rows(catalogue, "tools")
    for how in ("deleted", "truncated", "foreign"):
        damaged(catalogue, how)
        assert ran(doit(directory)) == ["catalogue"], how
        assert rows(catalogue, "tools") == tools, how
    assert ran(doit(directory)) == []
    assert starts(directory) == 1


def test_a_truncated_or_foreign_search_index_is_built_again(tmp_path: Path) -> None:
    if not semantic_installed():
        pytest.skip("the search index needs the semantic extra")
    directory = tmp_path
    (directory / "wrapper.py").write_text(WRAPPER)
    write_config(directory, semantic=True)
    doit(directory)
    embeddings = directory / ".toolscript" / "embeddings.db"
    vectors = rows(embeddings, "embeddings")
    assert vectors > 0
    for how in ("truncated", "foreign"):
        damaged(embeddings, how)
        assert ran(doit(directory)) == ["index"], how
        assert rows(embeddings, "embeddings") == vectors, how
    assert ran(doit(directory)) == []
