"""What a script may do with each tool: ``allow``, ``ask`` (approval first) or ``deny``.

Decided per call from the config and the tool's annotations, most specific first:

1. the server's ``policy`` rule whose pattern matches the tool: an exact name before any
   glob, a longer glob before a shorter one (``delete_*`` before ``*``); a resource's URI
   as spelled and as decoded and resolved (``resource_spellings``), the stricter winning;
2. the project's ``policy.ask`` setting against the tool's annotations:
   ``destructive`` (the default) asks for tools annotated ``destructiveHint: true``,
   ``writes`` for every tool not annotated ``readOnlyHint: true``, ``never`` for none;
3. ``allow``.

Pure logic: no I/O, no gateway.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
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
    "resource_spellings",
    "timeout_for",
    "unmatched_rules",
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
    """The decision for ``tool`` of a server whose rules are ``rules``. A resource's URI
    is decided as spelled and as its server may read it (``resource_spellings``), the
    strictest decision winning, unless a rule names the URI exactly as spelled."""
    if tool.startswith("resource:") and tool not in rules:
        spellings = resource_spellings(tool.removeprefix("resource:"))
        decided = [_decide(rules, asking, f"resource:{uri}", annotations) for uri in spellings]
        # and in any case: a host is (RFC 3986), and so is a path on macOS's or Windows's
        # disks (``files://ETC/passwd``, ``file:///Users/me/.SSH/id_rsa``)
        folded = _folded(rules)
        decided += [
            _decide(folded, asking, f"resource:{uri}".casefold(), annotations) for uri in spellings
        ]
        return max(decided, key=DECISIONS.index)
    return _decide(rules, asking, tool, annotations)


def _folded(rules: Rules) -> dict[str, Decision]:
    """``rules`` with their patterns in case-folded form (of two that fold alike, the
    stricter)."""
    folded: dict[str, Decision] = {}
    for pattern, decision in rules.items():
        key = pattern.casefold()
        if key not in folded or DECISIONS.index(decision) > DECISIONS.index(folded[key]):
            folded[key] = decision
    return folded


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def resource_spellings(uri: str) -> list[str]:
    """``uri`` and the URI a server decoding it reads: scheme in lower case, percent-escapes
    decoded (as often as they nest), ``.``/``..`` path segments resolved and empty ones
    dropped, so that
    ``files://pub/..%2Fetc/passwd`` is also ``files://etc/passwd`` to the rules."""
    from urllib.parse import unquote

    decoded = uri
    for _ in range(8):  # %252F -> %2F -> /
        if not _ESCAPE.search(decoded):
            break
        decoded = unquote(decoded, errors="surrogateescape")
    scheme = _SCHEME.match(decoded)
    head = scheme.group(0).lower() if scheme else ""
    rest = decoded[len(head) :]
    if rest.startswith("//"):  # its first segment too, as ``notes://{folder}/...`` has it
        head, rest = head + "//", rest[2:]
        # the host as a server's URL parser reads it: without a user (``x@``) or an empty port
        host, slash, path = rest.partition("/")
        rest = host.rpartition("@")[2].removesuffix(":") + slash + path
    kept: list[str] = []
    segments = rest.split("/")
    for index, segment in enumerate(segments):
        if segment == "..":
            if kept:
                kept.pop()
        elif segment not in (".", "") or index == len(segments) - 1:  # a//b is a/b
            kept.append(segment)
    resolved = head + "/".join(kept)
    return [uri] if resolved == uri else [uri, resolved]


def _decide(
    rules: Rules, asking: Asking, tool: str, annotations: Mapping[str, Any] | None
) -> Decision:
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


_WILDCARDS = re.compile(r"[*?\[]")


# Rules naming no tool said one by one, each with the closest tool name: difflib's match
# is a pass over every tool (about 50 ms at 2,000), run on the gateway's loop at each listing.
# The rest are counted in one line.
MAX_UNMATCHED_SAID = 3


def unmatched_rules(rules: Mapping[str, Any], tools: Iterable[str]) -> list[str]:
    """What to say of each rule of ``rules`` (a server's ``policy``) that names a tool
    exactly but none of ``tools`` (all it lists, those a rule denies included): a misspelt
    name leaves the tool it meant to the default decision, an allowed call where a person
    was to say yes. The closest tool name is suggested for the first ``MAX_UNMATCHED_SAID``;
    the others are counted. A pattern (``delete_*``) may guard tools to come, and resource
    and prompt rules name no tool: neither is said."""
    import difflib

    names = list(tools)
    listed = set(names)
    unmatched = [
        pattern
        for pattern in rules
        if pattern not in listed and not is_offering(pattern) and not _WILDCARDS.search(pattern)
    ]
    said: list[str] = []
    for pattern in unmatched[:MAX_UNMATCHED_SAID]:
        close = difflib.get_close_matches(pattern, names, n=1, cutoff=0.6)
        meant = f' (did you mean "{close[0]}"?)' if close else ""
        said.append(
            f'policy rule "{pattern}" names none of its {len(names)} tools{meant}; '
            "the tool it was meant for gets the default decision"
        )
    if len(unmatched) > MAX_UNMATCHED_SAID:
        said.append(
            f"{len(unmatched) - MAX_UNMATCHED_SAID} more policy rules name none of its "
            f"{len(names)} tools (`toolscript list-tools` lists the names); the tools they "
            "were meant for get the default decision"
        )
    return said


def timeout_for(timeouts: Mapping[str, float], tool: str, default: float) -> float:
    """A tool's call timeout: the most specific ``toolTimeouts`` pattern, else ``default``."""
    found = matching(timeouts, tool)
    return default if found is None else float(found)
