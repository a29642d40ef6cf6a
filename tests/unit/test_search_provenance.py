"""Where a value was found, said beside it ("from the earlier list output"), is not the need."""

from __future__ import annotations

import pytest

from toolscript.search.lexical import LexicalIndex
from toolscript.search.text import document_for, keyword_query, semantic_query, without_provenance


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        (
            "the PRA portal from the earlier list output, id 7205: its domain",
            "the PRA portal , id 7205: its domain",
        ),
        ("the address in the previous step's output (bc1p8xq)", "the address (bc1p8xq)"),
        ("the deeptrace from the previous call — its cloud path", "the deeptrace — its cloud path"),
        ("the event from the last result has attachment 991", "the event has attachment 991"),
        ("the ids in the above response", "the ids"),
        # what is asked: after "of", a source that is no earlier output, a recording of a call
        ("the logs of the last step", None),
        ("drop wiki.acme.local from the custom url category", None),
        ("bing result 3 from the last search", None),
        ("messages from that call with the vendor", None),
        ("the output from the previous call", "the output"),
        ("from the previous call", None),  # nothing else would be left
    ],
)
def test_where_a_value_was_found_is_not_read(request_text: str, read: str | None) -> None:
    expected = request_text if read is None else read
    assert without_provenance(request_text).split() == expected.split()


PORTAL_TOOLS = [
    {"name": "zpa_list_pra_portals", "description": "List the PRA portals, filtered by name."},
    {"name": "zpa_get_pra_portal", "description": "Get one PRA portal by its ID."},
]
FROM_A_LIST = (
    "the PRA portal vendor-access.acme.com from the earlier list output, id 72058304855099871:"
    " its certificate and domain"
)


def test_a_value_from_a_lists_output_finds_its_getter_not_the_lister() -> None:
    documents = [document_for("zscaler", "", tool) for tool in PORTAL_TOOLS]
    index = LexicalIndex(documents)

    def first(query: str) -> str:
        scores = index.scores(query)
        return documents[max(scores, key=lambda i: scores[i])].name

    assert first(FROM_A_LIST) == "zpa_list_pra_portals"  # read whole, "list output" says list
    assert first(keyword_query(FROM_A_LIST)) == "zpa_get_pra_portal"
    assert first(keyword_query("list the PRA portals")) == "zpa_list_pra_portals"
    assert "list" not in semantic_query(FROM_A_LIST).split()
