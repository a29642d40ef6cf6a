"""Which project configurations the user has trusted to start their servers.

A cloned repository's ``.toolscript.json`` names programs to run and where to send the
values of ``${VAR}``; nothing may start from it, nor expand a variable into a URL or a
header, before the user has looked. ``toolscript trust`` records the file's content hash
per user (outside every project, 0600); editing the file makes it untrusted again. The
versions trusted before stay trusted (the last ``KEPT_VERSIONS``): switching back to a git
branch whose config the user already read starts it again without asking anew. The
project files of other clients it imports (``.mcp.json``, ``.cursor/mcp.json``, ...) are the
repository's too: the hash covers them, so editing, adding or removing one does the same.

A record is keyed by the config's path as found, its folder resolved but not the file:
the folder is what relative ``command``, ``args`` and ``cwd`` resolve against, so a
symbolic link to a trusted config in another folder is not trusted with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolscript.errors import UntrustedConfigError
from toolscript.otherclients import MAX_CONFIG_BYTES, imported_clients, project_files
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.paths import foreign_owner, own_folder, xdg_base
from toolscript.plumbing.privatefile import write_private

__all__ = [
    "TRUSTED_PATHS_VARIABLE",
    "changes",
    "file_digests",
    "fingerprint",
    "forget",
    "imported_project_files",
    "is_trusted",
    "last_seen",
    "needs_trust",
    "require_trust",
    "trust",
    "trust_file",
    "trust_key",
    "trusted",
]

# Folders (separated by os.pathsep) whose configs count as trusted: the user's own setting,
# for CI and containers that hold only their own code.
TRUSTED_PATHS_VARIABLE = "TOOLSCRIPT_TRUSTED_PATHS"

# How many earlier trusted versions of one config stay trusted beside the latest (kept
# under "earlier": a record an older toolscript reads is still its "sha256").
KEPT_VERSIONS = 16

# A tool file or saved script larger than this is recorded by its size alone (a repository's
# file may be anything; trust only says it changed).
MAX_DIGESTED_BYTES = 16 * 1024 * 1024


def trust_file() -> Path:
    """``TOOLSCRIPT_CONFIG_HOME``, else ``$XDG_CONFIG_HOME/toolscript``, else
    ``~/.config/toolscript``: ``trusted.json``."""
    chosen = own_folder("TOOLSCRIPT_CONFIG_HOME")
    if chosen is not None:
        return chosen / "trusted.json"
    return xdg_base("XDG_CONFIG_HOME", Path(".config")) / "toolscript" / "trusted.json"


def trust_key(config: Path) -> str:
    """What a trust record is kept under: the absolute path with its folder resolved and the
    file itself not (a symlinked config is trusted for the folder it sits in)."""
    absolute = Path(os.path.abspath(config.expanduser()))
    return str(absolute.parent.resolve() / absolute.name)


def fingerprint(
    config: Path, content: bytes | None = None, read: Mapping[Path, bytes | None] | None = None
) -> str:
    """The hash of the config and of the project files it imports (each one's name and
    content, or its absence): a config that imports none hashes as its bytes alone.
    ``content``: the config's bytes as the caller read them (and parses), else read now;
    ``read``: the imported files' bytes as it read them (None: absent), the others read now."""
    if content is None:
        content = read_regular_file(config, MAX_CONFIG_BYTES)
    imported = _imported_project_files(config, content)
    if not imported:
        return hashlib.sha256(content).hexdigest()
    digest = hashlib.sha256(content)
    for path in imported:
        digest.update(b"\0" + path.name.encode() + b"\0" + str(path.parent).encode() + b"\0")
        try:
            if read is not None and path in read:
                data = read[path]
                if data is None:  # absent when it was read
                    raise FileNotFoundError(path)
            else:
                data = read_regular_file(path, MAX_CONFIG_BYTES)
            digest.update(b"1" + hashlib.sha256(data).digest())
        except FileNotFoundError:
            digest.update(b"0")
        except OSError:  # a FIFO, a device, a huge file: never read (loading skips it too)
            digest.update(b"2")
    return digest.hexdigest()


def _imported_project_files(config: Path, content: bytes) -> tuple[Path, ...]:
    """The project files (the repository's, not the user's) of the clients ``config``
    imports."""
    folder = Path(trust_key(config)).parent
    return project_files(imported_clients(content), folder)


def imported_project_files(config: Path) -> tuple[Path, ...]:
    """The project files of other clients that trusting ``config`` covers (present or not)."""
    try:
        return _imported_project_files(config, read_regular_file(config, MAX_CONFIG_BYTES))
    except OSError:
        return ()


def trusted() -> dict[str, dict[str, Any]]:
    """Every trusted config: its path -> ``{"sha256", "trusted_at", "earlier"?}``
    (``earlier``: the hashes of the versions trusted before, newest first)."""
    path = trust_file()
    if foreign_owner(path) is not None or foreign_owner(path.parent) is not None:
        return {}  # another user's (planted in a shared folder): it trusts nothing
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_trusted(
    config: Path, content: bytes | None = None, read: Mapping[Path, bytes | None] | None = None
) -> bool:
    """Whether ``config``, as it is now and where it is, was trusted; ``content``: its bytes
    as the caller read them, to judge exactly what it parses (a file swapped between the
    judgement and the read, and back, must not pass for the trusted one); ``read``: the
    imported files' bytes as the caller read them."""
    record = trusted().get(trust_key(config))
    if not isinstance(record, dict):
        return False
    try:
        return fingerprint(config, content, read) in _trusted_versions(record)
    except OSError:
        return False


def _trusted_versions(record: dict[str, Any]) -> list[str]:
    """The hashes a record trusts: the latest, then the earlier ones (newest first)."""
    earlier = record.get("earlier")
    versions = [record.get("sha256"), *(earlier if isinstance(earlier, list) else [])]
    return [version for version in versions if isinstance(version, str)]


def _chosen_by_user(config: Path) -> bool:
    """Whether the user's own environment names ``config``: TOOLSCRIPT_CONFIG is it, or it
    lies under a folder of TOOLSCRIPT_TRUSTED_PATHS."""
    key = Path(trust_key(config))
    chosen = os.environ.get("TOOLSCRIPT_CONFIG")
    if chosen and Path(trust_key(Path(chosen))) == key:
        return True
    for folder in os.environ.get(TRUSTED_PATHS_VARIABLE, "").split(os.pathsep):
        if folder.strip() and key.is_relative_to(Path(folder.strip()).expanduser().resolve()):
            return True
    return False


def needs_trust(
    config: Path, content: bytes | None = None, read: Mapping[Path, bytes | None] | None = None
) -> bool:
    """Whether ``config`` (``content``: its bytes as read, see ``is_trusted``) may start no
    servers yet: a project's file the user has not trusted as it is now. A config chosen
    with TOOLSCRIPT_CONFIG is the user's own setting."""
    if not config.is_file() or _chosen_by_user(config):
        return False
    return not is_trusted(config, content, read)


def require_trust(
    config: Path, content: bytes | None = None, read: Mapping[Path, bytes | None] | None = None
) -> None:
    """Raise UntrustedConfigError when ``config`` needs the user's trust before it runs;
    ``content`` and ``read``: the bytes the caller parses, of the config and of the files
    it imports (judged, rather than the files read again)."""
    if needs_trust(config, content, read):
        shown = trust_key(config)
        imported = [
            os.path.relpath(path, Path(shown).parent)  # ../REPO/x.env: inside where case is not
            for path in imported_project_files(config)
            if path.exists()
        ]
        also = f" (with the files it imports: {', '.join(imported)})" if imported else ""
        raise UntrustedConfigError(
            f"{shown}{also} is not trusted yet, so nothing it names was started "
            "(a repository's config names programs to run and where to send your "
            "environment's values)",
            hint=f"read it (`toolscript config check` lists what it starts and sends), then "
            f"run `toolscript trust` in {Path(shown).parent}"
            + ("" if Path(shown).name == ".toolscript.json" else f" --config {shown}"),
        )


def trust(config: Path, shown: str | None = None, seen: Mapping[str, Any] | None = None) -> None:
    """Trust ``config`` as it was shown (``shown``: its ``fingerprint`` then), else as it
    is now; ``seen``: what the person was shown (its servers, tool files and saved scripts),
    which the next ``trust`` compares with to show what changed."""
    records = trusted()
    sha256 = shown if shown is not None else fingerprint(config)
    key = trust_key(config)
    before = records.get(key)
    kept = _trusted_versions(before) if isinstance(before, dict) else []
    earlier = [version for version in kept if version != sha256][:KEPT_VERSIONS]
    records[key] = {"sha256": sha256, "trusted_at": time.time()}
    if earlier:
        records[key]["earlier"] = earlier
    if seen is not None:
        records[key]["seen"] = dict(seen)
    _save(records)


def last_seen(config: Path) -> tuple[dict[str, Any] | None, float | None]:
    """What the last ``trust`` of ``config`` showed (None: never trusted, or by a toolscript
    that kept nothing of it) and when it was trusted."""
    record = trusted().get(trust_key(config))
    if not isinstance(record, dict):
        return None, None
    seen = record.get("seen")
    when = record.get("trusted_at")
    return (
        seen if isinstance(seen, dict) else None,
        float(when) if isinstance(when, (int, float)) else None,
    )


def file_digests(folder: Path, paths: list[Path]) -> dict[str, str]:
    """Each file's path (relative to ``folder`` when inside it) -> the hash of its bytes, or
    what it is when it cannot be read (a link, a FIFO, too large, gone)."""
    digests = {}
    for path in paths:
        shown = os.path.relpath(path, folder) if path.is_relative_to(folder) else str(path)
        try:
            data = read_regular_file(path, MAX_DIGESTED_BYTES, links=False)
            digests[shown] = hashlib.sha256(data).hexdigest()
        except OSError as exc:
            digests[shown] = f"unread: {exc.strerror or type(exc).__name__}"
    return digests


def changes(before: Mapping[str, Any], now: Mapping[str, Any]) -> dict[str, Any]:
    """What differs between two ``seen`` records: servers added, removed and changed (each
    changed field as ``[was, now]``), and the files of each other kind (``tool_files``,
    ``saved_scripts``, ``imported``) added, changed and removed. Empty kinds are left out."""
    found: dict[str, Any] = {}
    was, new = _mapping(before.get("servers")), _mapping(now.get("servers"))
    servers: dict[str, Any] = {
        "added": [name for name in new if name not in was],
        "removed": [name for name in was if name not in new],
        "changed": {
            name: {
                field: [_mapping(was[name]).get(field), value]
                for field, value in _mapping(new[name]).items()
                if _mapping(was[name]).get(field) != value
            }
            for name in new
            if name in was and _mapping(was[name]) != _mapping(new[name])
        },
    }
    servers = {kind: names for kind, names in servers.items() if names}
    if servers:
        found["servers"] = servers
    for kind in ("tool_files", "saved_scripts", "imported"):
        old_files, new_files = _mapping(before.get(kind)), _mapping(now.get(kind))
        files = {
            "added": [name for name in new_files if name not in old_files],
            "changed": [
                name
                for name in new_files
                if name in old_files and old_files[name] != new_files[name]
            ],
            "removed": [name for name in old_files if name not in new_files],
        }
        files = {what: names for what, names in files.items() if names}
        if files:
            found[kind] = files
    return found


def _mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping (a record edited by hand may hold anything), else {}."""
    return value if isinstance(value, Mapping) else {}


def forget(config: Path) -> bool:
    """Forget ``config``, every version of it trusted; False when it was not trusted."""
    records = trusted()
    if records.pop(trust_key(config), None) is None:
        return False
    _save(records)
    return True


def _save(records: dict[str, dict[str, Any]]) -> None:
    write_private(trust_file(), json.dumps(records, indent=1))
