"""A server's name of any length makes file names a disk takes, distinct for each name
(tests/integration/test_attacks_stop59.py runs a gateway on one of 300 characters)."""

from __future__ import annotations

from toolscript.pipeline.artifacts import file_slug


def test_a_long_server_name_makes_a_short_file_name_of_its_own() -> None:
    names = ["B" * 300, "b" * 300, "B" * 299 + "C", "B" * 100, "b" * 101]
    slugs = [file_slug(name) for name in names]
    assert all(len(slug.encode()) <= 109 for slug in slugs)
    assert len({slug.lower() for slug in slugs}) == len(names)
    assert file_slug("b" * 100) == "b" * 100  # a name it keeps whole stays as it was
    assert file_slug("é" * 300).startswith("_" * 100 + "-")
