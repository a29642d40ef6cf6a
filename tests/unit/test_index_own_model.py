"""Standalone ``doit``'s index task embeds with a model of its own, which no query goes
through: it is loaded without the faster query runtimes (an ONNX export, a bfloat16 copy),
seconds of CPU at each build that embeds (the first build of a project, under a loaded
machine, took its whole time limit)."""

from __future__ import annotations

from pathlib import Path

from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.tasks.index import own_indexing


def test_the_index_tasks_own_model_is_loaded_for_embedding_only(tmp_path: Path) -> None:
    indexing = own_indexing(CacheLayout(tmp_path), None)
    assert indexing.embedder.fast_queries is False
    assert not indexing.embedder.loaded  # (made, not loaded: the task loads it to embed)
