"""Real tool definitions for benchmarks: ../shared/toolcorpus (or TOOLSCRIPT_TOOLCORPUS)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def corpus_dir() -> Path:
    chosen = os.environ.get("TOOLSCRIPT_TOOLCORPUS")
    path = Path(chosen) if chosen else ROOT.parent / "shared" / "toolcorpus"
    if not path.is_dir():
        raise SystemExit(f"tool corpus not found at {path}; set TOOLSCRIPT_TOOLCORPUS")
    return path


def corpus_tools() -> list[dict[str, Any]]:
    """Every tool of the corpus, in a stable order."""
    tools: list[dict[str, Any]] = []
    for path in sorted(corpus_dir().rglob("*.json")):
        if path.name.startswith("_") or "raw" in path.parts or path.name == "queries_sample.json":
            continue
        data = json.loads(path.read_text())
        if isinstance(data, list):
            tools.extend(t for t in data if isinstance(t, dict) and "name" in t)
    return tools


def synthetic_servers(servers: int, tools_per_server: int) -> dict[str, list[dict[str, Any]]]:
    """``servers`` x ``tools_per_server`` realistic tools, drawn round-robin from the corpus."""
    pool = corpus_tools()
    result: dict[str, list[dict[str, Any]]] = {}
    for s in range(servers):
        chosen = []
        for t in range(tools_per_server):
            tool = dict(pool[(s * tools_per_server + t) % len(pool)])
            tool["name"] = f"{tool['name']}_{t}"
            tool.setdefault("inputSchema", {"type": "object"})
            chosen.append(tool)
        result[f"server-{s:02d}"] = chosen
    return result
