"""``packages``: the project's declared packages fetched and locked, outside the sandbox.

Deno fetches them (``deno install`` of a generated ``deno.json``, in a folder of toolscript's
own, never the project's ``.toolscript/``, whose imports are the
declared packages, ``nodeModulesDir: none``: no ``node_modules``, no lifecycle scripts, which
Deno runs only with ``--allow-scripts``) into toolscript's own Deno cache, and keeps the
project's lock (``.toolscript.lock`` beside the config: exact versions, integrity hashes;
an unchanged range keeps its locked version, a package no longer declared leaves it). The
cache's ``npm/`` is left read-only. ``packages.json`` holds the packages as locked and the
lock's text; the ``scripts`` task puts them in the module.

The task is due when the declared packages change, when the lock is not what it wrote
(its content hash), when a locked package is gone from the cache, when the cache holds
packages fetched before locks were checked (``store/packages.discard_unchecked``: they are
removed and fetched again), or when the last fetch failed (the module is then built without
packages, and the failure logged).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from doit.exceptions import TaskFailed
from doit.tools import config_changed

from toolscript.pipeline.artifacts import read_artifact, write_if_changed
from toolscript.pipeline.tasks.settings import TaskSettings, target_digests, targets_as_built
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.denobinary import deno_binary, deno_cache_dir, deno_environment
from toolscript.plumbing.paths import user_cache_dir
from toolscript.store.packages import (
    Package,
    cache_checked,
    discard_unchecked,
    lock_path,
    package_name,
    set_read_only,
)

__all__ = [
    "FETCH_TIMEOUT",
    "PackagesTask",
    "declared_only",
    "fetch_command",
    "fetch_config",
    "foreign_tarballs",
    "npm_cache",
    "read_packages",
]

log = logging.getLogger("toolscript.pipeline")

FETCH_TIMEOUT = 300.0  # seconds for Deno to fetch every declared package
# What the fetch may need of the user's environment to reach the registry (nothing else).
_PASSED = (
    "NPM_CONFIG_REGISTRY",
    *("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"),
    *("DENO_CERT", "DENO_TLS_CA_STORE", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR"),
)


DEFAULT_REGISTRY = "https://registry.npmjs.org/"
# A lock read whole is at most this: the declared packages' trees are a few MB at most, and a
# cloned repository's lock of gigabytes (one repeated byte packs a thousandfold in git) was
# read whole, into memory, at every build.
MAX_LOCK_BYTES = 64_000_000


def npm_cache() -> Path:
    """Where Deno keeps npm packages in toolscript's Deno cache (read-only between fetches)."""
    return deno_cache_dir() / "npm"


def read_packages(path: Path) -> tuple[list[Package], str]:
    """The packages as locked and the lock's text, from ``packages.json`` (none if absent)."""
    try:
        data = json.loads(read_artifact(path))
        return [Package(str(s), str(v)) for s, v in data["packages"]], str(data["lock"] or "")
    except (OSError, ValueError, KeyError, TypeError):
        return [], ""


def _digest(path: Path) -> str:
    """The lock's digest; "" when it is missing, a link, a FIFO or larger than
    ``MAX_LOCK_BYTES`` (a cloned repository's)."""
    try:
        return hashlib.sha256(read_regular_file(path, MAX_LOCK_BYTES, links=False)).hexdigest()
    except OSError:
        return ""


def lock_as_built(task: Any, values: dict[str, Any]) -> bool:
    """An ``uptodate`` check: the lock holds what the task left in it, and every package it
    fetched is still in the cache, fetched with locks checked."""
    lock, cached = values.get("lock"), values.get("cached")
    if not isinstance(lock, list) or not isinstance(cached, list) or len(lock) != 2:
        return False
    if cached and not cache_checked(deno_cache_dir()):
        return False
    return _digest(Path(lock[0])) == lock[1] and all(Path(p).is_dir() for p in cached)


@contextlib.contextmanager
def _cache_open() -> Iterator[None]:
    """The npm cache writable while Deno fetches, read-only again after; one fetch at a time
    (another gateway's fetch would find it read-only)."""
    import fcntl

    root = deno_cache_dir()
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    with (root / ".packages.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if discard_unchecked(root):
            log.warning(
                "packages: the npm package cache predates toolscript's checks of locks (a cloned "
                "lock could store one package's code under another's name): fetching every "
                "package again"
            )
        set_read_only(npm_cache(), False)
        try:
            yield
        finally:
            set_read_only(npm_cache(), True)


@contextlib.contextmanager
def _fetch_folder(config: dict[str, Any]) -> Iterator[Path]:
    """A folder of toolscript's own (0700, removed after) holding only ``config`` as its
    ``deno.json``: Deno reads ``.npmrc`` (the registry), ``package.json`` (more packages) and
    a workspace's ``deno.json`` from where it runs and above, and the project's
    ``.toolscript/`` comes with a cloned repository, which ``toolscript trust`` does not cover."""
    import tempfile

    root = user_cache_dir() / "fetch"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory(prefix="packages-", dir=root) as folder:
        (Path(folder) / "deno.json").write_text(json.dumps(config, indent=1) + "\n")
        yield Path(folder)


def fetch_config(declared: list[str], lock: Path) -> dict[str, Any]:
    """The ``deno.json`` Deno fetches by: the packages as its imports, the project's lock, and
    no ``node_modules`` (so no lifecycle script: Deno runs them only in a ``node_modules``
    folder, and only with ``--allow-scripts``)."""
    return {
        "imports": {package_name(specifier): specifier for specifier in declared},
        "lock": {"path": str(lock)},
        "nodeModulesDir": "none",
    }


def declared_only(lock: Path, declared: list[str]) -> str:
    """The lock's text after a fetch, keeping only what scripts of the declared packages need.

    A cloned repository's lock is not part of what ``toolscript trust`` read, and Deno keeps
    a ``specifiers`` entry it finds there when it is not among the ``workspace``
    dependencies (those it prunes by): a planted ``"npm:other@1"`` would be fetched and then
    importable under ``--frozen``. So the lock keeps only the specifiers Deno resolved for the
    declared packages (its ``workspace`` dependencies, of a declared name), their ``npm``
    entries, and nothing of ``jsr``, ``remote`` or ``redirects`` (which scripts never use)."""
    text = read_regular_file(lock, MAX_LOCK_BYTES, links=False).decode("utf-8")
    data = json.loads(text)
    names = {package_name(specifier) for specifier in declared}
    workspace = data.get("workspace", {}).get("dependencies", [])
    wanted = {str(s) for s in workspace if _declared_name(str(s)) in names}
    specifiers = data.get("specifiers", {})
    kept_specifiers = {k: v for k, v in specifiers.items() if k in wanted}
    kept: dict[str, Any] = {
        "version": data.get("version"),
        "specifiers": kept_specifiers,
        **({"npm": _reached(data["npm"], kept_specifiers)} if "npm" in data else {}),
        **({"workspace": data["workspace"]} if "workspace" in data else {}),
    }
    if kept == data:
        return text
    for key in sorted(set(specifiers) - set(kept["specifiers"])):
        log.warning("packages: %s left out of %s: no declared package is %s", key, lock, key)
    text = json.dumps(kept, indent=2) + "\n"
    lock.write_text(text, encoding="utf-8")
    return text


def _reached(npm: dict[str, Any], specifiers: dict[str, Any]) -> dict[str, Any]:
    """The ``npm`` entries the kept specifiers reach, through each entry's dependencies
    (an entry nothing reaches, a planted one, would otherwise sit in a run's npm cache).
    A dependency spelled in a way this does not follow keeps them all: a lock missing an
    entry a run needs would fail every run."""
    todo = [f"{_declared_name(key)}@{value}" for key, value in specifiers.items()]
    reached: set[str] = set()
    while todo:
        key = todo.pop()
        if key in reached:
            continue
        if key not in npm or not isinstance(npm[key], dict):
            return npm
        reached.add(key)
        for field, names in npm[key].items():
            if not field.endswith(("ependencies", "Peers")) or not isinstance(names, list):
                continue
            for name in map(str, names):
                target = name.split("@npm:", 1)[1] if "@npm:" in name else name
                found = (
                    [target] if target in npm else [k for k in npm if k.startswith(target + "@")]
                )
                if not found:
                    return npm
                todo.extend(found)
    return {key: entry for key, entry in npm.items() if key in reached}


def foreign_tarballs(lock_text: str, registry: str = DEFAULT_REGISTRY) -> list[str]:
    """The ``npm`` entries of a lock whose ``tarball`` is not the registry's own file of that
    entry's name and version. Deno writes the field only for a registry whose files lie
    elsewhere, downloads what it names, checks it against the lock's integrity alone (and
    only that the URL is on the registry's host), and keeps it in the shared npm cache under
    the entry's name: a cloned repository's lock pointing ``left-pad@1.3.0`` at another
    published package (``.../is-number/-/is-number-7.0.0.tgz``, with its integrity) gave
    every script importing left-pad that package's code, in every project of the user."""
    try:
        npm = json.loads(lock_text).get("npm")
    except (ValueError, AttributeError):
        return []
    if not isinstance(npm, dict):
        return []
    root = registry if registry.endswith("/") else registry + "/"
    found = []
    for key, entry in npm.items():
        if not isinstance(entry, dict) or "tarball" not in entry:
            continue
        at = str(key).find("@", 1)  # (after a scope's own @)
        name, version = str(key)[:at], str(key)[at + 1 :].split("_", 1)[0]
        own = f"{root}{name}/-/{name.rsplit('/', 1)[-1]}-{version}.tgz"
        if at < 1 or entry["tarball"] != own:
            found.append(str(key))
    return found


def _without_foreign_tarballs(lock: Path, registry: str) -> None:
    """Start ``lock`` anew (Deno resolves every package from the registry again) when an
    entry names a file other than its own package's (``foreign_tarballs``), or when it is
    larger than ``MAX_LOCK_BYTES`` (neither toolscript nor Deno reads it whole then)."""
    try:
        text = read_regular_file(lock, MAX_LOCK_BYTES, links=False).decode("utf-8")
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            log.warning(
                "packages: %s is larger than %d MB, far past what a lock holds; it is made "
                "anew from the registry (review where this lock came from)",
                lock,
                MAX_LOCK_BYTES // 1_000_000,
            )
            lock.unlink()
        return  # (none yet; or Deno says what is wrong with it)
    except UnicodeDecodeError:
        return
    found = foreign_tarballs(text, registry)
    if found:
        log.warning(
            "packages: %s names files other than the packages' own for %s; it is made anew "
            "from the registry (review where this lock came from)",
            lock,
            ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else ""),
        )
        lock.unlink()


def _declared_name(specifier: str) -> str:
    try:
        return package_name(specifier)
    except ValueError:
        return ""


def fetch_command() -> list[str]:
    """Run in the folder of ``fetch_config``'s file (no ``--allow-scripts``, ever)."""
    return [deno_binary(), "install", "--quiet"]


class PackagesTask:
    def __init__(self, settings: TaskSettings) -> None:
        self.settings = settings

    def tasks(self) -> dict[str, Any]:
        """Fetch and lock the declared packages (.toolscript.json "packages")."""
        return {
            "actions": [self.build],
            "targets": [self.settings.layout.packages],
            "uptodate": [
                config_changed({"packages": list(self.settings.packages)}),
                lock_as_built,
                targets_as_built,
            ],
            "clean": True,
            "verbosity": 0,
        }

    def build(self) -> dict[str, Any]:
        """Fetch and lock; a fetch that fails leaves the module without packages (the tools
        still build), is logged, and is tried again by the next build."""
        outcome = self.fetch()
        if isinstance(outcome, dict):
            return outcome
        message = outcome.get_msg().strip()
        log.error("%s", message)
        layout = self.settings.layout
        write_if_changed(
            layout.packages, json.dumps({"packages": [], "lock": None, "error": message}) + "\n"
        )
        return {**target_digests([layout.packages]), "lock": None, "cached": []}

    def fetch(self) -> dict[str, Any] | TaskFailed:
        layout = self.settings.layout
        lock = lock_path(self.settings.project_dir)
        declared = list(self.settings.packages)
        if not declared:
            write_if_changed(layout.packages, json.dumps({"packages": [], "lock": None}) + "\n")
            built = {"lock": [str(lock), _digest(lock)], "cached": []}
            return {**target_digests([layout.packages]), **built}
        if lock.is_symlink():
            return TaskFailed(
                f"packages: {lock} is a symbolic link (to {os.readlink(lock)}); Deno would "
                "write the lock through it: remove it, and toolscript writes the lock there"
            )
        if lock.exists() and not lock.is_file():
            return TaskFailed(
                f"packages: {lock} is no regular file (a FIFO or a folder); Deno could not "
                "read it: remove it, and toolscript writes the lock there"
            )
        config = fetch_config(declared, lock)
        env = {**deno_environment(), "NO_COLOR": "1"}
        env.update({name: os.environ[name] for name in _PASSED if name in os.environ})
        _without_foreign_tarballs(lock, env.get("NPM_CONFIG_REGISTRY") or DEFAULT_REGISTRY)
        try:
            with _cache_open(), _fetch_folder(config) as folder:
                done = subprocess.run(
                    fetch_command(),
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    timeout=FETCH_TIMEOUT,
                    check=False,
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return TaskFailed(f"packages: deno could not fetch them ({exc})")
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip()
            return TaskFailed(
                f"packages: deno could not fetch and lock {', '.join(declared)}: {why} "
                "(check the names and version ranges, and that this machine reaches the registry)"
            )
        lock_text = declared_only(lock, declared)
        locked = json.loads(lock_text).get("specifiers", {})
        versions = {package_name(key): str(value) for key, value in locked.items()}
        packages = [Package(s, versions.get(package_name(s), "")) for s in declared]
        cached = [
            str(npm_cache() / "registry.npmjs.org" / package.name / package.version)
            for package in packages
            if package.registry == "npm" and "NPM_CONFIG_REGISTRY" not in env
        ]
        write_if_changed(
            layout.packages,
            json.dumps({"packages": [list(p) for p in packages], "lock": lock_text}) + "\n",
        )
        built = {"lock": [str(lock), _digest(lock)], "cached": cached}
        return {**target_digests([layout.packages]), **built}
