"""embeddings.db evolves by named, append-only migrations, applied when the file is opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from toolscript.search import semantic
from toolscript.search.semantic import EmbeddingStore, migrate


def test_a_new_file_gets_every_migration(tmp_path: Path) -> None:
    store = EmbeddingStore(tmp_path / "embeddings.db")
    store.put({"h1": b"\x00" * 8}, "m", 2)
    with sqlite3.connect(tmp_path / "embeddings.db") as db:
        names = [row[0] for row in db.execute("select name from _migrations")]
    assert names == [name for name, _ in semantic.MIGRATIONS]
    assert store.get(["h1"], "m") == {"h1": b"\x00" * 8}


def test_a_file_from_before_migrations_keeps_its_vectors(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.db"
    with sqlite3.connect(path) as db:  # the layout earlier versions created
        db.execute(
            "create table embeddings (content_hash text not null, model text not null,"
            " dimensions integer not null, vector blob not null, primary key (content_hash, model))"
        )
        db.execute("insert into embeddings values ('old', 'm', 2, x'0000000000000000')")
    store = EmbeddingStore(path)
    assert store.get(["old"], "m") == {"old": b"\x00" * 8}


def test_a_later_migration_is_applied_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "embeddings.db"
    EmbeddingStore(path)
    monkeypatch.setattr(
        semantic,
        "MIGRATIONS",
        [*semantic.MIGRATIONS, ("m002_model_index", "create index by_model on embeddings (model)")],
    )
    with sqlite3.connect(path) as db:
        assert migrate(db) == ["m002_model_index"]
        assert migrate(db) == []
