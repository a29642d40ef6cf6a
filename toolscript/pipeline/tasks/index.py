"""``index``: embeddings of new or changed tools for semantic search.

Cached in embeddings.db by (content hash, model), so only what changed is embedded.
Without the semantic extra it writes an empty database and says why, once.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from doit.tools import config_changed

from toolscript.config import ServerConfig
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.tasks.settings import TaskSettings, digest_key, read_json
from toolscript.plumbing.cachefiles import looks_whole
from toolscript.plumbing.paths import user_cache_dir
from toolscript.search.semantic import DEFAULT_MODEL, NEEDS_EXTRA, semantic_installed

if TYPE_CHECKING:  # the search stack is imported when the index is built, never to plan
    from toolscript.search.semantic import Embedder, EmbeddingStore
    from toolscript.search.text import ToolDocument

__all__ = ["IndexTask", "SearchIndexing", "load_documents"]

log = logging.getLogger("toolscript.pipeline")


@dataclass
class SearchIndexing:
    """What the index task embeds with; None means a model of its own."""

    embedder: Embedder
    store: EmbeddingStore
    # The tools' documents as the gateway's build made them from the same files: not read
    # and tokenized again (a second copy of every tool's words while it runs).
    documents: list[ToolDocument] | None = None


def load_documents(layout: CacheLayout, servers: list[ServerConfig]) -> list[ToolDocument]:
    """Search documents for every tool the fetch task wrote."""
    from toolscript.search.text import documents_for

    documents = []
    for server in servers:
        path = layout.server_tools(server.name)
        if not path.exists():
            continue
        documents.extend(documents_for(server.name, server.description, read_json(path)))
    return documents


class IndexTask:
    def __init__(
        self,
        settings: TaskSettings,
        indexing: SearchIndexing | None,
        model: str | None,
        semantic: bool = True,
    ) -> None:
        self.settings, self.indexing, self.model = settings, indexing, model
        self.semantic = semantic  # the config's search.semantic

    def tasks(self) -> dict[str, Any]:
        """Embed new or changed tools for semantic search (cached by content hash and model)."""
        layout, indexing = self.settings.layout, self.indexing
        if indexing is None and not self.semantic:
            # Keyword search only, as the config asks: the gateway indexes nothing either.
            return {"actions": [], "uptodate": [True], "verbosity": 0}
        return {
            "actions": [self.index],
            "file_dep": [layout.server_tools(s.name) for s in self.settings.servers],
            "targets": [layout.embeddings],
            "uptodate": [
                config_changed(
                    {
                        # The gateway's embedder and standalone doit name the model alike,
                        # so each finds the other's index up to date.
                        "model": indexing.embedder.requested
                        if indexing
                        else (self.model or DEFAULT_MODEL),
                        # Installing the extra later makes the index due.
                        "semantic": indexing is not None or semantic_installed(),
                    }
                ),
                functools.partial(looks_whole, layout.embeddings),  # not truncated, SQLite
            ],
            "clean": True,
            "verbosity": 1,  # its warnings (a model that fell back, no extra) reach the terminal
        }

    def index(self) -> None:
        from toolscript.search.engine import embed_missing
        from toolscript.search.semantic import EmbeddingStore

        layout = self.settings.layout
        if self.indexing is None and not semantic_installed():  # keyword search needs no index
            EmbeddingStore(layout.embeddings)  # the (empty) target, so the task is up to date
            log.warning("index: skipped, %s", NEEDS_EXTRA)
            return
        chosen = self.indexing or own_indexing(layout, self.model)
        if self.indexing is not None and not looks_whole(layout.embeddings):
            self.indexing.store.remake()  # the gateway's: truncated, not SQLite or gone
        documents = chosen.documents
        if documents is None:
            documents = load_documents(layout, self.settings.servers)
        embedded = embed_missing(documents, chosen.embedder, chosen.store, _progress_reporter())
        # The tools changed (the task runs when a tool list did): the vectors of those gone,
        # read by no search again, go, whether or not this run embedded the new ones (the
        # gateway embeds a build's new tools before it runs this task, outside its lock).
        chosen.store.keep_only(d.content_hash for d in documents)
        log.info(
            "index: %d tools, %d embedded with %s",
            len(documents),
            embedded,
            chosen.embedder.model_id,
        )


def own_indexing(layout: CacheLayout, model: str | None) -> SearchIndexing:
    """What standalone ``doit`` embeds with: a model of its own that only embeds, so it is
    loaded without the faster way queries go (an ONNX export or a bfloat16 copy, measured
    at load: seconds of CPU at each build that embeds, for queries no build makes)."""
    from toolscript.search.semantic import Embedder, EmbeddingStore

    return SearchIndexing(
        Embedder(model, fast_queries=False),
        EmbeddingStore(layout.embeddings, digest_key(user_cache_dir())),
    )


def _progress_reporter() -> Callable[[int, int], None] | None:
    """A progress bar on a terminal for indexing that takes more than a moment.

    doit captures a task's sys.stdout and sys.stderr, so the bar goes to the process's own
    stderr (``sys.__stderr__``), the terminal of `doit` or of `toolscript gateway start`.
    """
    terminal = sys.__stderr__
    if terminal is None or not terminal.isatty():
        return lambda done, total: log.info("index: embedded %d/%d tools", done, total)
    from rich.console import Console
    from rich.progress import Progress

    progress = Progress(console=Console(file=terminal), transient=True)
    task_id = progress.add_task("embedding tools", total=None)

    def report(done: int, total: int) -> None:
        if not progress.live.is_started:
            progress.start()
        progress.update(task_id, completed=done, total=total)
        if done >= total:
            progress.stop()

    return report
