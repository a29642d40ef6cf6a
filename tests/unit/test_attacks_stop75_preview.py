"""The preview of output past its cap parses JSON of at most ``PREVIEW_VALUES`` values
(stop 75): 60 MB of ``[{},{},...]`` a script printed or returned was parsed whole, 21 million
Python objects, and took ``exec`` (and the MCP face, a long-lived process) 1.5 GB."""

from __future__ import annotations

import json

from toolscript.store.outputs import MORE_KEY, PREVIEW_VALUES, preview


def test_output_of_too_many_values_is_previewed_as_text() -> None:
    data = b"[" + b"{}," * PREVIEW_VALUES + b"{}]"
    text, is_json = preview(data, 16 * 1024)
    assert not is_json
    assert text.startswith("[{},{},")
    assert MORE_KEY in text


def test_output_of_fewer_values_is_still_a_json_preview() -> None:
    records = [{"id": index, "name": f"n{index}"} for index in range(100_000)]
    text, is_json = preview(json.dumps(records).encode(), 16 * 1024)
    assert is_json
    shown = json.loads(text)
    assert shown[0] == {"id": 0, "name": "n0"}
