"""What every task reads: the cache layout, the enabled servers, the generator's fingerprint."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from toolscript.config import ServerConfig
from toolscript.pipeline.artifacts import CacheLayout

__all__ = ["TaskSettings", "read_json", "runtime_template"]


@dataclass(frozen=True)
class TaskSettings:
    """Settings shared by the task generators; each adds its own next to its tasks."""

    layout: CacheLayout
    servers: list[ServerConfig]
    generator: str  # codegen's fingerprint: a toolscript upgrade makes generated files due
    project_dir: Path = Path()  # where toolscripts/ (the saved scripts) is

    @property
    def server_names(self) -> list[str]:
        return [server.name for server in self.servers]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def runtime_template() -> Path:
    return Path(str(resources.files("toolscript.templates").joinpath("runtime.ts")))
