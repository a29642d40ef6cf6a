"""Blending keyword and semantic scores with a weight that adapts to each query.

Both parts run from 0 to 1 per query: the keyword score is scaled by the query's best
(lexical.py), the semantic one runs from the median tool's cosine (0) to the best's (1).
A fixed blend trusts each part the same on every query, but how much a keyword ranking
knows differs from query to query: when one tool's words match the query far better
than the rest (the tenth-best keyword score is a small share of the best), the keywords
found something specific, and the blend leans on them; when ten tools match about as
well (common words, a paraphrase), the keywords cannot tell them apart and meaning
decides. The semantic weight therefore moves from ``alpha + peaked_shift`` (a peaked
keyword ranking) to ``alpha + flat_shift`` (a flat one), shrunk towards the ends so that
``alpha`` 0 and 1 stay keyword-only and semantic-only (parameters.py; how the shifts were
chosen: bench/NOTES.md). It helps most where one retriever fails, such as catalogues
whose tools have no descriptions (there the engine also keeps a retriever's best in the
first five, engine._with_bests).
"""

from __future__ import annotations

import heapq
from typing import Any

from toolscript.search.parameters import PARAMETERS, SearchParameters

__all__ = ["Blend", "blend", "semantic_parts", "semantic_weight"]


def semantic_weight(
    alpha: float, keyword: dict[int, float], parameters: SearchParameters = PARAMETERS
) -> float:
    """The semantic weight for a query whose keyword scores are ``keyword`` (0..1)."""
    depth = parameters.flat_depth
    ranked = heapq.nlargest(depth, keyword.values())
    return _weight(alpha, ranked[depth - 1] if len(ranked) >= depth else 0.0, parameters)


def _weight(alpha: float, tenth: float, parameters: SearchParameters) -> float:
    """``semantic_weight`` for a query whose ``flat_depth``-th keyword score is ``tenth``."""
    peaked, flat = parameters.peaked_shift, parameters.flat_shift
    shift = peaked + (flat - peaked) * tenth
    return min(1.0, max(0.0, alpha + 4 * alpha * (1 - alpha) * shift))


def semantic_parts(cosines: Any) -> Any:
    """Cosines scaled per query: the median tool 0, the best 1, below the median 0."""
    import numpy

    cosines = numpy.asarray(cosines, dtype=numpy.float64)
    top = float(cosines.max())
    floor = _median(cosines)
    return numpy.clip((cosines - floor) / max(top - floor, 1e-6), 0.0, None)


def _median(values: Any) -> float:
    """``numpy.median`` of a non-empty float array, without its checks (a fifth of a
    ranking's time)."""
    import numpy

    middle = len(values) // 2
    if len(values) % 2:
        return float(numpy.partition(values, middle)[middle])
    low, high = numpy.partition(values, [middle - 1, middle])[middle - 1 : middle + 1]
    return float((low + high) / 2)


class Blend:
    """One query's blended scores, and what went into them (for ``--explain``); the weight
    is ``alpha`` itself unless ``adaptive`` (``semantic_weight``)."""

    def __init__(
        self,
        keyword: dict[int, float],
        cosines: Any,
        alpha: float,
        adaptive: bool,
        parameters: SearchParameters = PARAMETERS,
    ) -> None:
        import numpy

        self.keyword = keyword
        self.cosines = cosines
        self.semantic = semantic_parts(cosines)
        self.keyword_best: int | None = None  # the keyword ranking's best tool (first of ties)
        count = len(keyword)
        indices = numpy.fromiter(keyword.keys(), dtype=numpy.intp, count=count)
        values = numpy.fromiter(keyword.values(), dtype=numpy.float64, count=count)
        self.weight = alpha
        if adaptive:
            depth = parameters.flat_depth
            tenth = (
                float(numpy.partition(values, count - depth)[count - depth])
                if count >= depth
                else 0.0
            )
            self.weight = _weight(alpha, tenth, parameters)
        scores = self.weight * self.semantic
        if count:  # every tool at most once: one vector step adds them all
            scores[indices] += (1 - self.weight) * values
            if values.max() > 0:
                self.keyword_best = int(indices[int(values.argmax())])
        self.scores = scores


def blend(
    keyword: dict[int, float],
    cosines: Any,
    alpha: float,
    *,
    adaptive: bool = True,
    parameters: SearchParameters = PARAMETERS,
) -> Blend:
    """The hybrid scores of one query: adaptive weight unless ``adaptive`` is False."""
    return Blend(keyword, cosines, alpha, adaptive, parameters)
