"""What the gateway's process and the MCP face's (with its gateway in a thread) import
(issue 45: much of their memory is imports). Neither imports what its run never uses: a
terminal's rendering (rich, pygments: httpx brought them through its command line), a
second HTTP client beside the MCP SDK's own, jsonschema before a tool's first call (the
validators are made then), or the websockets package (the gateway serves none). With
semantic search off, numpy neither: the keyword index of a small catalogue adds its
postings up in a loop, and sqlite_utils (the run log, the catalogue) is imported without it."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toolscript.plumbing.cachefiles import _RefusedInThread

# (each with its sub-modules)
UNNEEDED = ("rich", "pygments", "httpx", "httpcore", "jsonschema", "websockets")

IMPORT_BOTH = """
import json, sys
import toolscript.cli.mcp
import toolscript.gateway.app
import toolscript.gateway.inprocess
import toolscript.gateway.runner
import toolscript.mcpface.server
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""

SERVE_CONFIG = """
import json, sys
from toolscript.gateway.runner import uvicorn_config

async def app(scope, receive, send):
    pass

config = uvicorn_config(app)
config.load()
print(json.dumps([config.ws_protocol_class is None, "websockets" in sys.modules]))
"""


def _run(code: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_gateway_and_the_face_import_nothing_their_runs_do_not_use() -> None:
    imported = _run(IMPORT_BOTH)
    assert isinstance(imported, list)
    assert "mcp" in imported and "litestar" in imported  # what they do need
    assert [name for name in UNNEEDED if name in imported] == []


def test_the_gateway_serves_without_the_websockets_package() -> None:
    """uvicorn's default would import it for upgrades the guard then refuses."""
    assert _run(SERVE_CONFIG) == [True, False]


KEYWORD_ONLY = """
import json, sys
from pathlib import Path
from toolscript.search.lexical import LexicalIndex
from toolscript.search.text import document_for, keyword_query
from toolscript.store.runlog import RunLog

tools = [{"name": f"tool_{n}", "description": f"Read the file number {n}"} for n in range(40)]
index = LexicalIndex([document_for("server", "", tool) for tool in tools])
found = index.scores(keyword_query("read file 7"))
RunLog(Path(sys.argv[1]) / "runs.sqlite").recent()
print(json.dumps([bool(found), "sqlite_utils" in sys.modules, "numpy" in sys.modules]))
"""


def test_a_keyword_only_gateway_imports_no_numpy(tmp_path: Path) -> None:
    """numpy is 12 MB of the face's process (84 modules) when it is installed for the
    semantic extra and the project turned semantic search off."""
    pytest.importorskip("numpy", reason="without numpy there is nothing to leave out")
    done = subprocess.run(
        [sys.executable, "-c", KEYWORD_ONLY, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [True, True, False]


LARGE_INDEX = """
import json, string, sys
from toolscript.search.lexical import ARRAYS_FROM, LexicalIndex
from toolscript.search.text import document_for

letters = string.ascii_lowercase
words = ["q" + a + b + c for a in letters for b in letters for c in letters]
tools = [
    {"name": f"tool_{n}", "description": " ".join(words[n * 20 : n * 20 + 40])}
    for n in range(ARRAYS_FROM // 30)
]
index = LexicalIndex([document_for("server", "", tool) for tool in tools])
held = index._arrays or {}
print(json.dumps([sum(len(found[0]) for found in held.values()) >= ARRAYS_FROM,
                  index._postings is None]))
"""


def test_a_large_index_still_keeps_its_postings_as_arrays() -> None:
    """From ``ARRAYS_FROM`` postings the arrays' savings outweigh numpy's import."""
    pytest.importorskip("numpy", reason="numpy comes with the semantic extra")
    assert _run(LARGE_INDEX) == [True, True]


def test_only_the_thread_importing_sqlite_utils_is_refused_numpy() -> None:
    """Other threads importing numpy meanwhile have it (``load_sqlite_utils``)."""
    refused = _RefusedInThread({"numpy"}, threading.get_ident())
    with pytest.raises(ModuleNotFoundError):
        refused.find_spec("numpy", None)
    assert refused.find_spec("json", None) is None
    elsewhere: list[object] = []
    other = threading.Thread(target=lambda: elsewhere.append(refused.find_spec("numpy", None)))
    other.start()
    other.join()
    assert elsewhere == [None]


def test_sqlite_utils_has_numpy_where_the_process_has_it() -> None:
    """As it had before: numpy imported first is numpy for sqlite_utils; and the refusal
    ends with the import (numpy imports after it)."""
    pytest.importorskip("numpy", reason="numpy comes with the semantic extra")
    with_numpy = (
        "import json, numpy\n"
        "from toolscript.plumbing.cachefiles import load_sqlite_utils\n"
        "load_sqlite_utils()\n"
        "import sqlite_utils.db\n"
        "print(json.dumps(sqlite_utils.db.np is numpy))\n"
    )
    assert _run(with_numpy) is True
    numpy_after = (
        "import json, sys\n"
        "from toolscript.plumbing.cachefiles import load_sqlite_utils\n"
        "load_sqlite_utils()\n"
        "import sqlite_utils.db\n"
        "import numpy\n"
        "print(json.dumps([sqlite_utils.db.np is None, bool(numpy.ones(2).sum() == 2),\n"
        "    [type(f).__name__ for f in sys.meta_path if 'Refused' in type(f).__name__]]))\n"
    )
    assert _run(numpy_after) == [True, True, []]
