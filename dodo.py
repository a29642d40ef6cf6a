"""doit entry for this repository: ``doit`` rebuilds the artifacts of ./.toolscript.json in cache/.

``doit list`` shows the tasks; ``TOOLSCRIPT_CONFIG=examples/reference.toolscript.json doit``
builds them for the reference servers. In another project, a dodo.py holding
``from toolscript.pipeline.dodo import *`` does the same into ``.toolscript/``.
"""

import os
from pathlib import Path

os.environ.setdefault("TOOLSCRIPT_CACHE_DIR", str(Path(__file__).resolve().parent / "cache"))

from toolscript.pipeline.dodo import *  # noqa: F403
