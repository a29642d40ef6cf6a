"""The ``mcp`` SDK's package ``__init__`` files, run only when a name they bind is asked for.

``import mcp.client.session`` runs ``mcp/__init__.py`` first, and that imports the whole
SDK: its servers (``MCPServer``, Starlette, ``sse_starlette``, uvicorn), its OAuth
(``cryptography``), its ``Client`` and session group. The gateway needs the client session
and its transports, the MCP face the low-level server and its stdio transport: each
imports those submodules by their full names and never asks the packages for a name.
Measured (issue 45, fresh processes, RSS): ``import mcp`` is 54 MB; deferring the three
``__init__`` files takes ``import toolscript.gateway.app`` from 82 to 69 MB and
``toolscript.upstream.server`` from 72 to 54; a running gateway of 40 tools from 105 to
91 MB (``bench/memory.py``), the MCP face's process from 100 to 91.

``defer_mcp_inits()`` puts a finder first on ``sys.meta_path``, and nothing in
``sys.modules``: a process that never imports ``mcp`` (the CLI's ``exec``) pays nothing.
``mcp``, ``mcp.client`` and ``mcp.server`` then import as their real package (spec, path,
file, loader) with the ``__init__`` not yet run, and submodules import through them as
usual. The first name asked of one that is not a submodule (``from mcp import Client``,
``mcp.ClientSession``, ``from mcp.client import ClientSession``, ``mcp.__all__``) runs the
real ``__init__`` into that same module object, once; from then on it is the module
Python would have made. Once ``mcp`` is imported, deferring is a no-op, and a package's
behaviour never changes: only when its ``__init__`` runs (until then ``dir()`` lists only
the submodules imported so far, and ``mcp.client`` resolves without ``import mcp.client``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader, SourcelessFileLoader
from typing import Any

__all__ = ["MCP_PACKAGES", "defer_inits", "defer_mcp_inits"]

MCP_PACKAGES = frozenset({"mcp", "mcp.client", "mcp.server"})

_LOCK = threading.RLock()
_PENDING: dict[str, Loader] = {}  # package -> its real loader, until its __init__ runs
_RUNNING: set[str] = set()  # packages whose __init__ runs (in the thread holding _LOCK)


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` has not run: submodules import through it; any other
    name runs the ``__init__`` first."""

    def __getattr__(self, name: str) -> Any:
        if self.__name__ not in _PENDING:  # the import system still setting it up
            raise AttributeError(name)
        if name.isidentifier() and not name.startswith("__") and _has_submodule(self, name):
            return importlib.import_module(f"{self.__name__}.{name}")
        _run_init(self, name)
        return getattr(self, name)


class _DeferringLoader(Loader):
    """Makes the package's module and leaves its ``__init__`` for later, restoring the
    real loader on the spec and the module (what ``inspect``, ``importlib.resources`` and
    ``reload`` read)."""

    def __init__(self, real: Loader) -> None:
        self.real = real

    def create_module(self, spec: ModuleSpec) -> types.ModuleType:
        return _DeferredPackage(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self.real
        module.__loader__ = self.real
        _PENDING[module.__name__] = self.real


class _DeferringFinder(MetaPathFinder):
    """First on ``sys.meta_path``: finds the packages through the finders after it and
    hands their specs back with ``_DeferringLoader``."""

    def __init__(self, packages: frozenset[str]) -> None:
        self.packages = packages

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname not in self.packages or target is not None:  # (a reload runs it now)
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.submodule_search_locations is not None and isinstance(
            spec.loader, SourceFileLoader | SourcelessFileLoader
        ):
            spec.loader = _DeferringLoader(spec.loader)
        return spec


def defer_mcp_inits() -> None:
    """``defer_inits(MCP_PACKAGES)``: call it before the process's first ``mcp`` import."""
    defer_inits(MCP_PACKAGES)


def defer_inits(packages: frozenset[str]) -> None:
    """From now on, import these packages with their ``__init__`` deferred; a no-op when
    they are deferred already or their top package is imported."""
    with _LOCK:
        tops = {name.partition(".")[0] for name in packages}
        if any(top in sys.modules for top in tops) or any(
            isinstance(finder, _DeferringFinder) and finder.packages == packages
            for finder in sys.meta_path
        ):
            return
        sys.meta_path.insert(0, _DeferringFinder(packages))


def _has_submodule(package: types.ModuleType, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"{package.__name__}.{name}") is not None
    except (ImportError, ValueError):
        return False


def _run_init(module: types.ModuleType, name: str) -> None:
    """Run the package's real ``__init__`` into ``module``, once (a failed one runs again
    at the next name, as a failed import does); a name its own ``__init__`` asks before
    binding it is missing, as in any module still importing. Other threads wait."""
    package = module.__name__
    with _LOCK:
        if type(module) is not _DeferredPackage:
            return  # another thread ran it while this one waited
        if package in _RUNNING:
            raise AttributeError(
                f"partially initialized module {package!r} has no attribute {name!r}"
            )
        _RUNNING.add(package)
        try:
            _PENDING[package].exec_module(module)
        finally:
            _RUNNING.discard(package)
        del _PENDING[package]
        loaded: types.ModuleType = module  # (not narrowed: its class changes now)
        loaded.__class__ = types.ModuleType
