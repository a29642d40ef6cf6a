"""Every number a search ranking depends on, in one frozen object, each with its meaning.

The mechanisms (lexical.py, fusion.py, needs.py, text.py, engine.py) take a
``SearchParameters`` and default to ``PARAMETERS``; a benchmark or an experiment passes
another (``dataclasses.replace(PARAMETERS, need_weight=0.6)``). How each value was chosen,
and what the alternatives measured, is in bench/NOTES.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from toolscript.errors import UsageError

__all__ = ["MAX_QUERY", "PARAMETERS", "SearchParameters", "check_query_length"]

# A search request's length, bounding each request's work: room for a task with data pasted
# in (which the split leaves out), none for a document (splitting into needs was quadratic
# once: a script's 16,000 characters held the gateway for seconds; linear now, 17 ms).
# The gateway refuses a longer one; the CLI before it starts a gateway, the MCP face's
# search_tools in its input schema.
MAX_QUERY = 8000


def check_query_length(query: str) -> None:
    """Refuse a search request longer than ``MAX_QUERY`` characters, saying the cap."""
    if len(query) > MAX_QUERY:
        raise UsageError(
            f"a search query of {len(query)} characters; at most {MAX_QUERY}",
            hint="describe the task in a sentence or two: search for each part on its own",
        )


@dataclass(frozen=True)
class SearchParameters:
    """The numbers of the search pipeline, in the order a request meets them."""

    # -- reading tools (text.py): what the embedding model reads of a tool -----------------
    model_description_chars: int = 600  # of the tool's description
    model_parameter_names: int = 12  # parameter names listed
    model_server_chars: int = 200  # of the server's description, last

    # -- reading a request (needs.py) ------------------------------------------------------
    max_needs: int = 6  # more pieces than this are joined into the last
    min_words: int = 2  # content words a piece needs to be a request of its own
    max_written: int = 2  # files a request asks to write that each add a need
    max_read: int = 1  # files a split request names, not to write, that each add a need

    # -- keyword retrieval (lexical.py): BM25F plus name coverage --------------------------
    k1: float = 1.2  # BM25 term-frequency saturation
    b: float = 0.75  # BM25 length normalisation
    # each field's weight in a tool's term counts; "asides" are example values and the
    # tools a parameter cites: weak evidence
    field_weights: Mapping[str, float] = field(
        hash=False,  # a mapping: the other fields hash the parameters
        default_factory=lambda: MappingProxyType(
            {"name": 3.0, "description": 1.0, "parameters": 0.5, "server": 0.5, "asides": 0.2}
        ),
    )
    synonym_weight: float = 0.5  # a synonym's (or implied word's) weight against the word said
    name_weight: float = 0.2  # share of the keyword score given to name coverage
    name_synonym_credit: float = 0.7  # a name word the query says only with a synonym
    # a name word the query says in the other number ("jobs" against "get_job", "job"
    # against "list_jobs"): a list tool names its things in the plural, a tool for one in
    # the singular
    name_number_credit: float = 0.75
    # a lister's score where the request names one of its things by its identifier and its
    # server has a tool for one ("list_page_templates" against "get_page_template")
    lister_of_one: float = 0.9
    most_unknown_words: int = 24  # unknown words matched to close words; the rest match nothing
    close_min_length: int = 4  # shorter unknown words have no close words
    close_length_gap: int = 3  # a close word's length differs by at most this much
    close_similarity: int = 80  # least fuzz ratio (0..100) of a typo's close word
    close_credit: float = 0.8  # a typo's close word weighs similarity x this
    # least fuzz ratio of a close word that counts for a tool's name too (lexical._corrected):
    # typos score 89 to 93 ("dashbaord", "serch", "forcast"), real words no tool has 80 to 86
    # against their close words ("salar" of "salaries": "solar", "thing": "think")
    close_name_similarity: int = 88
    prefix_credit: float = 0.6  # a word the unknown one begins weighs this
    close_kept: int = 3  # close words per unknown word

    # -- the blend (fusion.py): semantic weight around alpha, by the keyword ranking's shape -
    peaked_shift: float = -0.1  # the semantic weight's change when the keyword ranking is peaked
    flat_shift: float = 0.2  # ... and when its ``flat_depth``-th hit scores as high as its best
    flat_depth: int = 10  # the rank whose keyword score tells peaked from flat
    cjk_alpha: float = 0.2  # alpha at most this for mostly-CJK queries (the default model)

    # -- ranking and merging (engine.py) ---------------------------------------------------
    thin_description: int = 40  # a tool described in fewer characters is thinly described
    bests_within: int = 5  # a thinly described retriever's best keeps a place in these first
    # a deprecated tool's score counts this much in its need's ranking: the tool that
    # replaces it (which its description names) comes first, it still shows
    deprecated_weight: float = 0.8
    need_weight: float = 0.5  # a need's hits after its best, against the whole request's
    implied_within: int = 3  # first hits whose coordinate parameters imply a geocoder
    same_server: float = 1.25  # a geocoder on the taker's server counts its score this much
    weak_cosine: float = 0.2  # every cosine under this: matched nothing (a word or not)


PARAMETERS = SearchParameters()
