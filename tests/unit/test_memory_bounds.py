"""What bounds the memory of toolscript's own processes: the warm checker's V8 heap, young
generation included, and freed C heap given back after a large load."""

from __future__ import annotations

import platform

import pytest

from toolscript.gateway.checker import _v8_flags
from toolscript.plumbing.processes import return_free_memory


def test_the_checkers_young_generation_is_kept_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DENO_V8_FLAGS", raising=False)
    flags = _v8_flags().split(",")
    assert "--max-semi-space-size=1" in flags
    assert "--max-old-space-size=512" in flags


def test_the_users_own_v8_bounds_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENO_V8_FLAGS", "--max-semi-space-size=8,--stack-size=2000")
    flags = _v8_flags().split(",")
    assert "--max-semi-space-size=8" in flags and "--stack-size=2000" in flags
    assert "--max-semi-space-size=1" not in flags
    assert "--max-old-space-size=512" in flags


def test_freed_memory_is_given_back_where_the_c_library_can() -> None:
    given_back = return_free_memory()
    if platform.libc_ver()[0] == "glibc":
        assert given_back  # malloc_trim


def test_the_checker_runs_without_turbofan_and_maglev_for_its_hottest_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DENO_V8_FLAGS", raising=False)
    flags = _v8_flags().split(",")
    assert "--no-opt" in flags and "--no-maglev" not in flags
    assert "--maglev" in flags and "--no-maglev-inlining" in flags
    assert "--invocation-count-for-maglev=8000" in flags
    monkeypatch.setenv("DENO_V8_FLAGS", "--no-maglev,--optimize-for-size")  # theirs stays theirs
    flags = _v8_flags().split(",")
    assert "--no-maglev" in flags and "--maglev" not in flags and "--no-opt" in flags
