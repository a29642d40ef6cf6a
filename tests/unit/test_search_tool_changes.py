"""A new tool set and its vectors change together: a search at the moment the tools change
reads each tool with its own vector (a tool renamed, the count unchanged, was ranked with
the vector of the tool that had its place), and stays hybrid."""

from __future__ import annotations

from typing import Any

import pytest

from toolscript.config import SearchConfig
from toolscript.search.engine import SearchEngine, embed_missing
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import document_for

numpy = pytest.importorskip("numpy")

WORDS = ("alpha", "beta", "gamma")


class WordModel:
    """An embedding model, offered to a SearchEngine as an Embedder is, whose vector of a
    text is the one-hot of the first of WORDS it names."""

    model_id = "hand-made"
    warning = None
    query_precision = "float32"
    query_runtime = "torch"
    computed = 0
    loaded = True

    def load(self) -> None:
        pass

    def documents_embedded(self) -> None:
        pass

    def embed(self, texts: list[str]) -> Any:
        rows = numpy.zeros((len(texts), len(WORDS)), dtype=numpy.float32)
        for row, text in enumerate(texts):
            rows[row, next(n for n, word in enumerate(WORDS) if word in text)] = 1.0
        return rows

    embed_queries = embed


def tool(word: str) -> Any:
    return document_for("demo", "", {"name": f"{word}_tool", "description": f"{word} things"})


def test_a_search_while_the_tools_change_reads_each_tool_with_its_own_vector() -> None:
    model, store = WordModel(), EmbeddingStore(None)
    engine = SearchEngine(SearchConfig(), store, model)  # type: ignore[arg-type]
    engine.set_documents([tool("alpha"), tool("beta")])
    engine.load_vectors()
    assert engine.status()["mode"] == "hybrid"
    changed = [tool("alpha"), tool("gamma")]  # beta's tool renamed: the same count
    embed_missing(changed, model, store)  # what the build's index task does first
    during: list[Any] = []
    read = store.get

    def get(hashes: Any, model_id: str) -> dict[str, bytes]:
        during.append(engine.explain("beta", mode="semantic", threshold=0.5))
        return read(hashes, model_id)

    store.get = get  # type: ignore[method-assign]
    engine.set_documents(changed)
    assert during
    for answer in during:  # beta's tool, or nothing: never gamma's read with beta's vector
        assert answer.mode == "semantic" and answer.fallback is None
        assert [hit.tool for hit in answer.hits] in (["beta_tool"], [])
    after = engine.explain("gamma")
    assert after.mode == "hybrid" and after.hits[0].tool == "gamma_tool"
    assert engine.explain("beta", mode="semantic", threshold=0.5).hits == []


def test_a_build_that_embedded_keeps_the_vectors_of_the_tools_it_has_alone(
    tmp_path: Any,
) -> None:
    # embeddings.db only grew: the rows of tools gone from the catalogue, and those of the
    # unkeyed form earlier versions wrote, stayed for ever
    import sqlite3

    from toolscript.pipeline.artifacts import CacheLayout
    from toolscript.pipeline.tasks.index import IndexTask, SearchIndexing
    from toolscript.pipeline.tasks.settings import TaskSettings

    layout = CacheLayout(tmp_path)
    model, key = WordModel(), b"the user's own key"
    embed_missing([tool("alpha")], model, EmbeddingStore(layout.embeddings))  # unkeyed form
    store = EmbeddingStore(layout.embeddings, key)
    embed_missing([tool("beta")], model, store)  # a tool since gone
    current = [tool("alpha"), tool("gamma")]
    indexing = SearchIndexing(model, store, documents=current)  # type: ignore[arg-type]
    IndexTask(TaskSettings(layout, [], "generator"), indexing, None).index()
    with sqlite3.connect(layout.embeddings) as db:
        rows = db.execute("select count(*) from embeddings").fetchone()[0]
    assert rows == 2
    assert store.missing((d.content_hash for d in current), model.model_id) == set()
    assert store.missing([tool("beta").content_hash], model.model_id) == {tool("beta").content_hash}


def test_new_tools_without_stored_vectors_are_never_read_with_the_old_tools_vectors() -> None:
    # Another server with as many tools (a reload swapped them): until the new tools are
    # embedded, a search read each with the vector of the old tool in its place.
    model = WordModel()
    engine = SearchEngine(SearchConfig(), EmbeddingStore(None), model)  # type: ignore[arg-type]
    engine.set_documents([tool("alpha"), tool("beta")])
    engine.load_vectors()
    during: list[Any] = []
    embed = model.embed

    def embedding(texts: list[str]) -> Any:  # the new tools' embedding, under way
        during.append(engine.explain("beta", mode="semantic", threshold=0.5))
        return embed(texts)

    model.embed = embedding  # type: ignore[method-assign]
    engine.set_documents([tool("alpha"), tool("gamma")])
    assert during
    for answer in during:  # keywords (saying why), never gamma's tool for beta's vector
        assert "gamma_tool" not in [hit.tool for hit in answer.hits], answer
    assert engine.explain("gamma").hits[0].tool == "gamma_tool"


def test_a_removed_servers_tools_leave_search_at_once_and_the_rest_keep_their_vectors() -> None:
    engine = SearchEngine(SearchConfig(), EmbeddingStore(None), WordModel())  # type: ignore[arg-type]
    other = document_for("other", "", {"name": "gamma_tool", "description": "gamma things"})
    engine.set_documents([tool("alpha"), tool("beta"), other])
    engine.load_vectors()
    engine.drop_servers(["demo"])
    for query in ("alpha", "beta"):
        answer = engine.explain(query, mode="semantic", threshold=0.5)
        assert answer.mode == "semantic" and answer.hits == [], answer
    answer = engine.explain("gamma", mode="semantic", threshold=0.5)
    assert answer.mode == "semantic" and [hit.tool for hit in answer.hits] == ["gamma_tool"]
    engine.set_documents([tool("alpha"), other])  # the build after the reload: demo is back
    assert [hit.tool for hit in engine.explain("alpha", mode="semantic", threshold=0.5).hits] == [
        "alpha_tool"
    ]


def test_a_build_with_every_vector_stored_loads_no_model() -> None:
    from toolscript.search.semantic import Embedder

    store, documents = EmbeddingStore(None), [tool("alpha"), tool("beta")]
    embed_missing(documents, WordModel(), store)
    embedder = Embedder(WordModel.model_id)  # a real one, never loaded: loading it would fail
    assert embed_missing(documents, embedder, store) == 0
    assert embed_missing([], embedder, store) == 0
    assert not embedder.loaded
