"""A unique start of a run's id among the ids a gateway holds (`store.runlog.unique_start`)."""

from __future__ import annotations

import pytest

from toolscript.errors import UsageError
from toolscript.store.runlog import unique_start

IDS = ["20261128-101500-3f9a1c", "20261128-101502-77aa01", "20261127-090000-000001"]


def test_a_whole_id_or_a_unique_start_names_its_run() -> None:
    assert unique_start("20261128-101500-3f9a1c", IDS) == "20261128-101500-3f9a1c"
    assert unique_start("20261128-101502", IDS) == "20261128-101502-77aa01"
    assert unique_start("20261129", IDS) is None


def test_a_whole_id_is_its_run_even_when_it_starts_another() -> None:
    assert unique_start("ab", ["ab", "abc"]) == "ab"


def test_an_ambiguous_start_names_the_newest_runs_it_matches() -> None:
    with pytest.raises(UsageError) as raised:
        unique_start("20261128-1015", IDS)
    assert "20261128-101502-77aa01, 20261128-101500-3f9a1c" in str(raised.value)
    assert "20261127" not in str(raised.value)


def test_an_empty_start_is_refused() -> None:
    with pytest.raises(UsageError, match="empty"):
        unique_start("  ", IDS)
