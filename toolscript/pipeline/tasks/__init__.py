"""The artifact pipeline as doit tasks: fetch -> names -> types -> module -> packages ->
scripts, catalogue, index.

One module per task, each a class whose ``tasks`` method is the doit task creator and
whose settings sit beside it. A task re-runs only when the *content* it reads changed:
fetching compares the canonical JSON of a server's live tool list with what is on disk,
and the later tasks depend on those files by checksum, so a server whose tools did not
change leaves everything downstream up to date.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from toolscript.codegen.fingerprint import generator_fingerprint
from toolscript.config import Config
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.buildlock import build_lock
from toolscript.pipeline.tasks.catalogue import CATALOGUE_TABLES, CatalogueTask
from toolscript.pipeline.tasks.fetch import FetchTasks, ToolSource
from toolscript.pipeline.tasks.index import IndexTask, SearchIndexing, load_documents
from toolscript.pipeline.tasks.module import ModuleTask
from toolscript.pipeline.tasks.names import NamesTask
from toolscript.pipeline.tasks.packages import PackagesTask
from toolscript.pipeline.tasks.runner import PipelineResult, run_doit
from toolscript.pipeline.tasks.scripts import ScriptsTask
from toolscript.pipeline.tasks.settings import TaskSettings
from toolscript.pipeline.tasks.typescript import TypesTasks
from toolscript.plumbing.cachefiles import discard_if_damaged
from toolscript.plumbing.paths import make_cache_dir

__all__ = [
    "ARTIFACT_TASKS",
    "TASK_ORDER",
    "PipelineResult",
    "SearchIndexing",
    "ToolSource",
    "build_tasks",
    "discard_planted",
    "load_documents",
    "run_pipeline",
]

ARTIFACT_TASKS = ["fetch", "names", "types", "module", "packages", "scripts", "catalogue"]
TASK_ORDER = [*ARTIFACT_TASKS, "index"]


def build_tasks(
    config: Config,
    layout: CacheLayout,
    source: ToolSource,
    indexing: SearchIndexing | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """A doit namespace (``task_*`` creators and ``DOIT_CONFIG``) for ``config``."""
    settings = TaskSettings(
        layout,
        list(config.enabled_servers),
        generator_fingerprint(),
        config.project_dir,
        config.packages,
    )
    make_cache_dir(layout.root)  # doit opens its database there
    layout.drop_links()  # a cloned repository's links (also for a standalone `doit`)
    return {
        "task_fetch": FetchTasks(settings, source).tasks,
        "task_names": NamesTask(settings).tasks,
        "task_types": TypesTasks(settings).tasks,
        "task_module": ModuleTask(settings).tasks,
        "task_packages": PackagesTask(settings).tasks,
        "task_scripts": ScriptsTask(settings).tasks,
        "task_catalogue": CatalogueTask(settings).tasks,
        "task_index": IndexTask(settings, indexing, model, config.search.semantic).tasks,
        "DOIT_CONFIG": {
            "backend": "sqlite3",
            "dep_file": str(layout.dep_file),
            "default_tasks": TASK_ORDER,
            "verbosity": 0,
        },
    }


# The table doit's sqlite3 backend makes in .doit.db (doit.dependency.SqliteDB)
DOIT_TABLES = {"doit": ("task_id", "task_data")}


def discard_planted(layout: CacheLayout) -> None:
    """The databases a build writes in place made anew when damaged, or holding what the
    build never makes there (a cloned repository's: a ``doit`` table of other columns failed
    each build's records, so each build was a whole one, an error logged): doit's, the
    catalogue. Called holding the build lock."""
    discard_if_damaged(layout.dep_file, DOIT_TABLES)
    discard_if_damaged(layout.catalogue, CATALOGUE_TABLES)


def run_pipeline(
    config: Config,
    layout: CacheLayout,
    source: ToolSource,
    *,
    tasks: list[str] | None = None,
    command: str = "run",
    indexing: SearchIndexing | None = None,
    stop: threading.Event | None = None,
    waiting: Callable[[], object] | None = None,
) -> PipelineResult:
    """Run doit in-process; returns which tasks executed and what failed. ``stop``: set, a
    wait for another build's lock ends (``buildlock.BuildStopped``); ``waiting`` is called
    once when another build holds that lock (a standalone ``doit``)."""
    if tasks is None:
        tasks = TASK_ORDER if indexing is not None else ARTIFACT_TASKS
    make_cache_dir(layout.root)
    with build_lock(
        layout.root, stop=stop, waiting=waiting
    ):  # a standalone `doit` of the project waits, or is waited for
        namespace = build_tasks(config, layout, source, indexing)
        discard_planted(layout)
        return run_doit(namespace, [command, *tasks])
