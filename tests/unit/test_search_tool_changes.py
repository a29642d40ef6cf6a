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
