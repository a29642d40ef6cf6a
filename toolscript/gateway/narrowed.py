"""The generated module narrowed to one server or one tool (``GET /runtime/tools.ts?server=``),
rendered once per module.

A narrowed module is rendered from the module's fragments; a server of 2,000 tools takes
tens of milliseconds to render, and a script asking for it in a loop, rendered each time on
the event loop, held every other run's calls behind it for seconds. The newest ``KEPT``
renders of the module being served are kept, and a render is made off the event loop.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

__all__ = ["KEPT", "NarrowedModules"]

KEPT = 64  # narrowed renders kept (server, or server and tool), the least recently asked go


class NarrowedModules:
    """Narrowed renders of one module, by ``(server, tool)``; a new module drops them all."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._module_hash = ""
        self._renders: dict[tuple[str | None, str | None], tuple[bytes, str]] = {}
        self._lock = threading.Lock()  # asked from the gateway's worker threads

    def get(
        self,
        module_hash: str,
        server: str | None,
        tool: str | None,
        render: Callable[[], bytes],
    ) -> tuple[bytes, str]:
        """``(content, etag)`` of the module ``module_hash`` narrowed to ``server`` and
        ``tool``; ``render`` makes it when it is not kept (what it raises is not kept)."""
        key = (server, tool)
        with self._lock:
            if module_hash != self._module_hash:
                self._module_hash, self._renders = module_hash, {}
            found = self._renders.pop(key, None)
            if found is not None:
                self._renders[key] = found  # the most recently asked last
                return found
        content = render()
        made = (content, hashlib.sha256(content).hexdigest()[:16])
        with self._lock:
            if module_hash == self._module_hash:
                self._renders[key] = made
                while len(self._renders) > self._kept:
                    del self._renders[next(iter(self._renders))]
        return made
