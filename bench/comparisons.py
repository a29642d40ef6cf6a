"""The rankings search is compared with: the same engine, asked as the designs before."""

from __future__ import annotations

from typing import Any


def search(engine: Any, query: str, **options: Any) -> tuple[list[Any], str, list[str]]:
    """``engine.explain`` of ``query``; ``mode="seed"`` and ``adaptive=False`` are the
    original design's blend and the design before adaptive fusion."""
    return engine.explain(query, **options)  # type: ignore[no-any-return]
