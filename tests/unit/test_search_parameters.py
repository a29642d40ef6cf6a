"""The numbers of a ranking are one frozen SearchParameters that every step of the
pipeline reads: another set of them ranks differently, through the same entry points."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from toolscript.config import SearchConfig
from toolscript.search.engine import SearchEngine
from toolscript.search.lexical import LexicalIndex
from toolscript.search.needs import IMPLIED_NEEDS, PLACE_COORDINATES, is_implied, split_needs
from toolscript.search.parameters import PARAMETERS, SearchParameters
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import document_for, documents_for

CATALOGUE = json.loads((Path(__file__).parent / "data" / "search_catalogue.json").read_text())


def engine(parameters: SearchParameters = PARAMETERS) -> SearchEngine:
    search = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None, parameters)
    search.set_documents(
        [
            document
            for server, entry in CATALOGUE.items()
            for document in documents_for(server, entry["description"], entry["tools"], parameters)
        ]
    )
    return search


def test_the_parameters_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        PARAMETERS.need_weight = 0.6  # type: ignore[misc]
    with pytest.raises(TypeError):
        PARAMETERS.field_weights["name"] = 1.0  # type: ignore[index]


def test_the_split_reads_its_caps_from_the_parameters() -> None:
    request = ". ".join(f"create report number {n} for team {n}" for n in range(9))
    assert len(split_needs(request)) == PARAMETERS.max_needs
    assert len(split_needs(request, dataclasses.replace(PARAMETERS, max_needs=3))) == 3
    files = "write the summary to a.md, the notes to b.md and the log to c.md"
    written = [need for need in split_needs(files) if is_implied(need)]
    assert len(written) == PARAMETERS.max_written
    more = dataclasses.replace(PARAMETERS, max_written=3)
    assert len([need for need in split_needs(files, more) if is_implied(need)]) == 3


def test_keyword_scores_read_their_weights_from_the_parameters() -> None:
    documents = [
        document_for("weather", "", {"name": "get_forecast", "description": "Weather forecast"}),
        document_for("weather", "", {"name": "get_alerts", "description": "Weather alerts"}),
    ]
    usual = LexicalIndex(documents).scores("weather forecast")
    no_names = dataclasses.replace(PARAMETERS, name_weight=0.0)
    assert usual[1] != pytest.approx(
        LexicalIndex(documents, no_names).scores("weather forecast")[1]
    )
    flat_fields = dataclasses.replace(PARAMETERS, field_weights={"name": 1.0})
    assert usual[1] != pytest.approx(
        LexicalIndex(documents, flat_fields).scores("weather forecast")[1]
    )


def test_the_engine_ranks_with_its_own_parameters() -> None:
    request = "find the open PRs that touch auth and post a summary to Slack"
    usual = [hit.tool for hit in engine().search(request, threshold=0)[0]]
    heavier_needs = dataclasses.replace(PARAMETERS, need_weight=1.0)
    assert [hit.tool for hit in engine(heavier_needs).search(request, threshold=0)[0]] != usual


def test_the_implied_needs_are_one_rule_type() -> None:
    """Each kind of implied need is a rule of IMPLIED_NEEDS: what it finds is implied."""
    assert {rule.name for rule in IMPLIED_NEEDS} == {"files", "place coordinates"}
    assert is_implied(PLACE_COORDINATES) and is_implied("write file notes.md")
    assert not is_implied("write the notes")
    parking = "show me where to park near the Forbidden City"
    needs = engine().explain(parking, threshold=0)[2]
    assert needs == [parking, PLACE_COORDINATES]
    none_implied = dataclasses.replace(PARAMETERS, implied_within=0)
    assert engine(none_implied).explain(parking, threshold=0)[2] == [parking]
