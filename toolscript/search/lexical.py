"""Keyword retrieval over tool documents: BM25F with typo-tolerant query terms, plus name coverage.

A tool's keyword score runs from 0 to 1: ``(1 - name_weight)`` of it is its BM25F score
scaled by the query's best, ``name_weight`` of it is how much of the tool's name the query
explains (``jira_create_issue`` is fully explained by "create a jira ticket";
``jira_batch_create_issues`` is not, as nothing asked for a batch). BM25 alone ranks them
nearly alike; the coverage puts the tool whose name says what was asked first.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import defaultdict
from typing import Any

from toolscript.search.parameters import PARAMETERS, SearchParameters
from toolscript.search.text import (
    CACHED_WORD,
    ToolDocument,
    added_new,
    changes_one,
    named_one,
    plural_words,
    query_tokens,
    stem,
    tokenize,
    verbless_plural,
)
from toolscript.search.words import IMPLIED_WORDS, SYNONYM_GROUPS

__all__ = ["SYNONYMS", "LexicalIndex", "implied_words", "transposed"]

_IMPLIED = [(re.compile(pattern), word) for pattern, word in IMPLIED_WORDS]


def implied_words(query: str) -> list[str]:
    """Stemmed words a query means without saying them (words.IMPLIED_WORDS)."""
    lowered = query.lower()
    return [stem(word) for pattern, word in _IMPLIED if pattern.search(lowered)]


def transposed(typed: str, word: str) -> bool:
    """Whether ``typed`` is ``word`` with two neighbouring letters swapped ("biuld", "serach",
    "staut" of "stauts"): a typist's commonest slip, one slip where the fuzz ratio counts two
    edits (80 for "biuld" against "build", as low as "salar" against "solar")."""
    if len(typed) != len(word) or typed == word:
        return False
    different = [i for i, (a, b) in enumerate(zip(typed, word, strict=True)) if a != b]
    return (
        len(different) == 2
        and different[1] == different[0] + 1
        and typed[different[0]] == word[different[1]]
        and typed[different[1]] == word[different[0]]
    )


def _synonyms() -> dict[str, list[str]]:
    """Each stemmed word of a synonym group: the other words of its groups."""
    table: dict[str, list[str]] = {}
    for group in SYNONYM_GROUPS:
        words = [stem(word) for word in group.split()]
        for word in words:
            table.setdefault(word, []).extend(
                w for w in words if w != word and w not in table[word]
            )
    return table


SYNONYMS = _synonyms()
# The verbs of a finder's name (stemmed): it names what it finds in the plural, one or many.
_FINDING = frozenset(stem(word) for word in ("search", "find", "lookup", "query", "filter"))
_LIST = stem("list")
_GET = stem("get")
_UPDATE = stem("update")
_CREATE = frozenset(SYNONYMS[stem("create")]) | {stem("create")}
JOINED_SERVER = 8  # the fewest letters of a server's one-word name a part of it can name
JOINED_PART = 6  # the fewest letters of a request's word that names such a server in part
CLOSE_WORDS_KEPT = 10_000  # unknown tokens whose close words an index remembers
# Postings from which an index imports numpy for its arrays (about 800 tools): below, the
# tuples (74 bytes more each, 1.5 MB at most) weigh less than numpy's import (12 MB).
ARRAYS_FROM = 20_000


def _numpy_for(postings: int) -> Any:
    """numpy for an index of ``postings``: the process's own once it has one (the semantic
    search's), else imported from ``ARRAYS_FROM`` postings; None for a loop instead
    (keyword-only installs, and small indexes of a process without numpy)."""
    if "numpy" in sys.modules or postings >= ARRAYS_FROM:
        try:
            import numpy
        except ImportError:  # keyword-only installs: the loop it is
            return None
        return numpy
    return None


class LexicalIndex:
    """BM25 over weighted fields; unknown query words are matched to close vocabulary words."""

    def __init__(
        self, documents: list[ToolDocument], parameters: SearchParameters = PARAMETERS
    ) -> None:
        self.documents = documents
        self.parameters = parameters
        k1, b = parameters.k1, parameters.b
        counted: list[dict[str, float]] = []
        for document in documents:
            weighted: dict[str, float] = defaultdict(float)
            for field, tokens in document.fields.items():
                weight = parameters.field_weights.get(field, 1.0)
                for token in tokens:
                    weighted[token] += weight
            counted.append(weighted)
        lengths = [sum(weighted.values()) for weighted in counted]
        average = (sum(lengths) / len(lengths)) if lengths else 1.0
        # A posting holds its document's BM25 term part, ``f (k1 + 1) / (f + k1 (1 - b + b
        # length / average))``: a query only weighs it by the word's idf (half the time of
        # a query's keyword scores went to computing it again for every posting).
        postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for index, weighted in enumerate(counted):
            norm = k1 * (1 - b + b * lengths[index] / average)
            for token, frequency in weighted.items():
                postings[token].append((index, frequency * (k1 + 1) / (frequency + norm)))
        # ... and as numpy arrays where numpy is installed (the semantic extra): a request's
        # words add up thousands of postings, half of its keyword time in a Python loop. The
        # arrays are then the only copy: a posting as a Python tuple and float is 90 bytes
        # against 16 (5 MB of the gateway at 1,600 tools).
        self._postings: dict[str, list[tuple[int, float]]] | None = postings
        self._arrays: dict[str, tuple[Any, Any]] | None = None
        numpy = _numpy_for(sum(len(found) for found in postings.values()))
        if numpy is not None:
            self._arrays = {
                token: (
                    numpy.fromiter((index for index, _ in found), numpy.intp, len(found)),
                    numpy.fromiter((part for _, part in found), numpy.float64, len(found)),
                )
                for token, found in postings.items()
            }
            self._postings = None
        self._name_sizes = [len(document.name_words) for document in documents]
        # whether a tool's name tells one thing from many by number: a finder's does not
        # ("search_cards" looks up one card by name as well as many)
        self._numbered = [not (document.name_words & _FINDING) for document in documents]
        total = len(documents)
        # Its keys are the vocabulary: ``token in self._idf`` is whether any tool says it.
        self._idf = {
            token: math.log(1 + (total - len(found) + 0.5) / (len(found) + 0.5))
            for token, found in postings.items()
        }
        # Servers' names written as one word ("simplechecklist", "taskmanager"): a request
        # names the server by two words it joins, or by a word it ends or starts with where
        # no tool writes the name as a word of its text ("transcript", "filesystem": a word
        # of the language, whose end, "script" or "system", names something else)
        self._joined_servers = frozenset(
            word
            for document in documents
            for word in tokenize(document.server)
            if len(word) >= JOINED_SERVER and word in self._idf
        )
        written = {
            word
            for document in documents
            for field, tokens in document.fields.items()
            if field != "server"
            for word in self._joined_servers.intersection(tokens)
        }
        self._compound_servers = self._joined_servers - written
        # listers whose server has a tool for one of their things, named a word apart
        # ("list_page_templates" and "get_page_template": the get is no name word)
        for_one = {
            (document.server, document.name_words)
            for document in documents
            if _LIST not in document.name_words and not document.plural_name_words
        }
        self._has_getter = [
            _LIST in document.name_words
            and bool(document.plural_name_words)
            and (document.server, document.name_words - {_LIST}) in for_one
            for document in documents
        ]
        self._named: dict[str, list[int]] = defaultdict(list)  # a word: tools it names
        for index, document in enumerate(documents):
            for word in document.name_words:
                self._named[word].append(index)
        self._vocabulary_by_initial: dict[str, list[str]] = defaultdict(list)
        for token in postings:
            self._vocabulary_by_initial[token[:1]].append(token)
        # Close words of unknown tokens, by token: a split request asks for the same ones
        # once for the whole request and again for its needs.
        self._close: dict[str, list[tuple[str, float]]] = {}

    def expand(self, token: str) -> list[tuple[str, float]]:
        """The token itself when known, else close vocabulary words (typos, partial names)."""
        if token in self._idf:
            return [(token, 1.0)]
        if len(token) < self.parameters.close_min_length:
            return []
        if len(token) > CACHED_WORD:  # a made-up word as long as the URL: not remembered
            return self._close_words(token)
        known = self._close.get(token)
        if known is None:
            if len(self._close) >= CLOSE_WORDS_KEPT:
                self._close.clear()
            known = self._close[token] = self._close_words(token)
        return known

    def _close_words(self, token: str) -> list[tuple[str, float]]:
        from thefuzz import fuzz

        p = self.parameters
        candidates = []
        for word in self._vocabulary_by_initial.get(token[:1], []):
            if abs(len(word) - len(token)) > p.close_length_gap:
                continue
            similarity = fuzz.ratio(token, word)
            if similarity >= p.close_similarity:
                candidates.append((word, similarity / 100 * p.close_credit))
            elif word.startswith(token) and len(token) >= p.close_min_length:
                candidates.append((word, p.prefix_credit))
        candidates.sort(key=lambda item: -item[1])
        return candidates[: p.close_kept]

    def scores(self, query: str) -> dict[int, float]:
        """The keyword score (0 to 1) of every document matching at least one query word."""
        tokens, every = query_tokens(query)
        tokens += self._servers_named(tokens)
        implied = implied_words(query)
        # "ip source group 552": the thing itself, as "get" would ask (a stop word: for BM25)
        one = {word for word in named_one(query) if word in self._named}
        if one:
            implied.append(_GET)
        # "add X to the Y": an update, not a creation; "add an item to the list" creates the
        # item where some tool's name creates or adds that thing
        change = changes_one(query) and not self._created(added_new(query))
        if change:
            implied.append(_UPDATE)
        totals, strength = self._bm25(tokens, implied)
        best = max(totals.values(), default=0.0)
        if best <= 0:
            return {}
        said = set(tokens)
        related: set[str] = set(implied)
        for word in every:  # stop words too: "show" means "list" (words.STOP_WORDS)
            related.update(SYNONYMS.get(word, ()))
        if change:
            related = (related - _CREATE) | {_UPDATE}
        plurals, singulars = plural_words(query)
        # "rule labels": their list (the lister's name word), where a tool's name says the
        # thing ("ventas", a Spanish plural no name has, asks for no list)
        if any(word in self._named for word in plurals) and verbless_plural(query):
            related.add(_LIST)
        related -= said  # the synonyms of every word the query has
        # How much of each tool's name the query says: its own words count 1, synonyms less,
        # and a misspelt word ("dashbaords", "serch") what its close word weighs in BM25.
        # A word said in one number only, against a name that writes it in the other, counts
        # less ("agent queues in the default cluster": list_cluster_queues over get_cluster_queue).
        only_plural, only_singular = plurals - singulars, singulars - plurals
        other_number = self.parameters.name_number_credit
        covered: dict[int, float] = defaultdict(float)
        for words, credit in ((said, 1.0), (related, self.parameters.name_synonym_credit)):
            for word in words:
                for index in self._named.get(word, ()):
                    named_plural = word in self.documents[index].plural_name_words
                    if self._numbered[index] and (
                        (word in only_plural and not named_plural)
                        or (word in only_singular and named_plural)
                    ):
                        covered[index] += credit * other_number
                    else:
                        covered[index] += credit
        for word, credit in self._corrected(said - related).items():
            for index in self._named.get(word, ()):
                covered[index] += credit
        name_weight = self.parameters.name_weight
        scale = (1 - name_weight) / best
        scores = {index: total * scale for index, total in totals.items()}
        for index, credit in covered.items():
            if index in scores:  # a named tool counts when its text matches too
                scores[index] += name_weight * credit / self._name_sizes[index]
        # one thing named by its identifier: the tool for one before its sibling lister
        # ("template tmpl-41's body": get_page_template, not list_page_templates)
        for index in scores if one else ():
            if self._has_getter[index] and one & self.documents[index].plural_name_words:
                scores[index] *= self.parameters.lister_of_one
        if strength < 1.0:  # no word of the query is in any tool: only synonyms or typos
            return {index: score * strength for index, score in scores.items()}
        return scores

    def _servers_named(self, tokens: list[str]) -> list[str]:
        """The servers' one-word names (``_joined_servers``) that ``tokens`` say in part and
        do not say whole: "my checklist app" names simplechecklist, "the task manager"
        taskmanager (two words joined). A part shorter than ``JOINED_PART``, one that
        leaves too short a rest to be a word ("research" is not "search", nor "calculator"
        "calculate"), or one of a name that tools write as a word ("script" of "transcript"),
        names none."""
        said = set(tokens)
        named = {
            server
            for server in self._compound_servers
            for token in tokens
            if len(token) >= JOINED_PART
            and len(server) - len(token) >= JOINED_PART - 2  # a word of its own besides
            and (server.endswith(token) or server.startswith(token))
        }
        named.update(a + b for a, b in itertools.pairwise(tokens) if a + b in self._joined_servers)
        return sorted(named - said)

    def _created(self, thing: str | None) -> bool:
        """Whether the name of some tool that names ``thing`` (stemmed) creates or adds it."""
        return thing is not None and any(
            self.documents[index].name_words & _CREATE for index in self._named.get(thing, ())
        )

    def _corrected(self, said: set[str]) -> dict[str, float]:
        """The words of ``said`` no tool has, as misspelt (``expand``): the closest words
        (``close_name_similarity``) that begin and end as they do ("dashbaord" is
        "dashboard", "forcast" "forecast"), each with its weight (the highest where two share
        one), less the words said. A real word no tool has is no typo: its close words are
        less alike or end otherwise ("salar", of "salaries", is not "solar", "thing" not
        "think", "outli", of "outliers", not "outlin"), and a word it begins is a guess. A
        word that two neighbouring letters swapped give (``transposed``: "biuld", "serach",
        "stauts") is a near copy whatever its ratio (a close word all the same: ``expand``)."""
        least = self.parameters.close_name_similarity / 100 * self.parameters.close_credit
        close: dict[str, float] = {}
        for token in said:
            if token in self._idf:
                continue
            for word, weight in self.expand(token):
                if word in said:
                    continue
                if transposed(token, word):
                    weight = max(weight, least)
                elif weight < least or word[0] != token[0] or word[-1] != token[-1]:
                    continue
                close[word] = max(close.get(word, 0.0), weight)
        return close

    def bm25(self, query: str) -> dict[int, float]:
        """BM25 score of every document matching at least one query word."""
        return self._bm25(tokenize(query), implied_words(query))[0]

    def _bm25(self, said: list[str], implied: list[str]) -> tuple[dict[int, float], float]:
        """``bm25`` of a query whose words are ``said`` and whose implied words ``implied``,
        by tool in tool order; and the weight of its strongest word (1: a word of the query
        is in some tool's text; less: only its synonyms or close words are)."""
        tokens = list(dict.fromkeys(said))
        unknown = [token for token in tokens if token not in self._idf]
        most = self.parameters.most_unknown_words
        if len(unknown) > most:  # pasted data, not words to correct: each costs a vocabulary pass
            tokens = [t for t in tokens if t in self._idf] + unknown[:most]
        weighted: dict[str, float] = {}
        for word in implied:
            if word in self._idf and word not in tokens:
                weighted[word] = self.parameters.synonym_weight
        # A said word's synonyms count once per tool, the best of them: a tool saying
        # "mail", "email" and "message" is no likelier the one asked for "inbox" than a tool
        # saying one (a description listing a domain's every word scored each).
        groups: list[list[str]] = []
        for token in tokens:
            for word, weight in self.expand(token):
                weighted[word] = max(weighted.get(word, 0.0), weight)
        for token in tokens:
            group = [
                related
                for related in SYNONYMS.get(token, ())
                if related in self._idf
                and related not in tokens
                and related not in weighted
                and not any(related in other for other in groups)
            ]
            if group:
                groups.append(group)
        synonym = self.parameters.synonym_weight
        strength = max([*weighted.values(), *(synonym for _ in groups[:1])], default=0.0)
        for word in [group[0] for group in groups if len(group) == 1]:
            weighted[word] = synonym  # the best of one word is that word
        groups = [group for group in groups if len(group) > 1]
        if self._arrays is not None:
            import numpy

            dense = numpy.zeros(len(self.documents))
            for word, weight in weighted.items():
                indices, parts = self._arrays[word]
                dense[indices] += weight * self._idf[word] * parts
            for group in groups:
                best = numpy.zeros(len(self.documents))
                for word in group:
                    indices, parts = self._arrays[word]
                    best[indices] = numpy.maximum(best[indices], synonym * self._idf[word] * parts)
                dense += best
            matched = numpy.flatnonzero(dense)  # every part is positive
            return dict(zip(matched.tolist(), dense[matched].tolist(), strict=True)), strength
        assert self._postings is not None  # kept where there are no arrays
        totals: dict[int, float] = defaultdict(float)
        for word, weight in weighted.items():
            scaled = weight * self._idf[word]
            for index, part in self._postings[word]:
                totals[index] += scaled * part
        for group in groups:
            bests: dict[int, float] = {}
            for word in group:
                scaled = synonym * self._idf[word]
                for index, part in self._postings[word]:
                    bests[index] = max(bests.get(index, 0.0), scaled * part)
            for index, value in bests.items():
                totals[index] += value
        return dict(sorted(totals.items())), strength  # in tool order, as the arrays give
