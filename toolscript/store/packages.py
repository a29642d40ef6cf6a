"""The packages a project declares (``"packages"`` in ``.toolscript.json``) as scripts see them.

The ``packages`` task (``pipeline/tasks/packages.py``) fetches and locks them outside the
sandbox, into toolscript's own Deno cache (``npm/``, left read-only), with the project's lock
(``.toolscript.lock`` beside the config: exact versions and integrity hashes). The module
carries what a run needs as one comment line (``PACKAGES_MARKER``: the packages and the
lock's text), so a changed lock is a changed module; a copy of a module gets, beside it, the
lock a run passes to Deno (``--lock --frozen --cached-only``): a script imports exactly the
declared packages, from the cache, and any other specifier is out of the lock and refused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import stat
from pathlib import Path
from typing import Any, NamedTuple

from toolscript.plumbing.privatefile import write_private

__all__ = [
    "LOCK_FILENAME",
    "PACKAGES_MARKER",
    "Package",
    "Packages",
    "cache_checked",
    "declare_hint",
    "discard_unchecked",
    "import_entries",
    "lock_path",
    "locked_names",
    "npm_set",
    "offered",
    "offered_note",
    "package_name",
    "packages_beside",
    "packages_section",
    "parse_section",
    "set_read_only",
    "write_packages_beside",
]

LOCK_FILENAME = ".toolscript.lock"
PACKAGES_MARKER = "// toolscript-packages: "
NPM_SETS = "npm-sets"  # in toolscript's Deno cache: the packages of each lock, on their own
# Beside them once every package there was fetched by a toolscript that refuses a lock entry
# naming another package's tarball (``pipeline/tasks/packages.foreign_tarballs``); an older one
# stored such a tarball's code under the name it was locked as.
CHECKED_MARKER = ".npm-checked-1"
# A package's name as an "npm" key of a lock spells it ("@scope/name@1.0.0_peer@2"): no path.
_LOCKED_NAME = re.compile(r"((?:@[A-Za-z0-9_~-][A-Za-z0-9._~-]*/)?[A-Za-z0-9_~-][A-Za-z0-9._~-]*)@")
_SPECIFIER = re.compile(r"^(npm|jsr):((?:@[^/@]+/)?[^/@]+)@([^/@]+)$")


class Package(NamedTuple):
    specifier: str  # as declared: "npm:csv-parse@^5"
    version: str = ""  # as locked: "5.6.0"

    @property
    def name(self) -> str:
        """What a script imports it by: ``csv-parse``, ``@std/path``."""
        return package_name(self.specifier)

    @property
    def registry(self) -> str:
        return self.specifier.split(":", 1)[0]


class Packages(NamedTuple):
    """What a run of a module needs: its packages and the lock Deno reads."""

    packages: tuple[Package, ...]
    lock: Path

    @property
    def names(self) -> list[str]:
        return [package.name for package in self.packages]

    @property
    def registries(self) -> set[str]:
        return {package.registry for package in self.packages}


def package_name(specifier: str) -> str:
    """``npm:csv-parse@^5`` -> ``csv-parse``; ``jsr:@std/path@^1`` -> ``@std/path``."""
    found = _SPECIFIER.match(specifier)
    if found is None:
        raise ValueError(f"not a package specifier with a version: {specifier!r}")
    return found[2]


def lock_path(project_dir: Path) -> Path:
    return project_dir / LOCK_FILENAME


def import_entries(packages: tuple[Package, ...] | list[Package]) -> dict[str, str]:
    """Import map entries: each package by its name and its files by ``name/...``."""
    entries = {}
    for package in packages:
        registry, _, rest = package.specifier.partition(":")
        entries[package.name] = package.specifier
        entries[f"{package.name}/"] = f"{registry}:/{rest}/"
    return entries


def declare_hint(names: list[str]) -> str:
    """How a script gets a package it may not import yet."""
    offered = (
        f"this project offers {', '.join(names)}"
        if names
        else "it offers none yet (packages the gateway could not fetch are named in its log)"
    )
    return (
        'declare it in .toolscript.json, e.g. "packages": ["npm:csv-parse@^5"] '
        f"(toolscript fetches and locks it, then scripts import it by name); {offered}"
    )


def packages_section(packages: list[Package], lock_text: str) -> str:
    """The module's last lines: the packages for people and the checker, then the marker
    line that a copy of the module turns into its lock (``write_packages_beside``)."""
    if not packages:
        return ""
    width = max(len(package.name) for package in packages)
    lines = [
        "",
        '// Packages this project declares (.toolscript.json "packages"), offline in the',
        '// sandbox: import them by name (import { parse } from "csv-parse/sync").',
        *(
            f"//   {package.name:<{width}}  {package.specifier}"
            + (f" (locked at {package.version})" if package.version else "")
            for package in packages
        ),
        PACKAGES_MARKER
        + json.dumps(
            {"packages": [list(package) for package in packages], "lock": json.loads(lock_text)},
            separators=(",", ":"),
            sort_keys=True,
        ),
        "",
    ]
    return "\n".join(lines)


def parse_section(module_text: str) -> tuple[list[Package], str] | None:
    """The packages and the lock's text of a module that declares any."""
    at = module_text.rfind("\n" + PACKAGES_MARKER)
    if at < 0:
        return None
    line = module_text[at + 1 + len(PACKAGES_MARKER) :].split("\n", 1)[0]
    try:
        data: Any = json.loads(line)
        packages = [Package(str(s), str(v)) for s, v in data["packages"]]
        lock = json.dumps(data["lock"], indent=2) + "\n"
    except (ValueError, KeyError, TypeError):
        return None
    return packages, lock


def offered_note(packages: list[dict[str, str]]) -> str:
    """What get-types adds for a project with packages ("" without): a comment for a model."""
    if not packages:
        return ""
    listed = ", ".join(
        f"{p['name']} ({p['specifier']}" + (f", {p['version']})" if p.get("version") else ")")
        for p in packages
    )
    return (
        f"// Packages this project offers (offline, import them by name): {listed}.\n"
        f'// import ... from "{packages[0]["name"]}"; no other package can be imported.\n'
    )


def offered(module_text: str) -> list[dict[str, str]]:
    """The packages a module offers, as get-types lists them."""
    parsed = parse_section(module_text)
    if parsed is None:
        return []
    return [{"name": p.name, "specifier": p.specifier, "version": p.version} for p in parsed[0]]


def _beside(module: Path) -> Path:
    return module.with_name(module.stem + ".packages.json")


def write_packages_beside(module: Path, module_text: str) -> None:
    """Beside a copy of a module that declares packages: its lock and its packages."""
    parsed = parse_section(module_text)
    if parsed is None:
        return
    packages, lock = parsed
    lock_file = write_private(module.with_name(module.stem + ".lock"), lock)
    write_private(
        _beside(module),
        json.dumps({"packages": [list(p) for p in packages], "lock": str(lock_file)}),
    )


def packages_beside(module: Path) -> Packages | None:
    """The packages a module offers (None for most: one ``stat`` on a run's path)."""
    try:
        data = json.loads(_beside(module).read_text(encoding="utf-8"))
        return Packages(
            tuple(Package(str(s), str(v)) for s, v in data["packages"]), Path(data["lock"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def set_read_only(root: Path, read_only: bool) -> None:
    """Make a folder tree read-only (its owner keeps reading) or writable by its owner again:
    what the sandbox reads there, no process of it (Deno itself included) may change."""
    if not root.exists():
        return
    write = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH

    def change(path: str) -> None:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            return
        os.chmod(path, (mode & ~write) if read_only else (mode | stat.S_IWUSR))

    # chmod needs ownership, not a writable folder: the order does not matter.
    for folder, _, files in os.walk(root):
        change(folder)
        for name in files:
            change(os.path.join(folder, name))


def locked_names(lock_text: str) -> set[str]:
    """The names of every npm package a lock holds (declared ones and their dependencies);
    a key that is no package name (``../x@1``) names nothing."""
    try:
        npm = json.loads(lock_text).get("npm")
    except (ValueError, AttributeError):
        return set()
    if not isinstance(npm, dict):
        return set()
    return {found[1] for key in npm if (found := _LOCKED_NAME.match(str(key))) is not None}


def cache_checked(cache: Path) -> bool:
    """Whether every package in ``cache``'s ``npm/`` was fetched with locks checked."""
    return (cache / CHECKED_MARKER).is_file()


def discard_unchecked(cache: Path) -> bool:
    """Remove ``cache``'s npm packages and sets made before locks were checked (a lock of a
    cloned repository could store any package's code under another's name, for every project
    locking that name), then mark the cache checked; True if something was removed. Call it
    holding the cache's fetch lock; runs under way keep their set's files (hard links)."""
    if cache_checked(cache):
        return False
    found = False
    for name in ("npm", NPM_SETS):
        if (cache / name).exists():
            found = True
            aside = cache / f".{name}-unchecked-{secrets.token_hex(6)}"
            os.chmod(cache / name, 0o700)  # a read-only folder moves anywhere its owner says
            os.rename(cache / name, aside)
            _remove(aside)
    write_private(cache / CHECKED_MARKER, "packages fetched with their locks checked\n")
    return found


def npm_set(cache: Path, lock_text: str) -> Path:
    """The npm packages ``lock_text`` holds, as an npm cache of their own (hard links into
    ``cache``'s ``npm/``, read-only), for a run's ``DENO_DIR`` to link as its ``npm``.

    Deno lets a package read (and ``require``) any file of the npm cache without
    ``--allow-read``, and a script reaches ``require`` through ``process.getBuiltinModule``:
    with the whole shared cache linked, a script loaded every package any project of the
    user had fetched. Here it finds only its own lock's packages. Built once per lock (by
    its text's hash), again when a package it lacks has since reached the shared cache."""
    names = locked_names(lock_text)
    shared = cache / "npm"
    registries = _folders(shared)
    target = cache / NPM_SETS / hashlib.sha256(lock_text.encode()).hexdigest()[:32]
    wanted = {(r.name, n) for r in registries for n in names if (r / n).is_dir()}

    def complete() -> bool:
        return target.is_dir() and all((target / r / n).is_dir() for r, n in wanted)

    if complete():
        return target
    building = cache / NPM_SETS / f".building-{secrets.token_hex(6)}"
    building.mkdir(parents=True, mode=0o700)
    for registry, name in sorted(wanted):
        _link_tree(shared / registry / name, building / registry / name)
    _folders_writable(building, False)
    if complete():  # another run built it meanwhile: theirs is as good (and may be in use)
        _remove(building)
        return target
    if target.exists():  # a set missing a package the shared cache has again: set aside
        stale = cache / NPM_SETS / f".stale-{secrets.token_hex(6)}"
        with contextlib.suppress(OSError):
            os.rename(target, stale)
            _remove(stale)
    try:
        os.rename(building, target)
    except OSError:  # another run's set took the place first
        _remove(building)
    return target


def _folders(path: Path) -> list[Path]:
    try:
        return [entry for entry in path.iterdir() if entry.is_dir() and not entry.is_symlink()]
    except OSError:
        return []


def _link_tree(source: Path, target: Path) -> None:
    """``source``'s folders made again under ``target``, its files hard-linked (copied where
    a link cannot be made); symbolic links are left out (Deno's cache makes none)."""
    for folder, folders, files in os.walk(source):
        here = target / os.path.relpath(folder, source)
        here.mkdir(parents=True, exist_ok=True, mode=0o700)
        folders[:] = [f for f in folders if not os.path.islink(os.path.join(folder, f))]
        for name in files:
            origin = os.path.join(folder, name)
            if os.path.islink(origin):
                continue
            try:
                os.link(origin, here / name)  # one file: read-only as the shared cache keeps it
            except OSError:
                shutil.copyfile(origin, here / name)
                os.chmod(here / name, 0o400)


def _folders_writable(root: Path, writable: bool) -> None:
    """Only the folders: a set's files are the shared cache's own (their mode is theirs)."""
    for folder, _, _ in os.walk(root, topdown=not writable):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700 if writable else 0o500)


def _remove(path: Path) -> None:
    _folders_writable(path, True)
    shutil.rmtree(path, ignore_errors=True)
