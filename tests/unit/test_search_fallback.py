"""An answer ranked with keywords because the model failed says why, with the answer: the
reason is the one of the moment it answered, even when the model was reloaded between that
answer's ranking and the reading of its status (a light worker reloads in well under a
second)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from toolscript.config import SearchConfig
from toolscript.errors import EmbedderFailed
from toolscript.search.engine import SearchEngine
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import document_for

numpy = pytest.importorskip("numpy")


class FailingOnceModel:
    """An embedding model, offered to a SearchEngine as an Embedder is, whose worker dies on
    the first query it is asked and is back at once when loaded again."""

    model_id = "hand-made"
    warning = None
    query_precision = "float32"
    query_runtime = "torch"
    computed = 0

    def __init__(self) -> None:
        self.loaded = True
        self.failed = False

    def load(self) -> None:
        self.loaded = True

    def documents_embedded(self) -> None:
        pass

    def embed(self, texts: list[str]) -> Any:
        return numpy.array([[1.0, float(n)] for n in range(len(texts))], dtype=numpy.float32)

    def embed_queries(self, texts: list[str]) -> Any:
        if not self.failed:
            self.failed, self.loaded = True, False
            raise EmbedderFailed("the embedding process is not running (exit code -9)")
        return numpy.array([[1.0, 0.0]] * len(texts), dtype=numpy.float32)


def hybrid_engine() -> SearchEngine:
    documents = [
        document_for("clock", "", {"name": name, "description": f"{name} things"})
        for name in ("get_time", "convert_time")
    ]
    engine = SearchEngine(SearchConfig(), EmbeddingStore(None), FailingOnceModel())  # type: ignore[arg-type]
    engine.set_documents(documents)
    engine.load_vectors()
    assert engine.status()["mode"] == "hybrid"
    return engine


def reload_ended() -> None:
    """Wait for a reload under way (a thread of the engine's) to end."""
    for thread in threading.enumerate():
        if thread.name == "search model reload":
            thread.join()


def reloaded(engine: SearchEngine) -> None:
    """Wait for the reload the failure started to end."""
    reload_ended()
    assert engine.status()["mode"] == "hybrid"  # the model is back


def test_a_keyword_answer_after_a_failure_says_why_though_the_model_is_back() -> None:
    engine = hybrid_engine()
    answer = engine.explain("what time is it")
    assert answer.mode == "keyword" and answer.hits
    expected = "the embedding model failed (the embedding process is not running (exit code -9))"
    assert answer.fallback == f"{expected}; reloading it"
    reloaded(engine)
    status = engine.status(answer)  # read after the reload, as the answer was ranked
    assert status["mode"] == "keyword" and status["ready"] is False
    assert status["reason"] == f"{expected}; reloading it"
    assert status["queries"] is None
    # the next answer is hybrid again, and its status says so
    again = engine.explain("what time is it")
    assert again.mode == "hybrid" and again.fallback is None
    assert engine.status(again) == engine.status()


def test_a_keyword_question_or_a_model_not_ready_says_so_with_the_answer() -> None:
    engine = hybrid_engine()
    asked = engine.explain("what time is it", mode="keyword")
    assert (asked.mode, asked.fallback) == ("keyword", None)  # asked for: nothing to explain
    assert engine.status(asked) == engine.status()
    loading = SearchEngine(SearchConfig(), EmbeddingStore(None), FailingOnceModel())  # type: ignore[arg-type]
    loading.set_documents(engine.documents)  # the model not loaded yet
    answer = loading.explain("what time is it")
    assert (answer.mode, answer.fallback) == ("keyword", "the embedding model is loading")
    assert loading.status(answer)["reason"] == "the embedding model is loading"
    off = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    off.set_documents(engine.documents)
    assert off.explain("what time is it").fallback == "semantic search is turned off"


class KeepsFailingModel(FailingOnceModel):
    """A model whose queries fail while ``failing`` (a worker killed for its time, on a busy
    machine), reloaded at once each time."""

    failing = True

    def embed_queries(self, texts: list[str]) -> Any:
        if self.failing:
            self.loaded = False
            raise EmbedderFailed("no answer to a query within 5 s")
        return numpy.array([[1.0, 0.0]] * len(texts), dtype=numpy.float32)


def test_a_model_that_fails_again_soon_after_its_reload_is_tried_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keyword-only for a while, not for the gateway's life: the first search after the
    wait reloads the model; each failure soon after a reload doubles the wait."""
    from types import SimpleNamespace

    from toolscript.search import engine as engine_module

    clock = [1000.0]
    monkeypatch.setattr(engine_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    model = KeepsFailingModel()
    documents = [
        document_for("clock", "", {"name": name, "description": f"{name} things"})
        for name in ("get_time", "convert_time")
    ]
    engine = SearchEngine(SearchConfig(), EmbeddingStore(None), model)  # type: ignore[arg-type]
    engine.set_documents(documents)
    engine.load_vectors()
    assert engine.explain("what time is it").mode == "keyword"  # failed: reloading
    reloaded(engine)
    clock[0] += 5  # failed again, soon after the reload
    answer = engine.explain("what time is it")
    assert answer.mode == "keyword"
    assert answer.fallback is not None and answer.fallback.endswith("tried again in 60 s")
    assert engine.status()["semantic"] == "unavailable"
    clock[0] += 59  # not yet: keywords, the model not asked
    assert engine.explain("what time is it").fallback == answer.fallback
    clock[0] += 1  # the wait is over: this search reloads the model (and answers meanwhile)
    engine.explain("what time is it")
    reload_ended()
    clock[0] += 5  # failed again soon: a longer wait
    assert str(engine.explain("what time is it").fallback).endswith("tried again in 120 s")
    clock[0] += 120
    model.failing = False  # the machine is quiet again
    engine.explain("what time is it")
    reloaded(engine)
    assert engine.explain("what time is it").mode == "hybrid"
