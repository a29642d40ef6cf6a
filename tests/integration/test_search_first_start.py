"""A first start (nothing cached) embeds its tools and answers queries without torch, with
sentence-transformers' vectors (issue 45: hybrid search seconds after the URL)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.helpers import needs_semantic

DOCUMENTS = [
    "get_current_time: Get the current time in a specific timezone. timezone: IANA name",
    "convert_time: Convert time between timezones. " + "source and target zones " * 30,
    "Post the Summary to SLACK channel #general with the TEAM's notes",
    "list my open pull requests",
]


def holds_torch(pid: int) -> bool:
    return any("libtorch" in mapped.path for mapped in psutil.Process(pid).memory_maps())


@needs_semantic
def test_the_graph_built_from_the_weights_gives_sentence_transformers_vectors() -> None:
    from toolscript.search import semantic
    from toolscript.search.packed import OnnxQueries

    reference = semantic.Embedder(fast_queries=False)  # sentence-transformers, exact
    expected = reference.embed(DOCUMENTS)
    built = OnnxQueries.from_weights(semantic.model_directory(None), semantic.MAX_TOKENS)
    documents = built.documents(DOCUMENTS)  # tools, one a run (the long one cut at 128)
    assert documents.shape == expected.shape
    assert (documents * expected).sum(axis=1).min() >= 0.99999
    built.end_documents()
    queries = built(DOCUMENTS)  # a split request's needs, packed
    assert (queries * expected).sum(axis=1).min() >= 0.99999


@needs_semantic
def test_a_first_start_embeds_and_answers_without_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.search import semantic
    from toolscript.search.process import EmbedderProcess

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path))  # nothing saved for the model
    assert semantic.light_ready(None) is None
    expected = semantic.Embedder(fast_queries=False).embed(DOCUMENTS)
    embedder = EmbedderProcess()
    try:
        embedder.load()
        vectors = embedder.embed(DOCUMENTS)
        assert (vectors * expected).sum(axis=1).min() >= 0.99999
        query = embedder.embed_queries(["what time is it in Tokyo"])
        assert query.shape == (1, expected.shape[1])
        assert embedder.query_runtime == "onnxruntime"
        (worker,) = embedder.workers()
        assert (worker["role"], worker["torch"]) == ("queries", False)
        assert not holds_torch(worker["pid"])
        assert embedder.computed == len(DOCUMENTS)
    finally:
        embedder.close()
    assert embedder.workers() == []
