"""Which Deno binary toolscript runs: ``TOOLSCRIPT_DENO`` whenever set, else the ``deno``
package's, looked for once a process (its search reads Python's install schemes, and the
MCP face starts a Deno every execute)."""

from __future__ import annotations

import deno
import pytest

from toolscript.plumbing import denobinary


def test_the_package_s_binary_is_looked_for_once_and_toolscript_deno_still_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked: list[int] = []
    real = deno.find_deno_bin

    def counted() -> str:
        looked.append(1)
        return str(real())

    monkeypatch.setattr(deno, "find_deno_bin", counted)
    monkeypatch.delenv("TOOLSCRIPT_DENO", raising=False)
    denobinary._package_binary.cache_clear()
    try:
        first = denobinary.deno_binary()
        assert [denobinary.deno_binary() for _ in range(3)] == [first] * 3
        assert first == str(real())
        assert len(looked) == 1
        monkeypatch.setenv("TOOLSCRIPT_DENO", "/opt/own/deno")  # the user's choice, at once
        assert denobinary.deno_binary() == "/opt/own/deno"
    finally:
        denobinary._package_binary.cache_clear()
