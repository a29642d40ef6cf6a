"""What the gateway renders for a request and keeps for the next: the generated module
narrowed to one server or one tool (``GET /runtime/tools.ts?server=``), a server's tools
(``GET /servers/{server}/tools``) and get-types' declarations (``GET /types``).

Each is rendered from the catalogue (the module's fragments, a server's tools and their
policy); a server of 2,000 tools takes tens of milliseconds to render, and a script asking
for it in a loop, rendered each time on the event loop, held every other run's calls behind
it for seconds. The newest ``KEPT`` renders of the catalogue being served are kept, and a
render is made off the event loop.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["KEPT", "KeptRenders", "NarrowedModules"]

KEPT = 64  # renders kept of each kind, the least recently asked go

Key = TypeVar("Key", bound=Hashable)
Made = TypeVar("Made")


class KeptRenders(Generic[Key, Made]):
    """Renders by key, for one generation of what they are rendered from: a new generation
    drops them all. Asked from the gateway's worker threads."""

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._generation: Hashable = None
        self._renders: dict[Key, Made] = {}
        self._lock = threading.Lock()

    def get(self, generation: Hashable, key: Key, render: Callable[[], Made]) -> Made:
        """What ``render`` made for ``key`` in ``generation``, made now when it is not kept
        (what it raises is not kept; nor is what a newer generation made stale meanwhile)."""
        with self._lock:
            if generation != self._generation:
                self._generation, self._renders = generation, {}
            found = self._renders.pop(key, None)
            if found is not None:
                self._renders[key] = found  # the most recently asked last
                return found
        made = render()
        with self._lock:
            if generation == self._generation:
                self._renders[key] = made
                while len(self._renders) > self._kept:
                    del self._renders[next(iter(self._renders))]
        return made


class NarrowedModules:
    """Narrowed renders of one module, by ``(server, tool)``; a new module drops them all."""

    def __init__(self, kept: int = KEPT) -> None:
        self._renders: KeptRenders[tuple[str | None, str | None], tuple[bytes, str]]
        self._renders = KeptRenders(kept)

    def get(
        self,
        module_hash: str,
        server: str | None,
        tool: str | None,
        render: Callable[[], bytes],
    ) -> tuple[bytes, str]:
        """``(content, etag)`` of the module ``module_hash`` narrowed to ``server`` and
        ``tool``; ``render`` makes it when it is not kept (what it raises is not kept)."""

        def made() -> tuple[bytes, str]:
            content = render()
            return content, hashlib.sha256(content).hexdigest()[:16]

        return self._renders.get(module_hash, (server, tool), made)
