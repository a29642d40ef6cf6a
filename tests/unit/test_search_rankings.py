"""Pinned rankings: a fixed catalogue and fixed requests, ranked by keyword search as a
gateway without the model ranks them (needs split, files and places implied, merged).

A change that moves any of these rankings fails here: if the move is meant, rewrite the
pins with ``python -m tests.unit.test_search_rankings`` and say why in the commit. The
whole benchmark's rankings, hybrid included: bench/search_rankings_snapshot.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolscript.config import SearchConfig
from toolscript.search.engine import SearchEngine
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import documents_for

DATA = Path(__file__).parent / "data"
CATALOGUE = json.loads((DATA / "search_catalogue.json").read_text())
PINS = DATA / "search_rankings.json"

# (request, search options): synonyms, short forms, typos, split requests, files written
# and read, implied coordinates, literal values, a server filter, nonsense
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("what time is it in tokyo", {}),
    ("convert 3pm new york time to tokyo", {}),
    ("list my open PRs", {}),
    ("create a jira ticket", {}),
    ("find the open PRs that touch auth and post a summary to Slack", {}),
    ("Make an introduction PPT and help me save it to /root/ppt/intro.pptx", {}),
    ("read the customers in /root/customers.csv and tell me Sheryl's email", {}),
    ("summarize report.pdf and send it to the team on slack", {}),
    ("search code for useState then write the results to notes.md", {}),
    ("show me where to park near the Forbidden City", {}),
    ("show me where to park near 39.9163, 116.3972", {}),
    ("weather in Paris today", {}),
    ("take a screenshott of the page", {}),
    ("remember that Alice likes tea", {}),
    ("set the user agent to 'Mozilla/5.0 (X11; Linux x86_64)'", {}),
    ("what tables are in the database", {}),
    ("reply in the thread saying I'm looking into it", {}),
    ("1. clone the repo 2. run the tests 3. open an issue for failures", {}),
    ("rename issue 88 to 'crash on startup'", {}),
    ("xyzzy plugh", {}),
    ("list", {"server": "github", "limit": 3}),
    ("create an issue and comment on it", {"split": False}),
    ("send a message", {"threshold": 0.5}),
]


def engine() -> SearchEngine:
    search = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    search.set_documents(
        [
            document
            for server, entry in CATALOGUE.items()
            for document in documents_for(server, entry["description"], entry["tools"])
        ]
    )
    return search


def ranking(search: SearchEngine, request: str, options: dict[str, Any]) -> dict[str, Any]:
    hits, mode, needs, _ = search.explain(request, **options)
    return {
        "mode": mode,
        "needs": needs,
        "hits": [[hit.server, hit.tool, round(hit.score, 6), hit.need] for hit in hits],
    }


@pytest.fixture(scope="module")
def keyword_engine() -> SearchEngine:
    return engine()


@pytest.mark.parametrize(("request_text", "options"), REQUESTS)
def test_a_pinned_request_ranks_as_pinned(
    keyword_engine: SearchEngine, request_text: str, options: dict[str, Any]
) -> None:
    pinned = json.loads(PINS.read_text())[request_text]
    found = ranking(keyword_engine, request_text, options)
    assert [hit[:2] for hit in found["hits"]] == [hit[:2] for hit in pinned["hits"]]
    assert _close(found, pinned), found


def _close(found: Any, pinned: Any) -> bool:
    """``found`` equals ``pinned``, floats to 1e-6."""
    if isinstance(found, float) and isinstance(pinned, float):
        return abs(found - pinned) <= 1e-6
    if isinstance(found, list) and isinstance(pinned, list):
        return len(found) == len(pinned) and all(map(_close, found, pinned))
    if isinstance(found, dict) and isinstance(pinned, dict):
        return found.keys() == pinned.keys() and all(_close(found[k], pinned[k]) for k in found)
    return bool(found == pinned)


if __name__ == "__main__":  # rewrite the pins (only for a ranking change that is meant)
    search = engine()
    pins = {request: ranking(search, request, options) for request, options in REQUESTS}
    PINS.write_text(json.dumps(pins, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(pins)} rankings pinned in {PINS}", file=sys.stderr)
