"""The on-disk layout of the cache directory, and reading what the pipeline wrote.

::

    <cache>/
      .doit.db               doit's dependency database (sqlite3 backend)
      .build.lock            held by the build under way (the gateway's or doit's: buildlock.py)
      servers/<server>.json  each server's tool list, filtered, by name (listed_json)
      offered/<server>.json  its prompts and resource templates, for their types (absent
                             kinds unknown: the server was not reached)
      names/<server>.json    its namespace and tool identifiers
      names.json             the whole name map, with collision warnings
      types/<server>.ts      a standalone TypeScript module for that server
      types/<server>.json    per-tool fragments (for filtered modules and get-types)
      tools-only.ts          every server's module merged (the module task)
      tools.ts               the whole TypeScript module served at /runtime/tools.ts: the
                             tools and the saved scripts that type-check (the scripts task)
      saved-scripts.json     which saved scripts check, the errors of those that do not
      packages.json          the declared packages as locked, and the lock (the packages task)
      saved-check/           where the scripts task checks them
      saved-check-save/      where the gateway checks a script before saving it
      catalogue.db           servers and tools (content hash, names, schemas) for sqlite-utils
      embeddings.db          tool embeddings by (content hash, model) for semantic search
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolscript.pipeline.buildlock import build_lock
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.privatefile import write_new
from toolscript.store.packages import offered

if TYPE_CHECKING:
    from toolscript.codegen.module import ToolFragment

__all__ = [
    "Artifacts",
    "CacheLayout",
    "canonical_json",
    "content_hash",
    "listed_json",
    "read_artifact",
    "read_offered",
    "write_if_changed",
]


# Bytes of an artifact read whole into memory (and of a server's tools, parsed as JSON): the
# largest a real project makes is its module, about 0.8 KB a tool (1.0-1.3 MB at 1,600
# tools, bench/NOTES.md), so this holds some 80,000 tools. A cloned repository's planted
# `.toolscript/servers/x.json` of a gigabyte is refused unread.
MAX_ARTIFACT_BYTES = 64_000_000


def canonical_json(value: Any) -> str:
    """Sorted keys, stable formatting: equal content gives equal bytes."""
    return json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def listed_json(value: Any) -> str:
    """What a server listed, its keys in the server's order, stable formatting. A tool's
    parameters keep the order its author declared them in (the required ones first, as a
    rule): the generated types list them so, and search reads the first of them. Sorted,
    ``{template_path, id}`` became ``{id?, template_path}``."""
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` unless the file already holds it; True when written. A link there is
    replaced, never written through (nor kept: its target's content could change)."""
    try:
        if read_artifact(path) == text:
            return False
    except (OSError, UnicodeDecodeError):  # missing, damaged or a link: written anew
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    try:
        write_new(partial, text)  # never through a link planted as the partial
    except OSError:  # a disk full: no half-written partial left in the cache
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return True


def read_artifact(path: Path) -> str:
    """The text of an artifact of the cache; a link raises ``OSError`` (ELOOP), as if the
    file were missing or unreadable: a cloned repository's ``.toolscript/`` may hold one to
    ``~/.ssh/id_rsa``, whose content must never be served. So does a FIFO (never waited on)
    or a folder."""
    return read_regular_file(path, MAX_ARTIFACT_BYTES, links=False).decode("utf-8")


def read_offered(layout: CacheLayout, server: str) -> dict[str, list[dict[str, Any]]]:
    """A server's prompts and resource templates as the fetch task kept them, by kind ({}:
    unknown); read again as that task keeps them, so a file edited by hand types what it can."""
    from toolscript.codegen.offered import PROMPTS, TEMPLATES, offered_entries

    try:
        offered = json.loads(read_artifact(layout.server_offered(server)))
    except (OSError, ValueError):
        return {}
    if not isinstance(offered, dict):
        return {}
    return {
        kind: offered_entries(kind, offered[kind])
        for kind in (PROMPTS, TEMPLATES)
        if kind in offered
    }


# Characters of a server's name its files keep: a name may be of any length, a file's name
# is 255 bytes at most (a 300-character name failed every build: no module, no tool ran).
SLUG_CHARACTERS = 100


_SLUG = re.compile(r"[a-z0-9_-]+")  # what file_slug makes of a server name


def file_slug(name: str) -> str:
    """A file name for a server name (which may hold any character but ``/``, and be of any
    length), distinct from every other server's also where file names ignore case (macOS,
    Windows)."""
    slug = re.sub(r"[^a-z0-9_-]", "_", name.lower())
    if slug != name or len(slug) > SLUG_CHARACTERS:
        slug = slug[:SLUG_CHARACTERS] + "-" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return slug


@dataclass(frozen=True)
class CacheLayout:
    root: Path

    @property
    def dep_file(self) -> Path:
        return self.root / ".doit.db"

    def server_tools(self, server: str) -> Path:
        return self.root / "servers" / f"{file_slug(server)}.json"

    def server_offered(self, server: str) -> Path:
        return self.root / "offered" / f"{file_slug(server)}.json"

    def server_names(self, server: str) -> Path:
        return self.root / "names" / f"{file_slug(server)}.json"

    @property
    def names(self) -> Path:
        return self.root / "names.json"

    def server_module(self, server: str) -> Path:
        return self.root / "types" / f"{file_slug(server)}.ts"

    def server_fragments(self, server: str) -> Path:
        return self.root / "types" / f"{file_slug(server)}.json"

    @property
    def tools_only(self) -> Path:
        return self.root / "tools-only.ts"

    @property
    def module(self) -> Path:
        return self.root / "tools.ts"

    @property
    def saved_scripts(self) -> Path:
        return self.root / "saved-scripts.json"

    @property
    def saved_check(self) -> Path:
        return self.root / "saved-check"

    @property
    def save_check(self) -> Path:
        """Where the gateway checks a script before saving it (the task may check meanwhile)."""
        return self.root / "saved-check-save"

    @property
    def packages(self) -> Path:
        return self.root / "packages.json"

    @property
    def catalogue(self) -> Path:
        return self.root / "catalogue.db"

    @property
    def embeddings(self) -> Path:
        return self.root / "embeddings.db"

    def drop_links(self) -> None:
        """Remove the links among the cache's folders, files and databases (a cloned
        repository's ``.toolscript/servers`` linked to a folder of the user's would have tool
        lists written over its files; ``servers/<s>.json`` linked to a file of the user's
        would stay the tool list of a server not reached), and any artifact that is no
        regular file (a FIFO never reads to its end): each is made anew in the cache. Files
        are read and written without following links (``read_artifact``,
        ``write_if_changed``)."""
        from toolscript.plumbing.cachefiles import drop_links, drop_unless_regular

        for directory in ("servers", "offered", "names", "types", self.saved_check.name):
            if (self.root / directory).is_symlink():
                (self.root / directory).unlink()
        for directory in ("servers", "offered", "names", "types"):
            with contextlib.suppress(OSError):  # missing, or no folder: made by its task
                for entry in list(os.scandir(self.root / directory)):
                    drop_unless_regular(Path(entry.path))
        for artifact in (
            self.names,
            self.tools_only,
            self.module,
            self.saved_scripts,
            self.packages,
        ):
            drop_unless_regular(artifact)
        for database in (self.dep_file, self.catalogue, self.embeddings):
            drop_links(database)

    def drop_other_servers(self, servers: list[str]) -> None:
        """Remove the per-server artifacts (``servers/``, ``offered/``, ``names/``,
        ``types/``) of servers that are not ``servers``: a server taken out of the config
        left its tool list and its types there, read as current by whoever opened them, and
        no task (``doit clean`` included) names them any more."""
        kept = {file_slug(server) for server in servers}
        for directory in ("servers", "offered", "names", "types"):
            with contextlib.suppress(OSError):  # missing: made by its task
                for entry in list(os.scandir(self.root / directory)):
                    slug, dot, suffix = entry.name.rpartition(".")
                    if (
                        dot
                        and suffix in ("json", "ts")
                        and slug not in kept
                        and _SLUG.fullmatch(slug)
                        and entry.is_file(follow_symlinks=False)
                    ):
                        Path(entry.path).unlink(missing_ok=True)

    def discard_derived(self, stop: threading.Event | None = None) -> None:
        """Remove everything the artifact tasks make (embeddings stay: they are costly and
        checked on their own), so the next run builds it all again. Under the build lock:
        a standalone ``doit`` building meanwhile would lose its files and database midway
        (``stop`` set ends the wait: ``BuildStopped``)."""
        import shutil

        with build_lock(self.root, stop=stop):
            for directory in ("servers", "offered", "names", "types", self.saved_check.name):
                shutil.rmtree(self.root / directory, ignore_errors=True)
            for path in (
                self.names,
                self.tools_only,
                self.module,
                self.saved_scripts,
                self.packages,
                self.catalogue,
                self.dep_file,
            ):
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)


@dataclass
class Artifacts:
    """What the gateway serves: the whole module and every tool's fragment.

    The module is kept as the UTF-8 the routes send: a str of it takes four bytes a character
    as soon as one tool's description has an emoji (4 MB against 1 at 1,600 tools)."""

    module: bytes = b"export const tools = {};\n"
    module_hash: str = ""
    fragments: list[ToolFragment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    packages: list[dict[str, str]] = field(default_factory=list)  # what the module offers
    packages_error: str | None = None  # why the declared packages could not be fetched
    offered: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)  # by server

    @classmethod
    def load(cls, layout: CacheLayout, servers: list[str]) -> Artifacts:
        from toolscript.codegen.module import ToolFragment

        text = read_artifact(layout.module)
        fragments: list[ToolFragment] = []
        kept = {server: read_offered(layout, server) for server in servers}
        for server in servers:
            path = layout.server_fragments(server)
            if path.exists():
                data = json.loads(read_artifact(path))
                fragments.extend(ToolFragment.from_dict(item) for item in data)
        warnings: list[str] = []
        if layout.names.exists():
            warnings = json.loads(read_artifact(layout.names)).get("warnings", [])
        packages_error = None
        if layout.packages.exists():
            packages_error = json.loads(read_artifact(layout.packages)).get("error")
        module = text.encode()
        packages = offered(text)
        del text  # (the str goes here, the bytes stay)
        return cls(
            module=module,
            module_hash=hashlib.sha256(module).hexdigest()[:16],
            fragments=fragments,
            warnings=warnings,
            packages=packages,
            packages_error=packages_error,
            offered=kept,
        )
