"""The tools' vectors read from the store, one way for every caller (a quick start, new
tools, the index loaded): no tools are an empty matrix, nothing to embed; vectors the
store lost after they were embedded are a reason for keyword search, not a KeyError."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_search_tool_changes import WordModel, tool
from toolscript.config import SearchConfig
from toolscript.errors import SemanticUnavailable
from toolscript.search.engine import SearchEngine
from toolscript.search.semantic import EmbeddingStore

numpy = pytest.importorskip("numpy")


class Model(WordModel):
    """``WordModel``, and ``then`` run once the tools are embedded (where another process
    may clear the store)."""

    def __init__(self, then: Any = None) -> None:
        self.then = then

    def documents_embedded(self) -> None:
        if self.then is not None:
            self.then()


TOOLS = [tool("alpha"), tool("beta")]


def test_vectors_the_store_lost_after_embedding_make_search_unavailable_with_why(
    tmp_path: Path,
) -> None:
    store = EmbeddingStore(tmp_path / "embeddings.db")

    def cleared() -> None:  # as another process clearing the cache would
        with sqlite3.connect(tmp_path / "embeddings.db") as db:
            db.execute("delete from embeddings")

    engine = SearchEngine(SearchConfig(), store, Model(cleared))  # type: ignore[arg-type]
    engine.set_documents(TOOLS)
    with pytest.raises(SemanticUnavailable, match="not in the embedding store"):
        engine.load_vectors()


def test_no_tools_need_no_embedding_a_quick_start_is_hybrid_at_once() -> None:
    engine = SearchEngine(SearchConfig(), EmbeddingStore(None), Model())  # type: ignore[arg-type]
    engine.set_documents([])
    engine._quick = object()  # (a numpy query encoder, as prepare_quick_queries makes one)
    assert engine.quick_start()
    assert engine.status()["mode"] == "hybrid" and engine.explain("the time").hits == []


def test_stored_vectors_are_read_in_the_tools_order_and_new_tools_embedded() -> None:
    store = EmbeddingStore(None)
    engine = SearchEngine(SearchConfig(), store, Model())  # type: ignore[arg-type]
    engine.set_documents(TOOLS[:1])
    engine.load_vectors()
    engine.set_documents(TOOLS[::-1])  # one new tool: embedded, then the matrix in order
    matrix = engine._semantic.matrix
    stored = store.get([d.content_hash for d in TOOLS[::-1]], "hand-made")
    assert matrix.shape == (2, 3)
    for row, document in zip(matrix, TOOLS[::-1], strict=True):
        assert row.tobytes() == stored[document.content_hash]
