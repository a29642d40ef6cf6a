"""Links in a project's cache (a cloned repository's) are never followed: not read, not
written through, not kept (tests/integration/test_linked_cache.py makes the attacks)."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from toolscript.pipeline.artifacts import CacheLayout, read_artifact, write_if_changed
from toolscript.pipeline.tasks.settings import target_digests, targets_as_built
from toolscript.plumbing.cachefiles import discard_if_damaged
from toolscript.plumbing.privatefile import write_new, write_private


def test_an_artifact_that_is_a_link_reads_as_unreadable(tmp_path: Path) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("secret")
    (tmp_path / "tools.ts").symlink_to(secret)
    with pytest.raises(OSError):
        read_artifact(tmp_path / "tools.ts")


def test_a_linked_artifact_is_replaced_not_written_through(tmp_path: Path) -> None:
    mine = tmp_path / "bashrc"
    mine.write_text("mine\n")
    (tmp_path / "names.json").symlink_to(mine)
    (tmp_path / "names.json.tmp").symlink_to(mine)
    assert write_if_changed(tmp_path / "names.json", "mine\n")  # even its very content
    assert mine.read_text() == "mine\n"
    assert not (tmp_path / "names.json").is_symlink()
    assert (tmp_path / "names.json").read_text() == "mine\n"


def test_new_files_are_never_written_through_a_link(tmp_path: Path) -> None:
    mine = tmp_path / "bashrc"
    mine.write_text("mine\n")
    (tmp_path / "partial").symlink_to(mine)
    write_new(tmp_path / "partial", "theirs")
    assert mine.read_text() == "mine\n"
    write_private(tmp_path / "state.json", "{}")
    assert (tmp_path / "state.json").read_text() == "{}"


def test_a_linked_target_is_never_as_built(tmp_path: Path) -> None:
    (tmp_path / "tools.ts").symlink_to(tmp_path / "nowhere")
    recorded = {"targets": {str(tmp_path / "tools.ts"): ""}}  # a crafted doit database's
    assert target_digests([tmp_path / "tools.ts"]) != recorded
    assert not targets_as_built(None, recorded)


def test_linked_databases_and_folders_are_dropped(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.db"
    with sqlite3.connect(theirs) as db:
        db.execute("create table mine (x)")
    folder = tmp_path / "their-folder"
    folder.mkdir()
    layout = CacheLayout(tmp_path / "cache")
    layout.root.mkdir()
    layout.dep_file.symlink_to(theirs)
    layout.catalogue.symlink_to(theirs)
    (layout.root / "servers").symlink_to(folder)
    layout.drop_links()
    assert not layout.dep_file.exists() and not layout.catalogue.exists()
    assert not (layout.root / "servers").exists()
    assert theirs.exists() and folder.is_dir()
    layout.embeddings.symlink_to(theirs)
    assert discard_if_damaged(layout.embeddings)
    assert not layout.embeddings.is_symlink() and theirs.exists()


def test_linked_or_odd_artifact_files_are_dropped(tmp_path: Path) -> None:
    theirs = tmp_path / "id_rsa"
    theirs.write_text("secret")
    layout = CacheLayout(tmp_path / "cache")
    for folder in ("servers", "offered", "types"):
        (layout.root / folder).mkdir(parents=True)
    layout.server_tools("gone").symlink_to(theirs)  # a server not reached keeps its file
    os.mkfifo(layout.server_offered("gone"))  # reading it would never end
    layout.server_fragments("gone").mkdir()  # a folder where a file goes
    (layout.server_fragments("gone") / "inside").symlink_to(theirs)
    layout.module.symlink_to(theirs)
    layout.server_module("fx").write_text("// kept\n")
    layout.drop_links()
    for dropped in (
        layout.server_tools("gone"),
        layout.server_offered("gone"),
        layout.server_fragments("gone"),
        layout.module,
    ):
        assert not os.path.lexists(dropped), dropped
    assert theirs.read_text() == "secret"
    assert layout.server_module("fx").read_text() == "// kept\n"


@pytest.mark.timeout(30)
def test_an_artifact_that_is_a_fifo_or_a_folder_reads_as_unreadable(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "tools.ts")  # no writer: a blocking open would never return
    (tmp_path / "names.json").mkdir()
    for odd in ("tools.ts", "names.json"):
        with pytest.raises(OSError):
            read_artifact(tmp_path / odd)


def test_a_hard_linked_or_odd_database_is_dropped(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.db"
    with sqlite3.connect(theirs) as db:
        db.execute("create table mine (x)")
    layout = CacheLayout(tmp_path / "cache")
    layout.root.mkdir()
    os.link(theirs, layout.catalogue)  # SQLite writes in place: into the user's file too
    os.mkfifo(layout.dep_file)
    layout.embeddings.mkdir()
    layout.drop_links()
    for database in (layout.catalogue, layout.dep_file, layout.embeddings):
        assert not os.path.lexists(database), database
    with sqlite3.connect(theirs) as db:
        assert [r[0] for r in db.execute("select name from sqlite_master")] == ["mine"]


def test_an_artifact_larger_than_any_project_makes_is_refused_unread(tmp_path: Path) -> None:
    # a cloned repository's planted tool list of 200 MB (JSON parsed in memory many times
    # over); a sparse file: nothing is written to the disk
    planted = tmp_path / "servers" / "planted.json"
    planted.parent.mkdir()
    with planted.open("wb") as handle:
        handle.truncate(200_000_000)
    with pytest.raises(OSError) as refused:
        read_artifact(planted)
    assert refused.value.errno == errno.EFBIG
