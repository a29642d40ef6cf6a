"""What every task reads: the cache layout, the enabled servers, the generator's fingerprint."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from doit.dependency import UptodateCalculator

from toolscript.config import ServerConfig
from toolscript.pipeline.artifacts import MAX_ARTIFACT_BYTES, CacheLayout, read_artifact
from toolscript.plumbing.boundedread import read_regular_file
from toolscript.plumbing.paths import user_cache_dir
from toolscript.plumbing.privatefile import write_new

__all__ = [
    "SubtasksUpToDate",
    "TaskSettings",
    "read_json",
    "runtime_template",
    "target_digests",
    "targets_as_built",
]


@dataclass(frozen=True)
class TaskSettings:
    """Settings shared by the task generators; each adds its own next to its tasks."""

    layout: CacheLayout
    servers: list[ServerConfig]
    generator: str  # codegen's fingerprint: a toolscript upgrade makes generated files due
    project_dir: Path = Path()  # where toolscripts/ (the saved scripts) is
    packages: tuple[str, ...] = ()  # the declared packages ("npm:csv-parse@^5")

    @property
    def server_names(self) -> list[str]:
        return [server.name for server in self.servers]


def read_json(path: Path) -> Any:
    return json.loads(read_artifact(path))


def runtime_template() -> Path:
    return Path(str(resources.files("toolscript.templates").joinpath("runtime.ts")))


def target_digests(targets: list[Path]) -> dict[str, Any]:
    """What a task's action returns for ``targets_as_built``: a digest of each of its
    targets that only it writes (doit keeps it as the task's values), keyed by the user's
    own ``digest_key``: a cloned repository's ``.doit.db`` may record the digests of the
    artifacts it planted beside it, and only this user's key makes one that matches."""
    key = digest_key(user_cache_dir())
    digests = {}
    for target in targets:
        try:  # (its bytes, as read_artifact reads them: never through a link)
            content = read_regular_file(target, MAX_ARTIFACT_BYTES, links=False)
            digests[str(target)] = hmac.new(key, content, hashlib.sha256).hexdigest()
        except OSError:  # missing, or a link: never as built
            digests[str(target)] = "linked" if target.is_symlink() else ""
    return {"targets": digests}


DIGEST_KEY = "artifact-digest.key"


@functools.cache
def digest_key(cache: Path) -> bytes:
    """The user's key for artifact digests, in their private cache: made once, by whichever
    process first needs it (a link makes it appear whole; a damaged one is made anew). A
    cache it cannot be kept in gives this process a key of its own: its first build
    remakes what it finds, as with a cloned database."""
    path = cache / DIGEST_KEY
    with contextlib.suppress(OSError, ValueError):
        return _read_key(path)
    key = secrets.token_bytes(32)
    partial = cache / f".{DIGEST_KEY}.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        write_new(partial, key, 0o600)
        try:
            os.link(partial, path)
        except FileExistsError:  # another process made it meanwhile, or it is damaged
            with contextlib.suppress(OSError, ValueError):
                return _read_key(path)
            os.replace(partial, path)
        return _read_key(path)
    except (OSError, ValueError):
        return key
    finally:
        partial.unlink(missing_ok=True)


def _read_key(path: Path) -> bytes:
    key = read_regular_file(path, 64, links=False)
    if len(key) != 32:
        raise ValueError(f"{path}: not a key")
    return key


def targets_as_built(task: Any, values: dict[str, Any]) -> bool:
    """An ``uptodate`` check: the targets still hold what the task wrote. doit compares a
    task's dependencies, not its targets' content: an edited module would be served."""
    recorded = values.get("targets")
    if not isinstance(recorded, dict) or not recorded:
        return False
    # Only the task's own targets, each a file whose digest only the user's key makes: a
    # cloned ``.doit.db`` naming a path that does not exist (its digest "") or a link it
    # planted ("linked") matched what anyone computes, and vouched for the repository's files.
    own = {str(target) for target in getattr(task, "targets", ())}
    if any(key not in own or digest in ("", "linked") for key, digest in recorded.items()):
        return False
    current: dict[str, str] = target_digests([Path(target) for target in recorded])["targets"]
    return recorded == current


class SubtasksUpToDate(UptodateCalculator):  # type: ignore[misc]
    """A group task's ``uptodate``: up to date when each of its subtasks is (doit counts a
    task without dependencies as always due, so ``doit list --status`` showed ``R``)."""

    def setup(self, dep_manager: Any, tasks_dict: dict[str, Any]) -> None:
        super().setup(dep_manager, tasks_dict)
        self.dep_manager = dep_manager

    def __call__(self, task: Any) -> bool:
        return all(
            self.dep_manager.get_status(self.tasks_dict[name], self.tasks_dict).status
            == "up-to-date"
            for name in task.task_dep
        )
