"""A title that only spells its property's or definition's name again is not a doc comment.

Pydantic titles every field by its name (``is_dst`` -> ``"Is Dst"``) and every model by its
class name, so the types of a local Python tool file and of every server written with the
Python SDK read ``/** Is Dst */ is_dst: boolean;`` and ``/** TimeResult */ export type
...TimeResult``: a line a member that told the reader nothing. A title that says more than
the name, and a description, are kept.
"""

from __future__ import annotations

from typing import Any

from toolscript.codegen.typescript import TypeContext, render_schema

PYDANTIC_LIKE: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "TimeResult": {
            "title": "TimeResult",
            "type": "object",
            "properties": {
                "is_dst": {"title": "Is Dst", "type": "boolean"},
                "day-of-week": {"title": "Day Of Week", "type": "string"},
            },
        },
        "Zone": {"title": "An IANA time zone", "type": "string"},
    },
    "properties": {
        "time_difference": {"title": "Time Difference", "type": "string"},
        "source": {"$ref": "#/$defs/TimeResult"},
        "zone": {"$ref": "#/$defs/Zone"},
        "offset": {"title": "Offset", "description": "Hours east of UTC", "type": "number"},
        "label": {"title": "Shown above the clock", "type": "string"},
    },
}


def _rendered() -> tuple[str, list[str]]:
    context = TypeContext(prefix="T", root=PYDANTIC_LIKE)
    return render_schema(PYDANTIC_LIKE, context), context.declarations


def test_a_title_that_repeats_the_property_name_is_left_out() -> None:
    body, declarations = _rendered()
    text = body + "\n".join(declarations)
    for said in ("Time Difference", "Is Dst", "Day Of Week", "/** TimeResult */"):
        assert said not in text
    assert "  time_difference?: string;" in body.splitlines()


def test_a_title_that_says_more_and_a_description_are_kept() -> None:
    body, declarations = _rendered()
    assert "/** Shown above the clock */" in body
    assert "/** Hours east of UTC */" in body
    assert any(line.startswith("/** An IANA time zone */") for line in declarations)
