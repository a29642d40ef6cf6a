"""What a script may do with each tool: ``allow``, ``ask`` (approval first) or ``deny``.

Decided per call from the config and the tool's annotations, most specific first:

1. the server's ``policy`` rule whose pattern matches the tool: an exact name before any
   glob, a longer glob before a shorter one (``delete_*`` before ``*``);
2. the project's ``policy.ask`` setting against the tool's annotations:
   ``destructive`` (the default) asks for tools annotated ``destructiveHint: true``,
   ``writes`` for every tool not annotated ``readOnlyHint: true``, ``never`` for none;
3. ``allow``.

Pure logic: no I/O, no gateway.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any, Literal

__all__ = [
    "ASKING",
    "DECISIONS",
    "READ_ONLY",
    "Asking",
    "Decision",
    "Rules",
    "decide",
    "is_offering",
    "matching",
    "offering_name",
    "timeout_for",
]

Decision = Literal["allow", "ask", "deny"]
Asking = Literal["destructive", "writes", "never"]
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")
ASKING: tuple[Asking, ...] = ("destructive", "writes", "never")


Rules = Mapping[str, Decision]


def _specificity(pattern: str) -> tuple[int, int]:
    """Exact names first, then globs by how many literal characters they hold."""
    wild = any(character in pattern for character in "*?[")
    literal = sum(character not in "*?[]" for character in pattern)
    return (0 if wild else 1, literal)


def matching(patterns: Mapping[str, Any], tool: str) -> Any | None:
    """The value of the most specific pattern of ``patterns`` matching ``tool`` (None: none)."""
    if tool in patterns:
        return patterns[tool]
    best: tuple[tuple[int, int], Any] | None = None
    for pattern, value in patterns.items():
        if fnmatch.fnmatchcase(tool, pattern):
            rank = _specificity(pattern)
            if best is None or rank > best[0]:
                best = (rank, value)
    return None if best is None else best[1]


def decide(
    rules: Rules, asking: Asking, tool: str, annotations: Mapping[str, Any] | None
) -> Decision:
    """The decision for ``tool`` of a server whose rules are ``rules``."""
    ruled = matching(rules, tool)
    if ruled is not None:
        decision: Decision = ruled
        return decision
    hints = annotations or {}
    if asking == "destructive" and hints.get("destructiveHint") is True:
        return "ask"
    if asking == "writes" and hints.get("readOnlyHint") is not True:
        return "ask"
    return "allow"


# A resource read and a prompt get are decided as read-only calls named so (``offering_name``):
# a rule for ``resource:*`` or ``prompt:review`` matches them, and ``*`` as for any tool.
OFFERING_KINDS = ("resource", "prompt")
READ_ONLY: Mapping[str, Any] = {"readOnlyHint": True}


def offering_name(kind: str, name: str) -> str:
    """What the policy, approvals and the run log call a resource read (``resource:URI``)
    or a prompt get (``prompt:NAME``) of a server."""
    return f"{kind}:{name}"


def is_offering(name: str) -> bool:
    return name.partition(":")[0] in OFFERING_KINDS and ":" in name


def timeout_for(timeouts: Mapping[str, float], tool: str, default: float) -> float:
    """A tool's call timeout: the most specific ``toolTimeouts`` pattern, else ``default``."""
    found = matching(timeouts, tool)
    return default if found is None else float(found)
