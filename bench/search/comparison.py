"""The earlier designs search is compared with, ranked in process from the product's pieces.

Not modes of the product (nothing in the gateway or the CLI asks for them): only
bench/search_quality.py's "seed" and "fixed" rows and bench/search_rankings_snapshot.py rank
with them. Each reads a SearchEngine's index and model (``SearchEngine.index``,
``query_vectors``, ``weight``) and ranks with search/ranking.py, as the engine does:

- "seed", the original design's blend: 0.7 x cosine + 0.3 x fuzzy ratio of the request and
  each tool's name and description; the request whole (not split into needs), the keyword
  half reading it as search does (``keyword_query``), the model as search does
  (``semantic_query``);
- "fixed", the design before adaptive fusion and splitting: the hybrid blend with the fixed
  ``alpha`` (no per-query weight, no retriever's best placed), the request whole, and both
  halves reading it as typed.

Until the engine has every tool's vector, both rank by keywords alone, as search does.

    engine = SearchEngine(...); engine.set_documents(documents); engine.load_vectors()
    hits, mode, needs = compared(engine, "send a message to the team", "seed", limit=10)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from toolscript.search.engine import SearchEngine
from toolscript.search.ranking import (
    Hit,
    Ranking,
    first_hits,
    in_rank_order,
    matched_nothing,
    rank_need,
)
from toolscript.search.text import ToolDocument, keyword_query, semantic_query

COMPARISONS = ("seed", "fixed")


def compared(
    engine: SearchEngine,
    query: str,
    comparison: str,
    *,
    limit: int = 10,
    threshold: float | None = None,
    server: str | None = None,
    alpha: float | None = None,
) -> tuple[list[Hit], str, list[str]]:
    """``engine.explain``'s answer for ``query`` ranked as ``comparison`` (one of
    COMPARISONS): the hits, the mode used ("seed" or "hybrid", "keyword" without vectors),
    and the needs (the request whole)."""
    if comparison not in COMPARISONS:
        raise ValueError(f"unknown comparison {comparison!r}; one of {', '.join(COMPARISONS)}")
    seed = comparison == "seed"
    mode = "seed" if seed else "hybrid"
    index = engine.index()
    if not index.documents or not query.strip():
        return [], "keyword" if index.matrix is None else mode, [query]
    keyword_text, model_text = (
        (keyword_query(query), semantic_query(query)) if seed else (query, query)
    )
    keyword = index.lexical.scores(keyword_text)
    cosines: Any = None
    if index.matrix is None:
        mode = "keyword"  # not ready, or new tools whose vectors are on their way
    else:
        import numpy  # a matrix exists: so does numpy

        vectors = numpy.stack(engine.query_vectors([model_text]))
        cosines = (index.matrix @ vectors.T).T[0]  # as the engine reads the matrix
    cutoff = engine.options.threshold if threshold is None else threshold
    weight = engine.weight(query, alpha)
    parameters = engine.parameters
    if mode == "seed":
        # ranked by the seed blend's scores, as rank_need ranks keyword scores; each hit's
        # keyword part is then the keyword score, as the engine's seed mode showed it
        how = Ranking("keyword", weight, adaptive=True, cutoff=cutoff, server=server, limit=limit)
        scores = seed_blend(query, index.documents, cosines)
        ranking = [
            (number, replace(hit, keyword=keyword.get(number, 0.0)))
            for number, hit in rank_need(index.documents, scores, cosines, how, -1, parameters)
        ]
    else:
        how = Ranking(mode, weight, adaptive=False, cutoff=cutoff, server=server, limit=limit)
        ranking = rank_need(index.documents, keyword, cosines, how, -1, parameters)
    hits = in_rank_order([hit for _, hit in first_hits([ranking], limit, parameters)])
    if mode != "keyword" and matched_nothing([cosines], parameters):
        hits = [replace(hit, weak=True) for hit in hits]
    return hits, mode, [query]


def seed_blend(query: str, documents: list[ToolDocument], cosines: Any) -> dict[int, float]:
    """The original design: 0.7 x cosine + 0.3 x fuzzy ratio of the request and each tool's
    name and description."""
    from thefuzz import fuzz

    lowered = query.lower()
    return {
        index: 0.7 * float(cosines[index])
        + 0.3 * fuzz.token_set_ratio(lowered, f"{d.name} {d.description}".lower()) / 100
        for index, d in enumerate(documents)
    }
