"""A stored vector is found by the user's own key: a cloned repository's embeddings.db,
whose rows name the public content hashes of the tools, lends no vector to a search."""

from __future__ import annotations

from pathlib import Path

from toolscript.search.semantic import EmbeddingStore


def test_vectors_stored_under_another_key_or_none_are_not_read(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.db"
    EmbeddingStore(path).put({"h1": b"planted!"}, "m", 2)  # keyed by the content hash alone
    EmbeddingStore(path, b"k" * 32).put({"h2": b"theirs!!"}, "m", 2)  # another user's key
    mine = EmbeddingStore(path, b"m" * 32)
    assert mine.get(["h1", "h2"], "m") == {}
    assert mine.missing(["h1", "h2"], "m") == {"h1", "h2"}


def test_vectors_stored_under_the_users_key_are_read_by_their_hashes(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.db"
    EmbeddingStore(path, b"m" * 32).put({"h1": b"vector01", "h2": b"vector02"}, "m", 2)
    again = EmbeddingStore(path, b"m" * 32)
    assert again.get(["h2", "h1", "h3"], "m") == {"h1": b"vector01", "h2": b"vector02"}
    assert again.missing(["h1", "h3"], "m") == {"h3"}
