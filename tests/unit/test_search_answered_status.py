"""An answer ranked with keywords because the model failed says why, even when the model
was reloaded between that answer's ranking and its status (a light worker reloads in
well under a second)."""

from __future__ import annotations

from toolscript.config import SearchConfig
from toolscript.search import engine as engine_module
from toolscript.search.engine import SearchEngine
from toolscript.search.semantic import EmbeddingStore


def ready_engine() -> SearchEngine:
    search = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    search._semantic = engine_module._Semantic(state="ready", reason="")
    return search


def test_a_keyword_answer_after_a_failure_says_why_though_the_model_is_back() -> None:
    search = ready_engine()
    search.last_failure = "the embedding model failed (worker exited with -9)"
    status = search.answered_status("keyword", "hybrid")
    assert status["mode"] == "keyword" and status["ready"] is False
    assert status["reason"] == "the embedding model failed (worker exited with -9); reloaded since"


def test_a_hybrid_answer_or_a_keyword_question_keeps_the_status_as_it_is() -> None:
    search = ready_engine()
    search.last_failure = "the embedding model failed (gone)"
    assert search.answered_status("hybrid", "hybrid") == search.status()
    assert search.answered_status("keyword", "keyword") == search.status()
