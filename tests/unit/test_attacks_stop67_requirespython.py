"""Stop 67's attack on a local tool file's ``requires-python`` (a cloned repository's file):
a version number past Python's 4,300 digits raised a bare ValueError, not InvalidSpecifier,
so the file failed with ``ValueError: Exceeds the limit (4300 digits) for integer string
conversion`` and nothing saying which setting or what to write. Now it is a specifier that
cannot be read, named as such.

What held: the patterns are linear (a specifier of a million release numbers, or of many
clauses, is read in one pass), and ``.*`` with pre-, post- or dev-releases is refused.
"""

from __future__ import annotations

import pytest

from toolscript.plumbing.requirespython import InvalidSpecifier, python_satisfies

HUGE = "9" * 5000


@pytest.mark.parametrize(
    "specifier",
    [
        f">={HUGE}",
        f">=3.{HUGE}",
        f">=3.12rc{HUGE}",
        f">=3.12.post{HUGE}",
        f">=3.12-{HUGE}",
        f">=3.12.dev{HUGE}",
        f"=={HUGE}.*",
    ],
)
def test_a_number_past_python_s_digits_is_an_unreadable_specifier(specifier: str) -> None:
    with pytest.raises(InvalidSpecifier, match="5,000 digits"):
        python_satisfies(specifier, "3.12.1")


def test_what_held_long_specifiers_are_read() -> None:
    assert python_satisfies(">=3" + ".0" * 100_000, "3.12.1")
    assert python_satisfies(",".join([">=3.10"] * 10_000), "3.12.1")
    with pytest.raises(InvalidSpecifier):
        python_satisfies("==3.12rc1.*", "3.12.1")
