"""Stop 66's attack on the map rule of inferred result types: a server's results keyed by
a person's data that the rule did not take for data named fields in the agent's module:
people's names and column titles (words with spaces), phone numbers written with
parentheses, and user names one per call (each a plain word, kept as a field up to the
cap of 100)."""

from __future__ import annotations

from functools import reduce
from typing import Any

import pytest

from toolscript.codegen.shapes import bounded, merge, shape_of, to_schema


def _learned(*values: Any) -> dict[str, Any]:
    return to_schema(bounded(reduce(merge, (shape_of(value) for value in values), None)))


@pytest.mark.parametrize(
    "key", ["Jane Doe", "Q3 budget (draft)", "+1 (555) 123-4567", "(555)123-4567", "Due\tDate"]
)
def test_keys_that_are_a_persons_data_make_a_map(key: str) -> None:
    schema = _learned({key: {"status": "ok"}})
    assert key not in str(schema)
    assert schema["additionalProperties"]["properties"] == {"status": {"type": "string"}}


def test_user_names_learned_one_per_call_end_in_a_map() -> None:
    results = [{f"user{chr(97 + i % 26)}{chr(97 + i // 26)}x": "online"} for i in range(150)]
    schema = _learned(*results)
    assert "userbax" not in str(schema) and "useraax" not in str(schema)
    assert schema == {"type": "object", "additionalProperties": {"type": "string"}}


def test_one_result_keyed_by_many_plain_names_is_a_map() -> None:
    names = {f"name{chr(97 + i % 26)}{chr(97 + i // 26)}": i for i in range(101)}
    assert "properties" not in _learned(names)


def test_field_names_of_real_apis_stay_fields() -> None:
    schema = _learned({"id": 1, "fullName": "x", "created_at": "y", "html_url": "z"})
    assert set(schema["properties"]) == {"id", "fullName", "created_at", "html_url"}
