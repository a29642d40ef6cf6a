"""A local tool's parameters described in its docstring's ``Args:`` section (Google style)
are the input schema's descriptions: they were left in the tool's description, and each
member of its types had no word (with pydantic's titles dropped, none at all)."""

from __future__ import annotations

from toolscript.upstream.worker import docstring_arguments

DOC = """Daily forecast for a city.

Args:
    city: The city name,
        as written on a map.
    days (int): How many days.
    options: Extra settings:
        units: metric or imperial.

Returns:
    The forecast, a day an item."""


def test_the_args_section_describes_the_parameters_and_leaves_the_description() -> None:
    description, arguments = docstring_arguments(DOC)
    assert description == "Daily forecast for a city.\n\nReturns:\n    The forecast, a day an item."
    assert arguments == {
        "city": "The city name, as written on a map.",
        "days": "How many days.",
        "options": "Extra settings: units: metric or imperial.",
    }


def test_a_docstring_without_one_is_kept_whole() -> None:
    assert docstring_arguments("Add two numbers.\n\nFast.") == ("Add two numbers.\n\nFast.", {})
