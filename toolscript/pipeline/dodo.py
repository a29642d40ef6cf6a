"""doit tasks for a project: ``from toolscript.pipeline.dodo import *`` in a dodo.py, then ``doit``.

Reads ``.toolscript.json`` from the working directory (or ``TOOLSCRIPT_CONFIG``), once the
user trusted it (``toolscript trust``),
writes into ``.toolscript/`` beside it (or ``TOOLSCRIPT_CACHE_DIR``), and
connects to the servers itself when a task needs their tools.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from toolscript.config import Config, load_config
from toolscript.errors import ToolscriptError
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.buildlock import hold_build_lock
from toolscript.pipeline.sources import ConnectingSource
from toolscript.pipeline.tasks import build_tasks, discard_planted
from toolscript.plumbing.paths import make_cache_dir
from toolscript.store.outputs import error_lines


def _load() -> Config:
    """The project's config, as the CLI reads it. A config that is invalid or not trusted
    yet is the CLI's message and exit code, not a traceback from doit's loader."""
    try:
        # It connects to the servers: a project's config runs only once the user trusted it.
        return load_config(os.environ.get("TOOLSCRIPT_CONFIG"), require_trust=True)
    except ToolscriptError as exc:  # (it may name a repository's files: shown, not obeyed)
        sys.stderr.write(error_lines(exc.message, exc.hint, sys.stderr.isatty()))
        raise SystemExit(exc.exit_code) from None


_config = _load()
# Held until doit exits (the OS lets it go): doit writes its database when it ends.
_layout = CacheLayout(make_cache_dir(_config.cache_dir()))
_build_lock = hold_build_lock(
    _layout.root,
    lambda: sys.stderr.write(
        f"toolscript: waiting for the build of {_layout.root} under way (the gateway's)\n"
    ),
)
discard_planted(_layout)
_namespace: dict[str, Any] = build_tasks(
    _config,
    _layout,
    ConnectingSource(_config),
    model=_config.search.model,
)

task_fetch = _namespace["task_fetch"]
task_names = _namespace["task_names"]
task_types = _namespace["task_types"]
task_module = _namespace["task_module"]
task_packages = _namespace["task_packages"]
task_scripts = _namespace["task_scripts"]
task_catalogue = _namespace["task_catalogue"]
task_index = _namespace["task_index"]
DOIT_CONFIG = _namespace["DOIT_CONFIG"]

__all__ = [
    "DOIT_CONFIG",
    "task_catalogue",
    "task_fetch",
    "task_index",
    "task_module",
    "task_names",
    "task_packages",
    "task_scripts",
    "task_types",
]
