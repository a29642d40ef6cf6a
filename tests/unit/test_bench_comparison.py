"""The earlier designs search is compared with (bench/search/comparison.py): the seed blend
and the fixed fusion, ranked from the product's pieces, not served by it."""

from __future__ import annotations

import pytest

from bench.search.comparison import compared
from tests.unit.test_search_needs import FILLER, LIKED, hand_made_vectors, hybrid_engine
from toolscript.config import SearchConfig
from toolscript.search.engine import MODES, SearchEngine
from toolscript.search.parameters import PARAMETERS
from toolscript.search.semantic import EmbeddingStore
from toolscript.search.text import document_for

pytest.importorskip("numpy", reason="numpy comes with the semantic extra")


def test_the_fixed_fusion_keeps_a_thinly_described_best_in_the_plain_order() -> None:
    # As in test_hybrid_search_keeps_a_thinly_described_best_in_its_first_five: the
    # product places the keyword ranking's best fifth; the design before did not.
    engine = hand_made_vectors({**LIKED, **FILLER, "zebra_lookup": [0.0, 1.0]}, [1.0, 0.0])
    product = [hit.tool for hit in engine.search("zebra lookup", alpha=0.9, threshold=0)[0]]
    assert product.index("zebra_lookup") == PARAMETERS.bests_within - 1
    fixed, mode, needs = compared(engine, "zebra lookup", "fixed", alpha=0.9, threshold=0)
    assert mode == "hybrid" and needs == ["zebra lookup"]
    names = [hit.tool for hit in fixed]
    assert names.index("zebra_lookup") > PARAMETERS.bests_within - 1
    assert names[:4] == ["tool_0", "tool_1", "tool_2", "tool_3"]
    assert all(hit.placed is None for hit in fixed)
    assert all(hit.semantic_weight == 0.9 for hit in fixed)  # alpha itself, not adapted


def test_the_fixed_fusion_reads_the_request_as_typed() -> None:
    dictated = "leave a comment on issue 17 saying I'm looking into it"
    documents = [document_for("s", "", {"name": "add_comment", "description": ""})]
    engine, model = hybrid_engine(documents, [[1.0, 0.0]], [1.0, 0.0])
    engine.search(dictated, threshold=0)
    assert model.asked[-1] == ["leave a comment on issue 17"]  # the product's reading
    compared(engine, dictated, "fixed", threshold=0)
    assert model.asked[-1] == [dictated]


def test_the_seed_blend_is_cosine_and_fuzzy_ratio_of_the_request_whole() -> None:
    from thefuzz import fuzz

    documents = [
        document_for("s", "", {"name": "read_file", "description": "Read a file from disk"}),
        document_for("s", "", {"name": "send_mail", "description": "Send an e-mail message"}),
    ]
    engine, _ = hybrid_engine(documents, [[0.6, 0.8], [1.0, 0.0]], [1.0, 0.0])
    request = "read the file notes.md, then send it by e-mail to bob"
    assert len(engine.explain(request, threshold=0)[2]) > 1  # the product splits it
    hits, mode, needs = compared(engine, request, "seed", threshold=0)
    assert mode == "seed" and needs == [request]
    for hit, document in ((hit, d) for hit in hits for d in documents if d.name == hit.tool):
        ratio = fuzz.token_set_ratio(
            request.lower(), f"{document.name} {document.description}".lower()
        )
        assert hit.score == pytest.approx(0.7 * hit.semantic + 0.3 * ratio / 100)
    assert hits[0].keyword > 0 and hits[0].semantic_part is None  # the keyword part, shown


def test_comparisons_rank_by_keywords_until_the_model_is_ready() -> None:
    engine = SearchEngine(SearchConfig(semantic=False), EmbeddingStore(None), None)
    engine.set_documents([document_for("s", "", {"name": "get_time", "description": "Time"})])
    for comparison in ("seed", "fixed"):
        hits, mode, _ = compared(engine, "get time", comparison, threshold=0)
        assert mode == "keyword" and [hit.tool for hit in hits] == ["get_time"]
    with pytest.raises(ValueError, match="unknown comparison 'magic'"):
        compared(engine, "get time", "magic")


def test_the_product_has_no_comparison_modes() -> None:
    assert MODES == ("hybrid", "keyword", "semantic")
