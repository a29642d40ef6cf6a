"""A Python version against a PEP 723 ``requires-python``: PEP 440's rules for the plain
versions interpreters have (checked against ``packaging`` by hand: it is not a dependency)."""

from __future__ import annotations

import pytest

from toolscript.plumbing.requirespython import InvalidSpecifier, python_satisfies

CASES = [
    (">=3.10", "3.11.7", True),
    (">=3.99", "3.11.7", False),
    (">= 3.8 , < 4", "3.11.7", True),
    ("<3.11", "3.11.7", False),
    ("<3.12", "3.12.0rc1", False),  # "<3.12" keeps 3.12's own pre-releases out
    ("<3.12.0rc2", "3.12.0rc1", True),
    (">=3.12.0rc1", "3.12.0", True),
    ("==3.11", "3.11.0", True),  # zero-padded
    ("==3.11.*", "3.11.7", True),
    ("!=3.11.*", "3.11.7", False),
    ("==3.*", "3.13.1", True),
    ("~=3.10", "3.13.1", True),
    ("~=3.11.5", "3.12.0", False),
    ("~=3.11.5", "3.11.7", True),
    (">3.11", "3.11.7", True),
    (">3.11.7", "3.11.7", False),
    (">=3.11.7.dev0", "3.11.7", True),
    ("<3.11.7.post1", "3.11.7", True),
    ("===3.11.7", "3.11.7", True),
    ("", "3.9.18", True),
]


@pytest.mark.parametrize(("specifier", "version", "expected"), CASES)
def test_versions_against_specifiers(specifier: str, version: str, expected: bool) -> None:
    assert python_satisfies(specifier, version) is expected


@pytest.mark.parametrize("specifier", ["3.10", ">=three", ">=3.10.*", "~=3", ">=3.10,,"])
def test_what_pep_440_does_not_allow_is_refused(specifier: str) -> None:
    with pytest.raises(InvalidSpecifier):
        python_satisfies(specifier, "3.11.7")
