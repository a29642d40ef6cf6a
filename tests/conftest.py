from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The configs the tests write count as trusted, as the user's own are once `toolscript trust`
# ran; the tests of trust itself take this away (TOOLSCRIPT_TRUSTED_PATHS="").
os.environ["TOOLSCRIPT_TRUSTED_PATHS"] = os.pathsep.join(
    [tempfile.gettempdir(), str(Path(__file__).resolve().parent.parent)]
)
