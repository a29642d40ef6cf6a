"""The search engine: keyword retrieval from the first moment, fused with embeddings once ready.

A search runs as a pipeline (``SearchEngine.explain``):

1. read the request (``_read``): split it into its needs (needs.py: what it asks for,
   and what it implies without asking, such as a file to write), and how each half reads
   each need: keywords without pasted data, short forms spelled out; the model without
   literal values (text.keyword_query, text.semantic_query);
2. retrieve (``_retrieve``): every tool's keyword score (BM25F plus name coverage, 0..1:
   lexical.py) and, once the model is loaded, its cosine to each need;
3. blend (ranking.rank_need): ``w * semantic + (1 - w) * keyword``, ``w`` adapting to each
   query around ``--search-alpha`` (fusion.py), one ranking for the whole request and one
   for each need;
4. add the needs the ranking implies (``_with_implied``): a geocoder when a first hit
   takes coordinates and the request names places (needs.IMPLIED_NEEDS);
5. merge (ranking.first_hits): the whole's best, each need's best, then by score; the
   scores shown follow the order; hits of a request that matched nothing are ``weak``.

Every number these steps use is in parameters.py, every word list in words.py. Until the
model is ready, or without it, search is keyword-only and says so. The model itself runs
in a worker process (process.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, TypedDict, Unpack

from toolscript.config import SearchConfig
from toolscript.errors import SemanticUnavailable
from toolscript.search.lexical import LexicalIndex
from toolscript.search.needs import IMPLIED_NEEDS, Implication, implied_by, split_needs
from toolscript.search.parameters import PARAMETERS, SearchParameters
from toolscript.search.ranking import (
    Hit,
    Ranking,
    first_hits,
    in_rank_order,
    matched_nothing,
    preferring,
    rank_need,
    written_first,
)
from toolscript.search.semantic import DEFAULT_MODEL, Embedder, EmbeddingStore
from toolscript.search.text import (
    ToolDocument,
    keyword_query,
    mostly_cjk,
    says_first_step,
    says_steps_in_order,
    semantic_query,
)

__all__ = [
    "MODES",
    "Answer",
    "Hit",
    "SearchEngine",
    "SearchIndex",
    "SearchOptions",
    "embed_missing",
    "readings",
]

log = logging.getLogger("toolscript.search")

# The comparisons with earlier designs (the seed blend, the fixed fusion) are not modes: they
# rank in bench/search/comparison.py, with this engine's index and model.
MODES = ("hybrid", "keyword", "semantic")
RECOVERY_INTERVAL = 30.0  # seconds between attempts to reload a model that failed
# A model that failed again soon after its reload is tried again after this many seconds,
# doubled at each such failure up to RETRY_LONGEST: a busy machine (a query past its
# deadline, twice) costs hybrid search a while, not the gateway's life.
RETRY_FIRST, RETRY_LONGEST = 60.0, 960.0


# The gateway's search settings are the config's ``search`` section, overridden by options.
SearchOptions = SearchConfig


def embed_missing(
    documents: Sequence[ToolDocument],
    embedder: Embedder,
    store: EmbeddingStore,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed the tools whose (content hash, model) is not stored yet; how many were embedded."""
    hashes = [d.content_hash for d in documents]
    # Every vector stored under the model's name (none, with no tools): no model to load,
    # seconds of CPU at a build that embeds nothing. Loaded, the model may be another (a
    # requested one that failed falls back to the default): asked again under its name.
    if not hashes or not store.missing(hashes, embedder.model_id):
        return 0
    embedder.load()
    absent = store.missing(hashes, embedder.model_id)
    missing = list({d.content_hash: d for d in documents if d.content_hash in absent}.values())
    chunk = 128
    for start in range(0, len(missing), chunk):
        part = missing[start : start + chunk]
        vectors = embedder.embed([d.text for d in part])
        store.put(
            {d.content_hash: vectors[i].tobytes() for i, d in enumerate(part)},
            embedder.model_id,
            int(vectors.shape[1]),
        )
        if progress is not None:
            progress(min(start + chunk, len(missing)), len(missing))
    return len(missing)


@dataclass
class _Semantic:
    state: str = "loading"  # loading | indexing | ready | unavailable | disabled
    reason: str = "the embedding model is loading"
    matrix: Any = None  # numpy array aligned with documents, or None
    cached: int = 0


class SearchRequest(TypedDict, total=False):
    """``SearchEngine.explain``'s options, for ``search``."""

    limit: int
    threshold: float | None
    server: str | None
    mode: str
    alpha: float | None
    split: bool


class SearchEngine:
    """Holds the searchable documents; thread-safe swaps when tools or vectors change."""

    def __init__(
        self,
        options: SearchOptions,
        store: EmbeddingStore,
        embedder: Embedder | None,
        parameters: SearchParameters = PARAMETERS,
    ) -> None:
        self.options = options
        self.parameters = parameters
        self.store = store
        self.embedder = embedder
        self.documents: list[ToolDocument] = []
        self.lexical = LexicalIndex([], parameters)
        self._semantic = _Semantic()
        if not options.semantic or embedder is None:
            self._semantic = _Semantic(state="disabled", reason="semantic search is turned off")
        self._lock = threading.Lock()
        self._gone: frozenset[str] = frozenset()  # servers removed since the tools were set
        self._recovering = False
        self._last_recovery = -RECOVERY_INTERVAL
        self._retry_after = RETRY_FIRST  # the next wait of a model that keeps failing
        self._retry_at: float | None = None  # when a model that kept failing is tried again
        self._quick: Any = None  # a numpy query encoder while the worker's model loads
        # The keyword scores of needs implied by a ranking (for one index, by text), and the
        # vectors of implied needs (by model and reading): the same for every request
        self._implied_keywords: tuple[LexicalIndex, dict[str, dict[int, float]]] | None = None
        self._standing: dict[tuple[str, str], Any] = {}
        # Computes a request's keyword scores while its thread waits for the model (the
        # worker's pipe, numpy and torch let go of the interpreter lock while they work).
        self._scoring = ThreadPoolExecutor(max_workers=4, thread_name_prefix="search-keywords")

    def prepare_quick_queries(self, model_directory: Path | None) -> bool:
        """Build the numpy query encoder for ``model_directory`` (half a second, no torch);
        False when that model is not one it can run (its queries wait for the worker)."""
        from toolscript.search.quick import quick_encoder_for

        if self._semantic.state == "disabled":
            return False
        self._quick = quick_encoder_for(model_directory)
        return self._quick is not None

    def vectors_stored(self) -> bool:
        """Whether the store holds vectors of this model: a restart whose tools may all be
        cached, so the numpy query encoder is worth getting ready before the URL."""
        if self._semantic.state == "disabled" or self.embedder is None:
            return False
        return self.store.holds(self.embedder.model_id)

    def quick_start(self) -> bool:
        """Hybrid at once when every tool's vector is in the store already (a restart, or the
        same tools as a previous run): only the query needs the model, and the numpy encoder
        embeds it. True when search is hybrid now."""
        if self._quick is None or self.embedder is None or self._semantic.state != "loading":
            return self._semantic.state == "ready"
        documents = self.documents
        matrix = self._stored_matrix(documents)
        if matrix is None:
            self._quick = None  # new tools need the worker to embed them: its weights can go
            return False
        self.embedder.documents_embedded()  # (the worker, not started yet, embeds none)
        with self._lock:
            if documents is self.documents and self._semantic.state == "loading":
                self._semantic = _Semantic(
                    state="ready", reason="", matrix=matrix, cached=len(documents)
                )
        return self._semantic.state == "ready"

    def model_loaded(self) -> None:
        """The worker's model is ready: it embeds queries from now on."""
        self._quick = None

    # -- state ---------------------------------------------------------------

    def status(self, answer: Answer | None = None) -> dict[str, Any]:
        """Where search is now: hybrid or keyword-only and why, the model and what runs it,
        the tools. With ``answer``, as that answer was ranked: keyword-only and why when it
        fell back to keywords (``Answer.fallback``, as it was then: the model may be back)."""
        semantic = self._semantic
        ready = semantic.state == "ready"
        status: dict[str, Any] = {
            "ready": ready,
            "mode": "hybrid" if ready else "keyword",
            "semantic": semantic.state,
            "reason": None if ready else semantic.reason,
            "model": self.embedder.model_id if self.embedder is not None else None,
            # what embeds the queries of a hybrid search: none until search is hybrid
            "queries": (
                None
                if self.embedder is None or not ready
                else "numpy"
                if self._quick is not None and not self.embedder.loaded
                else "model"
            ),
            # bfloat16 where this CPU computes it faster and the vectors agree (torch only)
            "query_precision": (
                self.embedder.query_precision
                if self.embedder is not None and self.embedder.loaded
                else None
            ),
            # what runs the model for queries: ONNX Runtime where it gives the same vectors
            # and is faster (packed.py), else torch
            "query_runtime": (
                self.embedder.query_runtime
                if self.embedder is not None and self.embedder.loaded
                else None
            ),
            "warning": self.embedder.warning if self.embedder is not None else None,
            "tools": len(self.documents),
            "embedded": self.embedder.computed if self.embedder is not None else 0,
            "cached": semantic.cached,
            "alpha": self.options.alpha,
            "threshold": self.options.threshold,
        }
        if answer is not None and answer.fallback is not None:
            status |= {
                "ready": False,
                "mode": "keyword",
                "reason": answer.fallback,
                "queries": None,
            }
        return status

    def set_documents(self, documents: list[ToolDocument]) -> None:
        """New tool set: keyword index now; vectors from the store when semantic is ready.
        Where the store holds every new tool's vector (the build embedded them), the tools
        and their vectors change together: no search in between falls back to keywords, or
        reads one tool's vector as another's."""
        lexical = LexicalIndex(documents, self.parameters)
        matrix = self._stored_matrix(documents) if self._semantic.state == "ready" else None
        with self._lock:
            self.documents, self.lexical = documents, lexical
            self._gone = frozenset()  # (the new tools are of the config as it is now)
            if matrix is not None:
                assert self.embedder is not None
                cached = max(0, len(documents) - self.embedder.computed)
                self._semantic = replace(self._semantic, matrix=matrix, cached=cached)
            elif self._semantic.matrix is not None:
                # The old tools' vectors: as many rows as the new tools (another server with
                # as many tools), they were read as theirs until the new ones were embedded.
                self._semantic = replace(self._semantic, matrix=None)
        if matrix is None and self._semantic.state in ("ready", "indexing"):
            self.load_vectors()

    def drop_servers(self, names: Collection[str]) -> None:
        """Answer with no tool of ``names`` (servers the config removed) from now on, until
        the build that follows the reload sets the tools without them: no search answers
        with a server that is gone meanwhile. (Only a mark: rebuilding the keyword index
        here would hold the gateway's loop, 0.4 s at 2,000 tools.)"""
        with self._lock:
            self._gone = self._gone | frozenset(names)

    def _stored_matrix(self, documents: list[ToolDocument]) -> Any:
        """``documents``' vectors from the store, in their order (no documents: an empty
        matrix, as nothing is to embed); None when one is missing."""
        import numpy

        assert self.embedder is not None  # (semantic is ready)
        if not documents:
            return numpy.zeros((0, 1), dtype=numpy.float32)
        vectors = self.store.get((d.content_hash for d in documents), self.embedder.model_id)
        if any(d.content_hash not in vectors for d in documents):
            return None
        return numpy.stack(
            [numpy.frombuffer(vectors[d.content_hash], dtype=numpy.float32) for d in documents]
        )

    def semantic_failed(self, reason: str) -> None:
        self._semantic = _Semantic(state="unavailable", reason=reason)

    def _embedding_failed(self, exc: Exception) -> str:
        """Keyword-only now; reload the model in the background, unless it failed again soon
        after the last reload: then keyword-only for a while (no crash loop), the model
        tried again by the first search after it, each such wait twice the last (up to
        RETRY_LONGEST). Why search is keyword-only, for the answer the failure met."""
        log.warning("search: keyword only, the embedding model failed: %s", exc)
        reason = f"the embedding model failed ({exc}); reloading it"
        now = time.monotonic()
        with self._lock:
            if self._recovering:
                return reason
            if now - self._last_recovery < RECOVERY_INTERVAL:
                reason = (
                    f"the embedding model failed again soon after a reload ({exc}); "
                    f"keyword search only, {self._wait_to_retry()}"
                )
                self.semantic_failed(reason)
                return reason
            self._retry_after = RETRY_FIRST  # (long after the last reload: a first failure)
            self._recovering, self._last_recovery = True, now
        self._reload(reason)
        return reason

    def _wait_to_retry(self) -> str:
        """Schedule the next try of a model that keeps failing (under the lock); says when."""
        wait, self._retry_at = self._retry_after, time.monotonic() + self._retry_after
        self._retry_after = min(2 * self._retry_after, RETRY_LONGEST)
        return f"the model is tried again in {wait:.0f} s"

    def _reload(self, reason: str) -> None:
        self._semantic = _Semantic(state="loading", reason=reason)
        threading.Thread(target=self._recover, name="search model reload", daemon=True).start()

    def _retry_when_due(self) -> None:
        """The model that kept failing reloaded, once its wait is over (the caller's search
        still answers with keywords: the reload takes a moment)."""
        with self._lock:
            due = self._retry_at is not None and time.monotonic() >= self._retry_at
            if not due or self._recovering:
                return
            self._retry_at = None
            self._recovering, self._last_recovery = True, time.monotonic()
        self._reload("the embedding model failed before; reloading it")

    def _recover(self) -> None:
        assert self.embedder is not None
        try:
            self.embedder.load()
            self.load_vectors()  # from the store: nothing is embedded again
            log.info("search: hybrid again, the embedding model was reloaded")
        except Exception as exc:
            with self._lock:
                when = self._wait_to_retry()
            self.semantic_failed(
                f"the embedding model failed and could not be reloaded ({exc}); {when}"
            )
            log.warning("search: keyword only, reloading the embedding model failed: %s", exc)
        finally:
            self._recovering = False

    def load_vectors(self) -> None:
        """Align stored vectors with the current documents (embedding any that are missing)."""
        assert self.embedder is not None
        documents = self.documents
        self._semantic.state = "indexing" if self._semantic.state != "ready" else "ready"
        embed_missing(documents, self.embedder, self.store)
        self.embedder.documents_embedded()  # (before search turns hybrid: no query waits)
        matrix = self._stored_matrix(documents)
        if matrix is None:  # the store lost them since (`doit clean`, a damaged file remade)
            raise SemanticUnavailable(
                "the tools' vectors were not in the embedding store after they were embedded "
                "(it was cleared or removed meanwhile); search is keyword-only: restart the "
                "gateway to embed them again"
            )
        with self._lock:
            if documents is self.documents:
                self._semantic = _Semantic(
                    state="ready",
                    reason="",
                    matrix=matrix,
                    # Vectors this gateway did not compute (the index task may have just done so).
                    cached=max(0, len(documents) - self.embedder.computed),
                )

    # -- search --------------------------------------------------------------

    def search(self, query: str, **options: Unpack[SearchRequest]) -> tuple[list[Hit], str]:
        """Ranked hits and the mode actually used (``keyword`` until semantic is ready).

        A request that asks for several things (needs.py) is ranked need by need and the
        lists merged (ranking.merged); ``split=False`` ranks it whole.
        """
        answer = self.explain(query, **options)
        return answer.hits, answer.mode

    def explain(
        self,
        query: str,
        *,
        limit: int = 10,
        threshold: float | None = None,
        server: str | None = None,
        mode: str = "hybrid",
        alpha: float | None = None,
        split: bool = True,
    ) -> Answer:
        """``search``, with the needs the request was split into (one: it was not) and why
        it fell back to keywords: read the request, retrieve, blend each need's ranking, add
        the needs the ranking implies, merge (this module's docstring)."""
        if self._retry_at is not None:
            self._retry_when_due()
        with self._lock:
            index = _Index(self.documents, self.lexical, self._semantic)
            gone = self._gone
        if not index.documents or not query.strip():
            if index.semantic.state == "ready" or mode == "keyword":
                return Answer([], mode, [query], None)
            return Answer([], "keyword", [query], index.semantic.reason)
        fallback = None
        if not index.has_vectors and mode in ("hybrid", "semantic"):
            # not ready, or new tools whose vectors are on their way
            fallback = index.semantic.reason or "the new tools are being embedded"
            mode = "keyword"
        request = _read(query, mode, split, self.parameters)
        keywords, cosines, mode, failure = self._retrieve(request, index, mode)
        cutoff = self.options.threshold if threshold is None else threshold
        how = Ranking(
            mode,
            self.weight(query, alpha),
            adaptive=True,
            cutoff=cutoff,
            server=server,
            limit=limit,
        )
        rankings = [
            written_first(
                rank_need(index.documents, keywords[n], cosines[n], how, n - 1, self.parameters),
                index.documents,
                text,
            )
            for n, text in enumerate(request.texts)
        ]
        if request.first_step and len(rankings) > 1:
            # A plan that says which step comes first (text.first_step_read): the request
            # is read as that step by both halves, and its first need is that step.
            rankings[0] = rankings[1]
        elif request.in_order and len(rankings) > 1 and rankings[1]:
            # Two steps in their order ("X, then Y": text.says_steps_in_order): the first
            # step's best leads the whole request's ranking.
            best = rankings[1][0]
            rankings[0] = [best, *(hit for hit in rankings[0] if hit[0] != best[0])]
        needs = request.needs
        if split:
            rankings, needs = self._with_implied(request, rankings, index, how)
        hits = self._merge(rankings, cosines, how)
        if gone:
            hits = [hit for hit in hits if hit.server not in gone]
        return Answer(hits, mode, needs, fallback or failure)

    def index(self) -> SearchIndex:
        """What a search reads, taken together: the tools, their keyword index, and their
        vectors (None until every tool has one), for rankings composed outside this
        pipeline from its pieces (bench/search/comparison.py)."""
        with self._lock:
            index = _Index(self.documents, self.lexical, self._semantic)
        matrix = index.semantic.matrix if index.has_vectors else None
        return SearchIndex(index.documents, index.lexical, matrix)

    def query_vectors(self, texts: list[str]) -> list[Any]:
        """The model's vectors of ``texts``, as it reads them (no reading of this engine's)."""
        return self._query_vectors(texts)

    def weight(self, query: str, alpha: float | None) -> float:
        """The semantic weight: ``alpha`` if given, else the option's, unless the request is mostly Chinese, Japanese
        or Korean and the model is the default one, which reads English only: on such
        requests its similarities are noise, so keywords (which match such descriptions)
        lead, up to ``cjk_alpha``."""
        if alpha is not None:
            return alpha
        weight = self.options.alpha
        if (
            self.embedder is not None
            and self.embedder.model_id == DEFAULT_MODEL
            and mostly_cjk(query)
        ):
            weight = min(weight, self.parameters.cjk_alpha)
        return weight

    def _merge(
        self, rankings: list[list[tuple[int, Hit]]], cosines: list[Any], how: Ranking
    ) -> list[Hit]:
        """The first hits of the merged rankings, their scores in their order, and flagged
        ``weak`` when nothing matched the request (only the nearest tools are shown)."""
        hits = in_rank_order([hit for _, hit in first_hits(rankings, how.limit, self.parameters)])
        if how.mode != "keyword" and matched_nothing(cosines, self.parameters):
            hits = [replace(hit, weak=True) for hit in hits]
        return hits

    def _retrieve(
        self, request: _Request, index: _Index, mode: str
    ) -> tuple[list[dict[int, float]], list[Any], str, str | None]:
        """Each text's keyword scores and cosines (None in keyword mode), the mode used, and
        why that is keyword when the model went away (search answers with keywords and says
        why)."""
        cosines: list[Any] = [None] * len(request.texts)
        if mode == "keyword":
            return [index.lexical.scores(text) for text in request.keywords], cosines, mode, None
        failure = None
        # The keyword scores while the model works (most of a query's time, in the worker):
        # on another thread, so that this one sends the request first and need not wait for
        # the interpreter lock.
        scoring = self._scoring.submit(_keyword_scores, index.lexical, request.keywords)
        try:
            import numpy  # a semantic matrix exists: so does numpy

            vectors = numpy.stack(self._request_vectors(request.model, request.kept))
            cosines = list((index.semantic.matrix @ vectors.T).T)  # the matrix read once
        except Exception as exc:  # the model went away: answer with keywords, say why
            failure = self._embedding_failed(exc)
            mode = "keyword"
        return scoring.result(), cosines, mode, failure

    def _with_implied(
        self,
        request: _Request,
        rankings: list[list[tuple[int, Hit]]],
        index: _Index,
        how: Ranking,
    ) -> tuple[list[list[tuple[int, Hit]]], list[str]]:
        """``rankings`` and the request's needs with those that its first hits imply
        (needs.IMPLIED_NEEDS that read the ranking), each ranked as one more need."""
        needs = request.needs
        for rule in IMPLIED_NEEDS:
            if not rule.reads_ranking:
                continue
            first = [
                index.documents[number]
                for number, _ in first_hits(rankings, how.limit, self.parameters)
            ]
            asked = [need for need in needs if implied_by(need) is None]
            implication = Implication(request.query, asked, first, self.parameters)
            for need in rule.find(implication):
                keyword, cosines = self._standing_scores(need.text, rule.reading, index, how.mode)
                if how.mode != "keyword" and cosines is None:
                    continue  # no model to ask: no implied need
                ranking = rank_need(
                    index.documents, keyword, cosines, how, len(needs), self.parameters
                )
                if need.prefer:
                    ranking = preferring(ranking, need.prefer, self.parameters)
                rankings, needs = [*rankings, ranking], [*needs, need.text]
        return rankings, needs

    def _standing_scores(
        self, text: str, reading: Callable[[str], str], index: _Index, mode: str
    ) -> tuple[dict[int, float], Any]:
        """An implied need's keyword scores and (unless ``mode`` is keyword) cosines: its
        scores and vector are computed once (for this index, for this model) and kept (a
        rule that reads the ranking implies needs of fixed texts: few are kept)."""
        if self._implied_keywords is None or self._implied_keywords[0] is not index.lexical:
            self._implied_keywords = (index.lexical, {})
        kept = self._implied_keywords[1]
        if text not in kept:
            kept[text] = index.lexical.scores(keyword_query(text))
        keyword = kept[text]
        if mode == "keyword" or self.embedder is None or index.semantic.matrix is None:
            return keyword, None
        try:
            vector = self._standing_vector(reading(text))
        except Exception as exc:  # the model went away: the next search says how
            self._embedding_failed(exc)
            return keyword, None
        return keyword, index.semantic.matrix @ vector

    def _standing_vector(self, text: str) -> Any:
        """The vector of an implied need's reading, computed once for each model."""
        assert self.embedder is not None
        key = (self.embedder.model_id, text)
        if key not in self._standing:
            self._standing[key] = self._query_vectors([semantic_query(text)])[0]
        return self._standing[key]

    def _request_vectors(self, texts: list[str], kept: set[int]) -> list[Any]:
        """Vectors of a request and its needs (``texts``, as the model reads them: the whole
        request first). The needs numbered in ``kept`` (implied ones, read as "write file"
        and the like) take the kept vector of their text, the first time computed in the
        same call of the model as the others (a call of its own costs more)."""
        assert self.embedder is not None
        model = self.embedder.model_id
        vectors: dict[int, Any] = {}
        asked = [0]
        new: list[str] = []  # kept texts with no vector yet
        for number, text in enumerate(texts[1:], 1):
            if number not in kept:
                asked.append(number)
            elif (model, text) not in self._standing and text not in new:
                new.append(text)
        embedded, standing = self._embedded(
            [texts[number] for number in asked], [semantic_query(text) for text in new]
        )
        self._standing.update(
            ((model, text), vector) for text, vector in zip(new, standing, strict=True)
        )
        vectors.update(zip(asked, embedded, strict=True))
        for number in kept:
            vectors[number] = self._standing[(model, texts[number])]
        return [vectors[number] for number in range(len(texts))]

    def _embedded(self, texts: list[str], also: list[str]) -> tuple[list[Any], list[Any]]:
        """Vectors of a request and its needs (``texts``: the whole request first), and of
        the texts ``also``, in one call of the model: a call costs the most however short
        its texts, and its texts are packed into one sequence (packed.py): less than a
        second call. A split request is not embedded whole, its needs are: its vector is
        their mean (the whole, the batch's longest text, set the batch's cost, and its mean
        ranks as well: bench/NOTES.md)."""
        own = texts if len(texts) == 1 else texts[1:]
        vectors = self._query_vectors([*own, *also])
        vectors, extra = vectors[: len(own)], vectors[len(own) :]
        if len(texts) == 1:
            return vectors, extra
        whole = sum(vectors[1:], vectors[0])
        return [whole / max(float((whole @ whole) ** 0.5), 1e-9), *vectors], extra

    def _query_vectors(self, texts: list[str]) -> list[Any]:
        assert self.embedder is not None
        quick = self._quick
        if quick is not None and not self.embedder.loaded:
            return [quick.encode(text) for text in texts]
        self._quick = None  # the worker serves queries now: the numpy copy's 90 MB can go
        return list(self.embedder.embed_queries(texts))


class Answer(NamedTuple):
    """What a search answers: the hits, the mode they were ranked in, the needs the request
    was split into (one: it was not), and why a request that asked for the model was ranked
    with keywords (``fallback``: the model not ready, or failing on this very request),
    as it was at that moment; None when it was ranked as asked."""

    hits: list[Hit]
    mode: str
    needs: list[str]
    fallback: str | None


class SearchIndex(NamedTuple):
    """The tools a search ranks, their keyword index, and their vectors (``matrix``, aligned
    with ``documents``; None while search is keyword-only)."""

    documents: list[ToolDocument]
    lexical: LexicalIndex
    matrix: Any


class _Index(NamedTuple):
    """What one search reads, taken together under the engine's lock."""

    documents: list[ToolDocument]
    lexical: LexicalIndex
    semantic: _Semantic

    @property
    def has_vectors(self) -> bool:
        """The model is ready and every tool's vector is in its matrix."""
        matrix = self.semantic.matrix
        return (
            self.semantic.state == "ready"
            and matrix is not None
            and len(matrix) == len(self.documents)
        )


class _Request(NamedTuple):
    """A request as the pipeline reads it."""

    query: str
    needs: list[str]  # what it asks for and implies (one: the request itself)
    texts: list[str]  # what is ranked: the request whole, then each need if it splits
    keywords: list[str]  # each text as keyword search reads it
    model: list[str]  # ... and as the model reads it
    kept: set[int]  # texts whose vectors are kept (implied needs: the same for any request)
    first_step: bool  # a plan that says which of its steps comes first (text.first_step_read)
    in_order: bool  # two steps in their order, joined by "then" (text.says_steps_in_order)


def _read(query: str, mode: str, split: bool, parameters: SearchParameters) -> _Request:
    """Read a request: its needs (needs.py; ``split`` False: the request whole), and how
    each half reads the request and each need (the model nothing in keyword ``mode``). A
    split request is ranked whole too (what no single need names, the whole may find)."""
    needs = split_needs(query, parameters) if split else [query]
    texts = [query, *needs] if len(needs) > 1 else [query]
    model, kept = _model_readings(texts) if mode != "keyword" else ([], set())
    first_step = len(texts) > 1 and says_first_step(query)
    in_order = len(texts) > 1 and says_steps_in_order(query)
    return _Request(
        query, needs, texts, _keyword_readings(texts), model, kept, first_step, in_order
    )


def _keyword_readings(texts: list[str]) -> list[str]:
    """How keyword search reads a request and its needs (``texts``: the whole request first)."""
    return [keyword_query(text) for text in texts]


def _model_readings(texts: list[str]) -> tuple[list[str], set[int]]:
    """How the model reads a request and its needs (``texts``, the whole request first), and
    which are implied needs (their vectors are kept): an implied need reads as what it
    needs ("write file", "read pdf file"): a file's name tells the model nothing."""
    readings: list[str] = []
    kept: set[int] = set()
    for number, text in enumerate(texts):
        rule = implied_by(text) if number else None
        if rule is not None and not rule.reads_ranking:
            readings.append(rule.reading(text))
            kept.add(number)
        else:
            readings.append(semantic_query(text))
    return readings, kept


def readings(query: str, needs: list[str], mode: str) -> list[dict[str, str | None]]:
    """What each half read of a request ranked in ``mode`` and of each of its ``needs`` (one
    need: the request itself), for ``--explain``: ``keywords`` and ``model`` (None where the
    model read nothing: keyword search, or a split request whole, whose vector is its needs'
    mean; a need implied after the ranking split nothing)."""
    texts = [query, *needs] if len(needs) > 1 else [query]
    asked = [need for need in needs if not _implied_by_ranking(need)]
    split = len(asked) > 1
    keywords = _keyword_readings(texts)
    reads = [None] * len(texts) if mode == "keyword" else _model_readings(texts)[0]
    return [
        {
            "text": text,
            "keywords": keywords[number],
            "model": None if split and number == 0 else reads[number],
        }
        for number, text in enumerate(texts)
    ]


def _implied_by_ranking(need: str) -> bool:
    rule = implied_by(need)
    return rule is not None and rule.reads_ranking


def _keyword_scores(lexical: LexicalIndex, texts: list[str]) -> list[dict[int, float]]:
    return [lexical.scores(text) for text in texts]
