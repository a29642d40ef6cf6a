"""What every benchmark needs: a clean environment and a real gateway process."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolscript.gateway.launch import start_gateway

__all__ = ["gateway_env", "percentile", "running_gateway"]


def percentile(values: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of ``values`` lie (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def gateway_env(**extra: str) -> dict[str, str]:
    """This environment without TOOLSCRIPT_* settings, quiet logs, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSCRIPT_")}
    env["TOOLSCRIPT_LOG_LEVEL"] = "WARNING"
    env.update(extra)
    return env


@contextmanager
def running_gateway(directory: Path, config: dict[str, Any], **env: str) -> Iterator[str]:
    """``toolscript gateway start`` on ``config`` in ``directory``; yields its URL."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".toolscript.json").write_text(json.dumps(config))
    # the bench wrote this config itself: trusted without touching the user's trust records
    env = {"TOOLSCRIPT_TRUSTED_PATHS": str(directory), **env}
    gateway = start_gateway(cwd=directory, env=gateway_env(**env), stderr=None)
    try:
        if not gateway.url:
            raise SystemExit("the gateway did not start")
        yield gateway.url
    finally:
        gateway.stop(60)
