"""A query worker that failed is replaced, not taken back while its process is still going.

A killed worker's process takes a moment to exit (a model in memory to tear down); until it
has, it looked alive. The reload that its failure started found it "serving" and was done at
once, with no new worker: the next query failed again, within 30 s of that reload, and
search stayed keyword-only until the gateway restarted (test_search.py's
test_the_model_runs_outside_the_gateway, under load)."""

from __future__ import annotations

import psutil
import pytest

from tests.helpers import needs_semantic
from toolscript.errors import EmbedderFailed


@needs_semantic
def test_a_failed_worker_whose_process_has_not_exited_yet_is_replaced_on_reload() -> None:
    from toolscript.search.process import EmbedderProcess

    embedder = EmbedderProcess()
    try:
        embedder.load()
        assert embedder.embed_queries(["what time is it in Tokyo"]).shape == (1, 384)
        assert embedder.pid is not None
        failed = psutil.Process(embedder.pid)
        # The worker is going: its answers' pipe is gone, its process not yet (held
        # stopped here, as a dying process is for a moment: no answer, no exit).
        failed.suspend()
        worker = embedder._light_worker
        assert worker is not None
        worker._process.stdout.close()  # type: ignore[union-attr]
        with pytest.raises(EmbedderFailed, match="the embedding process stopped"):
            embedder.embed_queries(["what time is it in Tokyo"])
        assert failed.is_running() and failed.status() != psutil.STATUS_ZOMBIE
        assert not embedder.loaded and embedder.workers() == []  # it serves no more
        embedder.load()  # what the search engine's reload does
        assert embedder.pid is not None and embedder.pid != failed.pid
        assert embedder.embed_queries(["what time is it in Tokyo"]).shape == (1, 384)
        assert not failed.is_running()  # stopped and reaped when its successor started
    finally:
        embedder.close()
    assert embedder.workers() == []
