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

# What the SDK's package __init__ files import and the gateway's and face's runs never use.
SDK_UNUSED = ("mcp.server.mcpserver", "mcp.client.client", "sse_starlette", "cryptography")

IMPORT_UPSTREAM = """
import json, sys
import toolscript.upstream.server
import toolscript.upstream.sdk
print(json.dumps(sorted(sys.modules)))
"""

IMPORT_GATEWAY = """
import json, sys
import toolscript.gateway.app, toolscript.gateway.runner, toolscript.upstream.connect
print(json.dumps(sorted(sys.modules)))
"""

IMPORT_FACE = """
import json, sys
import toolscript.mcpface.server
print(json.dumps(sorted(sys.modules)))
"""

SDK_NAMES_AFTER = """
import json, sys, types
import toolscript.upstream.server
import toolscript.mcpface.server
import mcp
deferred = type(mcp).__name__
loaders = {type(mcp.__loader__).__name__, type(mcp.__spec__.loader).__name__,
           type(sys.modules["mcp.server"].__loader__).__name__}
tool = mcp.types.Tool  # a submodule: the __init__ still deferred
still = type(mcp).__name__
from mcp.client import ClientSession
from mcp import Client, ClientSession as Same, stdio_server
from mcp.server import MCPServer, Server
namespace = {}
exec("from mcp import *", namespace)
import mcp.client.session, mcp.server.lowlevel, mcp.client.client
print(json.dumps([
    deferred, still, tool is sys.modules["mcp_types"].Tool,
    ClientSession is Same is mcp.client.session.ClientSession,
    Client is mcp.client.client.Client, Server is mcp.server.lowlevel.Server,
    MCPServer is sys.modules["mcp.server.mcpserver"].MCPServer,
    stdio_server is sys.modules["mcp.server.stdio"].stdio_server,
    namespace["Client"] is Client and sorted(mcp.__all__) == sorted(
        name for name in namespace if name != "__builtins__"),
    [type(sys.modules[name]) is types.ModuleType for name in ("mcp", "mcp.client", "mcp.server")],
    [sys.modules[name].__spec__.name for name in ("mcp", "mcp.client", "mcp.server")],
    mcp.client is sys.modules["mcp.client"] and mcp.server is sys.modules["mcp.server"],
    sorted(loaders),
]))
"""

ALREADY_IMPORTED = """
import json, sys
import mcp
before = {name: sys.modules[name] for name in ("mcp", "mcp.client", "mcp.server")}
import toolscript.upstream.server
from toolscript.plumbing.deferredinit import defer_mcp_inits
defer_mcp_inits()
print(json.dumps([sys.modules[name] is module and type(module).__name__ == "module"
                  for name, module in before.items()]
                 + [[type(finder).__name__ for finder in sys.meta_path if "Defer" in type(finder).__name__]]))
"""

IN_THREADS = """
import json, sys, threading
import toolscript.upstream.server
import mcp
found = []
threads = [threading.Thread(target=lambda: found.append(mcp.Client)) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps([len(found), len(set(map(id, found))), type(mcp).__name__]))
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


def test_the_gateway_imports_the_sdk_client_without_its_package_inits() -> None:
    """``mcp/__init__.py`` imports the SDK's servers and OAuth: 54 MB the gateway never
    uses (``plumbing/deferredinit.py``)."""
    imported = _run(IMPORT_UPSTREAM)
    assert isinstance(imported, list)
    assert "mcp.client.session" in imported and "mcp.client.stdio" in imported
    assert [name for name in SDK_UNUSED if name in imported] == []


def test_a_gateway_of_stdio_servers_imports_no_http_client() -> None:
    """httpx2 (the SDK's HTTP client) comes with the first HTTP server."""
    imported = _run(IMPORT_GATEWAY)
    assert isinstance(imported, list)
    assert "litestar" in imported and "mcp.client.stdio" in imported
    assert "httpx2" not in imported


def test_the_face_imports_the_sdk_server_without_its_package_inits() -> None:
    """(``sse_starlette`` stays: the low-level server's own module imports it.)"""
    imported = _run(IMPORT_FACE)
    assert isinstance(imported, list)
    assert "mcp.server.lowlevel" in imported
    assert [name for name in SDK_UNUSED if name in imported] == ["sse_starlette"]
    # it asks its gateway as exec does (``gateway_request``), with no HTTP client of its own
    assert "httpx2" not in imported and "httpx" not in imported


def test_the_sdk_packages_still_answer_every_name_after_deferring() -> None:
    """Their ``__init__`` runs at the first name that is not a submodule: the packages
    are then the very modules Python makes."""
    assert _run(SDK_NAMES_AFTER) == [
        "_DeferredPackage",
        "_DeferredPackage",
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        [True, True, True],
        ["mcp", "mcp.client", "mcp.server"],
        True,
        ["SourceFileLoader"],
    ]


def test_an_sdk_imported_before_is_left_alone() -> None:
    assert _run(ALREADY_IMPORTED) == [True, True, True, []]


def test_threads_asking_at_once_run_the_init_once() -> None:
    assert _run(IN_THREADS) == [8, 1, "module"]


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
    # and the run log, in plain SQL, imports no sqlite_utils (1.6 MB of the face's process)
    assert json.loads(done.stdout) == [True, False, False]


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
