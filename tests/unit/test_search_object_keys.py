"""The JSON an agent writes for the call it wants filled: the model reads its keys' words, not
its values (bench/NOTES.md, the fourteenth blind set)."""

from __future__ import annotations

import pytest

from toolscript.search.text import keyword_query, semantic_query


@pytest.mark.parametrize(
    ("request_text", "read"),
    [
        (
            '{"policyId": "00p1", "ruleId": "0pr2", "name": ..., "conditions": {...}}',
            "{policy id: , rule id: , name: ..., conditions: {...}}",
        ),
        (
            '{"symbol": "AAPL", "start": "2024-01-01", "end": "2024-03-31"} prices',
            "{symbol: , start: , end: } prices",
        ),
        ("{'trigger_id': 'trg_551'} maestro delete", "{trigger id: } maestro delete"),
        # keys in an array of objects, nested objects (numbers are not cut there)
        (
            '[{"slide_index": 2, "text": "Q3"}, {"data": {"fontSize": 12}}]',
            "[{slide index: 2, text: }, {data: {font size: 12}}]",
        ),
    ],
)
def test_the_model_reads_an_objects_keys_without_its_values(request_text: str, read: str) -> None:
    assert semantic_query(request_text).split() == read.split()


@pytest.mark.parametrize(
    "request_text",
    [
        # a quoted name in prose, even before a colon, is a value: not after "{" or ","
        'rename the ZIA category "Legacy": it is misnamed',
        'error: "policyId" is required',
        # a key that is no identifier
        '{"two words": "x"} what is this',
    ],
)
def test_quoted_values_outside_an_object_stay_cut(request_text: str) -> None:
    said = semantic_query(request_text)
    assert "Legacy" not in said
    assert "policy" not in said.lower()
    assert "two words" not in said


def test_keyword_search_reads_an_object_as_before() -> None:
    request_text = (
        '{"name": "block-crypto", "urlCategories": ["CRYPTOCURRENCY"], "action": "BLOCK"}'
    )
    assert keyword_query(request_text) == request_text
