"""Keyword retrieval over tool documents: BM25F with typo-tolerant query terms, plus name coverage.

A tool's keyword score runs from 0 to 1: ``(1 - NAME_WEIGHT)`` of it is its BM25F score
scaled by the query's best, ``NAME_WEIGHT`` of it is how much of the tool's name the query
explains (``jira_create_issue`` is fully explained by "create a jira ticket";
``jira_batch_create_issues`` is not, as nothing asked for a batch). BM25 alone ranks them
nearly alike; the coverage puts the tool whose name says what was asked first.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from toolscript.search.text import ToolDocument, query_tokens, tokenize

__all__ = ["FIELD_WEIGHTS", "NAME_WEIGHT", "LexicalIndex"]

# Example values in parameter descriptions ("e.g., 'Asia/Tokyo'") say what a value looks like,
# and another tool a parameter cites ("the train_no from get-tickets") where it comes from, not
# what the tool does: they count, but little ("asides").
FIELD_WEIGHTS = {"name": 3.0, "description": 1.0, "parameters": 0.5, "server": 0.5, "asides": 0.2}
SYNONYM_WEIGHT = 0.5
NAME_WEIGHT = 0.2  # share of the keyword score given to name coverage
NAME_SYNONYM_CREDIT = 0.7  # a name word the query only says with a synonym ("ticket" for issue)
# Words users say for the verbs and nouns tool names use (general English, not tuned to a corpus).
_SYNONYM_GROUPS = [
    "create make new add generate build open start",
    "delete remove drop erase destroy",
    "list show all enumerate browse",
    "get fetch retrieve read load obtain look",
    "search find query lookup locate seek",
    "update edit change modify set rename",
    "send post publish message notify email",
    "run execute trigger launch invoke start",
    "stop cancel kill terminate end abort",
    "picture image photo screenshot snapshot",
    "file document doc",
    "folder directory dir",
    "weather forecast temperature rain",
    "price quote cost value",
    "issue ticket bug",
    "repo repository project",
    "chart graph plot diagram visualization",
    "map location place address geocode",
    "translate convert transform",
    "download save export",
    "write save store",
    "upload attach",
    "comment reply note",
    "user person member people account",
    "time date clock",
    "current now present latest live",
]
# Questions that ask about the present without saying so ("what time is it in Tokyo" asks
# for the current time): general English, the words they imply join the query's synonyms.
_IMPLIED = [
    (re.compile(r"\bwhat\s+(?:time|day|date)\s+is\s+it\b|\bright\s+now\b|\btoday\b"), "current"),
]


def implied_words(query: str) -> list[str]:
    """Stemmed words a query means without saying them (see ``_IMPLIED``)."""
    from toolscript.search.text import stem

    lowered = query.lower()
    return [stem(word) for pattern, word in _IMPLIED if pattern.search(lowered)]


def _synonyms() -> dict[str, list[str]]:
    from toolscript.search.text import stem

    table: dict[str, list[str]] = {}
    for group in _SYNONYM_GROUPS:
        words = [stem(word) for word in group.split()]
        for word in words:
            table.setdefault(word, []).extend(
                w for w in words if w != word and w not in table[word]
            )
    return table


SYNONYMS = _synonyms()
# A query's unknown words are matched to close vocabulary words (typos); past this many, the
# rest of a long request (a pasted log line, base64, a list of names) matches nothing: each
# would cost a pass over the vocabulary.
MOST_UNKNOWN_WORDS = 24
CLOSE_WORDS_KEPT = 10_000  # unknown tokens whose close words an index remembers
K1 = 1.2
B = 0.75


class LexicalIndex:
    """BM25 over weighted fields; unknown query words are matched to close vocabulary words."""

    def __init__(self, documents: list[ToolDocument]) -> None:
        self.documents = documents
        counted: list[dict[str, float]] = []
        for document in documents:
            weighted: dict[str, float] = defaultdict(float)
            for field, tokens in document.fields.items():
                weight = FIELD_WEIGHTS.get(field, 1.0)
                for token in tokens:
                    weighted[token] += weight
            counted.append(weighted)
        lengths = [sum(weighted.values()) for weighted in counted]
        average = (sum(lengths) / len(lengths)) if lengths else 1.0
        # A posting holds its document's BM25 term part, ``f (K1 + 1) / (f + K1 (1 - B + B
        # length / average))``: a query only weighs it by the word's idf (half the time of
        # a query's keyword scores went to computing it again for every posting).
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for index, weighted in enumerate(counted):
            norm = K1 * (1 - B + B * lengths[index] / average)
            for token, frequency in weighted.items():
                self._postings[token].append((index, frequency * (K1 + 1) / (frequency + norm)))
        # ... and as numpy arrays where numpy is installed (the semantic extra): a request's
        # words add up thousands of postings, 0.36 of a text's 0.68 ms in a Python loop.
        self._arrays: dict[str, tuple[Any, Any]] | None = None
        try:
            import numpy
        except ImportError:  # keyword-only installs: the loop it is
            pass
        else:
            self._arrays = {
                token: (
                    numpy.fromiter((index for index, _ in postings), numpy.intp, len(postings)),
                    numpy.fromiter((part for _, part in postings), numpy.float64, len(postings)),
                )
                for token, postings in self._postings.items()
            }
        self._name_sizes = [len(document.name_words) for document in documents]
        total = len(documents)
        self._idf = {
            token: math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
            for token, postings in self._postings.items()
        }
        self._named: dict[str, list[int]] = defaultdict(list)  # a word: tools it names
        for index, document in enumerate(documents):
            for word in document.name_words:
                self._named[word].append(index)
        self._vocabulary_by_initial: dict[str, list[str]] = defaultdict(list)
        for token in self._postings:
            self._vocabulary_by_initial[token[:1]].append(token)
        # Close words of unknown tokens, by token: a split request asks for the same ones
        # once for the whole request and again for its needs.
        self._close: dict[str, list[tuple[str, float]]] = {}

    def expand(self, token: str) -> list[tuple[str, float]]:
        """The token itself when known, else close vocabulary words (typos, partial names)."""
        if token in self._postings:
            return [(token, 1.0)]
        if len(token) < 4:
            return []
        known = self._close.get(token)
        if known is None:
            if len(self._close) >= CLOSE_WORDS_KEPT:
                self._close.clear()
            known = self._close[token] = self._close_words(token)
        return known

    def _close_words(self, token: str) -> list[tuple[str, float]]:
        from thefuzz import fuzz

        candidates = []
        for word in self._vocabulary_by_initial.get(token[:1], []):
            if abs(len(word) - len(token)) > 3:
                continue
            similarity = fuzz.ratio(token, word)
            if similarity >= 80:
                candidates.append((word, similarity / 100 * 0.8))
            elif word.startswith(token) and len(token) >= 4:
                candidates.append((word, 0.6))
        candidates.sort(key=lambda item: -item[1])
        return candidates[:3]

    def scores(self, query: str) -> dict[int, float]:
        """The keyword score (0 to 1) of every document matching at least one query word."""
        tokens, every = query_tokens(query)
        implied = implied_words(query)
        totals, strength = self._bm25(tokens, implied)
        best = max(totals.values(), default=0.0)
        if best <= 0:
            return {}
        said = set(tokens)
        related: set[str] = set(implied)
        for word in every:  # "show" still means "list"
            related.update(SYNONYMS.get(word, ()))
        related -= said  # the synonyms of every word the query has
        # How much of each tool's name the query says: its own words count 1, synonyms less.
        covered: dict[int, float] = defaultdict(float)
        for words, credit in ((said, 1.0), (related, NAME_SYNONYM_CREDIT)):
            for word in words:
                for index in self._named.get(word, ()):
                    covered[index] += credit
        scale = (1 - NAME_WEIGHT) / best
        scores = {index: total * scale for index, total in totals.items()}
        for index, credit in covered.items():
            if index in scores:  # a named tool counts when its text matches too
                scores[index] += NAME_WEIGHT * credit / self._name_sizes[index]
        if strength < 1.0:  # no word of the query is in any tool: only synonyms or typos
            return {index: score * strength for index, score in scores.items()}
        return scores

    def says_a_word(self, query: str) -> bool:
        """Whether a word of ``query`` (not a stop word) is in some tool's text as it is."""
        return any(token in self._postings for token in query_tokens(query)[0])

    def bm25(self, query: str) -> dict[int, float]:
        """BM25 score of every document matching at least one query word."""
        return self._bm25(tokenize(query), implied_words(query))[0]

    def _bm25(self, said: list[str], implied: list[str]) -> tuple[dict[int, float], float]:
        """``bm25`` of a query whose words are ``said`` and whose implied words ``implied``,
        by tool in tool order; and the weight of its strongest word (1: a word of the query
        is in some tool's text; less: only its synonyms or close words are)."""
        tokens = list(dict.fromkeys(said))
        unknown = [token for token in tokens if token not in self._postings]
        if len(unknown) > MOST_UNKNOWN_WORDS:  # pasted data, not words to correct
            tokens = [t for t in tokens if t in self._postings] + unknown[:MOST_UNKNOWN_WORDS]
        weighted: dict[str, float] = {}
        for word in implied:
            if word in self._postings and word not in tokens:
                weighted[word] = SYNONYM_WEIGHT
        for token in tokens:
            for word, weight in self.expand(token):
                weighted[word] = max(weighted.get(word, 0.0), weight)
            for related in SYNONYMS.get(token, ()):
                if related in self._postings and related not in tokens:
                    weighted[related] = max(weighted.get(related, 0.0), SYNONYM_WEIGHT)
        strength = max(weighted.values(), default=0.0)
        if self._arrays is not None:
            import numpy

            dense = numpy.zeros(len(self.documents))
            for word, weight in weighted.items():
                indices, parts = self._arrays[word]
                dense[indices] += weight * self._idf[word] * parts
            matched = numpy.flatnonzero(dense)  # every part is positive
            return dict(zip(matched.tolist(), dense[matched].tolist(), strict=True)), strength
        totals: dict[int, float] = defaultdict(float)
        for word, weight in weighted.items():
            scaled = weight * self._idf[word]
            for index, part in self._postings[word]:
                totals[index] += scaled * part
        return dict(sorted(totals.items())), strength  # in tool order, as the arrays give
