"""One need's ranking, and the merge of several: pure functions over a catalogue's documents,
its keyword scores and cosines (engine.py computes those and calls these).

A need is ranked by its blend (``rank_need``): keyword scores alone, cosines alone, or
both blended (fusion.py); a thinly described tool that either retriever ranks first keeps
a place in the first ``bests_within`` (``with_bests``). The rankings of a split request
(the whole request's, then each need's) are merged (``first_hits``): the whole's best,
each need's best, then every hit by its score, a need's weighed ``need_weight``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from toolscript.search.fusion import Blend, blend
from toolscript.search.parameters import PARAMETERS, SearchParameters
from toolscript.search.text import ToolDocument, argument_names, code_names, named_tool_tier

__all__ = [
    "Hit",
    "Ranking",
    "best_first",
    "first_hits",
    "in_rank_order",
    "matched_nothing",
    "merged",
    "preferring",
    "rank_need",
    "with_bests",
    "written_first",
]


@dataclass
class Hit:
    """One tool (or saved script) found, with what made its score."""

    server: str
    tool: str
    score: float
    keyword: float  # the keyword part, 0..1
    semantic: float | None  # the cosine similarity, None without the model
    description: str
    semantic_part: float | None = None  # the cosine scaled for the blend, 0..1 (hybrid)
    semantic_weight: float | None = None  # the blend's semantic weight for this query
    need: int = -1  # which need of a split request this hit answers (-1: the whole request)
    kind: str = "tool"  # or "script": a saved script, called as ``scripts.<tool>``
    # "keyword" or "semantic": that retriever's best, placed in the first ``bests_within``
    # although the blend ranked it lower (see ``with_bests``)
    placed: str | None = None
    # its score in its own ranking (the need's, or the whole request's); ``score`` is that,
    # at most the score of the hit above it (``in_rank_order``)
    blended: float | None = None
    # nothing matched the request well (``matched_nothing``): these are only the nearest
    weak: bool = False
    deprecated: bool = False  # its description says so (ranked lower: ``_deprecated_later``)

    def to_dict(self) -> dict[str, Any]:
        return (
            {
                "kind": self.kind,
                "server": self.server,
                "tool": self.tool,
                "name": f"scripts.{self.tool}"
                if self.kind == "script"
                else f"{self.server}__{self.tool}",
                "score": round(self.score, 4),
                "keyword": round(self.keyword, 4),
                "semantic": None if self.semantic is None else round(self.semantic, 4),
                "description": self.description,
            }
            | ({"deprecated": True} if self.deprecated else {})
            | ({"weak": True} if self.weak else {})
        )

    def explanation(self, needs: list[str]) -> dict[str, Any]:
        """What made the score: the parts, the weight, and the need it answers."""

        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {
            # the score in the hit's own ranking: ``score`` is at most the one above it's
            "blended": round(self.score if self.blended is None else self.blended, 4),
            "keyword": round(self.keyword, 4),
            "semantic": rounded(self.semantic_part),
            "cosine": rounded(self.semantic),
            "semantic_weight": rounded(self.semantic_weight),
            # A split request's hit answers one of its needs, or the request read whole.
            "need": needs[self.need] if len(needs) > 1 and self.need >= 0 else None,
            "need_index": self.need if len(needs) > 1 and self.need >= 0 else None,
            # "keyword"/"semantic": placed in the first five as that retriever's best
            "placed": self.placed,
        }


class Ranking(NamedTuple):
    """How one search ranks each of its needs."""

    mode: str  # keyword | semantic | hybrid
    alpha: float  # the semantic weight (around which the adaptive blend moves)
    # the blend's weight per query; False: ``alpha`` itself, and no retriever's best placed
    # (the design before adaptive fusion: bench/search/comparison.py)
    adaptive: bool
    cutoff: float  # hits scoring under it are dropped
    server: str | None  # only this server's tools
    limit: int


def rank_need(
    documents: list[ToolDocument],
    keyword: dict[int, float],
    cosines: Any,
    how: Ranking,
    need: int,
    parameters: SearchParameters = PARAMETERS,
) -> list[tuple[int, Hit]]:
    """One need's best tools (at most ``how.limit``, none under the cutoff), best first."""
    parts: Any = None
    weight: float | None = None
    blended: Blend | None = None
    ranked: Iterable[tuple[int, float]]
    # Ranked to at least ``bests_within``, so that a shorter list is the longer one's start.
    depth = max(how.limit, parameters.bests_within)
    if how.mode == "keyword":
        ranked = sorted(keyword.items(), key=lambda item: -item[1])
    else:  # every tool has a score: numpy orders them (faster than a Python sort)
        if how.mode == "semantic":
            values = cosines
        else:
            blended = blend(
                keyword, cosines, how.alpha, adaptive=how.adaptive, parameters=parameters
            )
            parts, weight = blended.semantic, blended.weight
            values = blended.scores
        # only the first ``depth`` are needed, unless a server's tools are picked out
        order = best_first(values, None if how.server else depth)
        ranked = ((int(index), float(values[index])) for index in order)

    def hit(index: int, score: float, placed: str | None = None) -> Hit:
        document = documents[index]
        return Hit(
            server=document.server,
            tool=document.name,
            score=score,
            keyword=keyword.get(index, 0.0),
            semantic=None if cosines is None else float(cosines[index]),
            description=_first_line(document.description),
            semantic_part=None if parts is None else float(parts[index]),
            semantic_weight=weight,
            need=need,
            kind=document.kind,
            placed=placed,
            deprecated=document.deprecated,
        )

    ranking: list[tuple[int, Hit]] = []
    for index, score in ranked:
        if score < how.cutoff or len(ranking) >= depth:
            break
        if how.server is not None and documents[index].server != how.server:
            continue
        ranking.append((index, hit(index, score)))
    ranking = _deprecated_later(ranking, documents, parameters)
    if blended is not None and how.adaptive:
        bests = _retriever_bests(blended, documents, how.server)
        thin = [
            (index, hit(index, float(values[index]), placed=retriever))
            for index, retriever in bests
            if values[index] >= how.cutoff
            and len(documents[index].description.strip()) < parameters.thin_description
        ]
        ranking = with_bests(ranking, thin, parameters)
    return ranking[: how.limit]


def _deprecated_later(
    ranking: list[tuple[int, Hit]],
    documents: list[ToolDocument],
    parameters: SearchParameters = PARAMETERS,
) -> list[tuple[int, Hit]]:
    """``ranking`` with each deprecated tool's score counted ``deprecated_weight`` times,
    in the order of the scores: "read a file" found the filesystem server's read_file
    ("DEPRECATED: Use read_text_file instead") first, by its name."""
    if not any(documents[index].deprecated for index, _ in ranking):
        return ranking
    for index, found in ranking:
        if documents[index].deprecated:
            found.score *= parameters.deprecated_weight
    return sorted(ranking, key=lambda item: -item[1].score)


def best_first(values: Any, count: int | None) -> Any:
    """Indices of ``values``, the highest first and ties in tool order (as ``sorted()`` and a
    stable sort order them); with ``count``, at least the first ``count`` of that order
    (those scoring as high as the ``count``-th best: no full sort)."""
    import numpy

    if count is None or count >= len(values):
        return (-values).argsort(kind="stable")
    least = numpy.partition(values, len(values) - count)[len(values) - count]
    chosen = numpy.flatnonzero(values >= least)
    return chosen[(-values[chosen]).argsort(kind="stable")]


def _retriever_bests(
    blended: Blend, documents: list[ToolDocument], server: str | None
) -> list[tuple[int, str]]:
    """The keyword ranking's best tool and the semantic one's (of ``server``'s, if given),
    each with the retriever's name."""
    import numpy

    keyword, cosines = blended.keyword, blended.cosines
    if server is None:
        keyword_best = blended.keyword_best
        semantic_best = int(numpy.argmax(cosines))
    else:
        allowed = [index for index, document in enumerate(documents) if document.server == server]
        if not allowed:
            return []
        scoped = {i: score for i, score in keyword.items() if documents[i].server == server}
        keyword_best = max(scoped, key=scoped.__getitem__, default=None)
        if keyword_best is not None and scoped[keyword_best] <= 0:
            keyword_best = None
        semantic_best = allowed[int(numpy.argmax(numpy.asarray(cosines)[allowed]))]
    found = [] if keyword_best is None else [(keyword_best, "keyword")]
    if semantic_best != keyword_best:
        found.append((semantic_best, "semantic"))
    return found


def with_bests(
    ranking: list[tuple[int, Hit]],
    bests: list[tuple[int, Hit]],
    parameters: SearchParameters = PARAMETERS,
) -> list[tuple[int, Hit]]:
    """``ranking`` with each retriever's best tool (``bests``) in its first ``bests_within``:
    a best already there stays where it is; one the blend put lower (or left out) takes the
    last places of the first ``bests_within``, the better blended score first, and the rest
    move down one. The first places, where most answers are, keep the blend's order.

    A thinly described tool is known to both retrievers by little more than its name:
    keywords read the name's words, the model its meaning, and no description makes them
    agree, so a blend of the two can bury the right tool that one of them ranked first."""
    within = parameters.bests_within
    placed = {index for index, _ in ranking[:within]}
    missing = sorted(
        (item for item in bests if item[0] not in placed), key=lambda item: -item[1].score
    )
    if not missing:
        return ranking
    moved = {index for index, _ in missing}
    rest = [item for item in ranking if item[0] not in moved]
    keep = within - len(missing)
    return [*rest[:keep], *missing, *rest[keep:]]


def preferring(
    ranking: list[tuple[int, Hit]],
    servers: frozenset[str],
    parameters: SearchParameters = PARAMETERS,
) -> list[tuple[int, Hit]]:
    """``ranking`` in the order of its scores with those of ``servers``' tools counted
    ``same_server`` times (the scores themselves unchanged)."""
    return sorted(
        ranking,
        key=lambda item: (
            -item[1].score * (parameters.same_server if item[1].server in servers else 1.0)
        ),
    )


# A tool taking more than 3 parameters per argument of a call it takes, and 6 more, is no
# match of the call: a tool of a hostile server takes every argument name there is.
STUFFED, SPARE = 3, 6


def _taken(arguments: frozenset[str], parameters: frozenset[str]) -> int:
    """How many of ``arguments`` a tool taking ``parameters`` takes; 0 when it takes more
    than ``STUFFED`` times as many and ``SPARE`` more."""
    count = len(arguments & parameters)
    return count if len(parameters) <= STUFFED * count + SPARE else 0


def written_first(
    ranking: list[tuple[int, Hit]], documents: list[ToolDocument], text: str
) -> list[tuple[int, Hit]]:
    """``ranking`` with the tools that ``text``, written as code, names or calls first: a tool
    whose name it writes (``text.named_tool_tier``: word for word before a name less a first
    word), then those that take the most of the argument names it writes that any of the
    ranked tools takes ("({ owner, repo, title, body, labels })": create_issue before
    get_label, which takes a label's name). Otherwise in the ranking's order; the scores
    themselves unchanged (``in_rank_order`` shows them in the order given)."""
    names = code_names(text)
    arguments = argument_names(text)
    if not ranking or not (names or arguments):
        return ranking
    # how many of the arguments the call writes a tool takes, of the tools that take not
    # many more (``_taken``): a server's tool taking every argument name there
    # is ("owner", "repo", "title", "assignee", "path", "query", ...) took the most of them,
    # so first place, whenever the real tool lacked one the call wrote
    taken = [_taken(arguments, documents[index].parameter_names) for index, _ in ranking]
    most = max(taken)
    tiers = [
        named_tool_tier(names, documents[index].name, documents[index].server)
        for index, _ in ranking
    ]
    if not any(tiers) and (most == 0 or min(taken) == most):
        return ranking
    order = sorted(range(len(ranking)), key=lambda n: (-tiers[n], taken[n] < most))
    return [ranking[n] for n in order]


def first_hits(
    rankings: list[list[tuple[int, Hit]]],
    limit: int,
    parameters: SearchParameters = PARAMETERS,
) -> list[tuple[int, Hit]]:
    """The first ``limit`` tools of the merged rankings, each once. A tool the whole
    request found that is also a need's best is shown as that need's hit (``--explain``
    says which need it answers; the order stays the merge's)."""
    answers: dict[int, Hit] = {}
    for ranking in rankings[1:]:
        if ranking:
            answers.setdefault(ranking[0][0], ranking[0][1])
    hits: list[tuple[int, Hit]] = []
    seen: set[int] = set()
    for index, hit in merged(rankings, parameters):
        if index in seen:
            continue
        seen.add(index)
        hits.append((index, answers.get(index, hit) if hit.need < 0 else hit))
        if len(hits) >= limit:
            break
    return hits


def merged(
    rankings: list[list[tuple[int, Hit]]], parameters: SearchParameters = PARAMETERS
) -> Iterator[tuple[int, Hit]]:
    """One ranking as it is; several (the whole request's, then each need's): the first
    one's best, each other's best, then every hit by score, a need's at ``need_weight`` of
    its own (a tool found by several rankings comes where its best placing puts it; the
    caller skips repeats).

    Each ranking's scores run to 1 at its own best, and a need's second hit answers a part
    of the request, which the whole's second hit answers as a whole: a need's hits after
    its best weigh less ("set include comments to true" found comment tools ahead of the
    whole request's second hit)."""
    if len(rankings) == 1:
        yield from rankings[0]
        return
    for ranking in rankings:
        yield from ranking[:1]
    rest = [
        (hit.score * (1.0 if number == 0 else parameters.need_weight), index, hit)
        for number, ranking in enumerate(rankings)
        for index, hit in ranking[1:]
    ]
    rest.sort(key=lambda item: -item[0])
    yield from ((index, hit) for _, index, hit in rest)


def in_rank_order(hits: list[Hit]) -> list[Hit]:
    """``hits`` with scores that do not rise down the list: each at most the one above it's.
    A split request's list puts each need's best after the whole request's whatever their
    scores (0.96, 0.99, ...), and a thinly described best keeps a place in the first five
    (``with_bests``): the order is the answer, so the scores shown follow it. Each hit's
    own score stays in ``blended`` (``--explain``); as none is lowered below the next
    one's own, none falls under the threshold."""
    ranked: list[Hit] = []
    ceiling = float("inf")
    for hit in hits:
        ceiling = min(ceiling, hit.score)
        ranked.append(replace(hit, score=ceiling, blended=hit.score))
    return ranked


def matched_nothing(cosines: list[Any], parameters: SearchParameters = PARAMETERS) -> bool:
    """Whether nothing matches the request: no tool is close in meaning to it or to any of
    its needs (every cosine under ``weak_cosine``). Both halves scale their scores per query,
    so the nearest tools of "xyzzy plugh" score as high as a real query's: only the unscaled
    cosines tell them apart. A word of the request in a tool's text is not enough ("convert
    this PDF to text" and a clock's convert_time share "convert", and keywords scored it
    1.0). A flag, not a cut: the hits still show."""
    return all(
        float(values.max()) < parameters.weak_cosine for values in cosines if values is not None
    )


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0][:200] if stripped else ""
