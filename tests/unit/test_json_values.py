"""JSON values counted before decoding: commas and openers outside strings, in one piece
or fed in pieces cut anywhere (a stream's chunks)."""

from __future__ import annotations

import json

import pytest

from toolscript.plumbing.jsonvalues import ValueCount, json_values


def test_structure_is_counted() -> None:
    assert json_values(b"{}") == 1
    assert json_values(b"[" + b"{}," * 999 + b"{}]") == 1 + 999 + 1000
    assert json_values(b'{"a": [1, 2, {}], "b": "x"}') == 6


def test_commas_and_openers_in_strings_are_not_values() -> None:
    csv = "a,b,c\n[1],{2}\n" * 1000
    assert json_values(json.dumps({"content": csv}).encode()) == 1


@pytest.mark.parametrize(
    "text",
    [
        r'{"a": "say \"x, y\" [z]", "b": [1, 2]}',  # escaped quotes stay in the string
        r'{"a": "C:\\", "b": [1, 2]}',  # an escaped backslash before the closing quote
        r'{"a": "\\\"{[,", "b": [1, 2]}',  # both, then brackets still in the string
    ],
)
def test_escapes_do_not_end_a_string(text: str) -> None:
    assert json.loads(text)  # valid JSON
    assert json_values(text.encode()) == 1 + 1 + 1 + 1  # {, the comma, [, its comma


def test_pieces_cut_anywhere_count_as_the_whole() -> None:
    text = json.dumps(
        {"s": 'q"u\\o,t[e{', "t": ["\\", '"', ",", {"k": '\\\\"'}], "n": [1, 2, 3]}
    ).encode()
    whole = json_values(text)
    for cut in range(len(text) + 1):
        for second in range(cut, len(text) + 1):
            counter = ValueCount()
            counter.feed(text[:cut])
            counter.feed(text[cut:second])
            assert counter.feed(text[second:]) == whole, (cut, second)


def test_many_values_are_many() -> None:
    body = json.dumps({"x": [{} for _ in range(10_000)]}).encode()
    assert json_values(body) == 1 + 1 + 10_000 + 9_999


@pytest.mark.parametrize(
    "text",
    [
        b'"' * 200_000,  # quotes only
        b'"ab"ab' * 40_000,  # many short strings
        b'",\n' * 80_000,  # quotes no line closes
        (b'"' + b"a" * 32) * 8_000,  # strings too short to follow one by one
    ],
)
def test_many_short_strings_are_counted_raw_at_least(text: bytes) -> None:
    """A text of many short strings is not cut at each quote (its cost bounded): its
    commas and openers are counted raw, never fewer than outside its strings."""
    assert json_values(text) == text.count(b",") + text.count(b"[") + text.count(b"{")


def test_a_list_of_short_strings_counts_its_values() -> None:
    body = json.dumps(["a"] * 100_000).encode()
    assert json_values(body) >= 100_000
