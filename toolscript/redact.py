"""Keep configured secrets (env values, header values) out of logs, status and errors."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["redact"]

_MIN_SECRET_LENGTH = 4  # shorter values ("1", "on") would mangle ordinary text
_MIN_PART_LENGTH = 8  # servers print the start of a token ("using key ghp_abc1..."): hidden too


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value, and every start of one of at least 8 characters,
    replaced by ``***``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) < _MIN_SECRET_LENGTH:
            continue
        text = text.replace(secret, "***")
        if len(secret) > _MIN_PART_LENGTH:
            text = _redact_starts(text, secret)
    return text


def _redact_starts(text: str, secret: str) -> str:
    """Replace each run of ``text`` that is a prefix of ``secret`` (8 characters or more)."""
    head = secret[:_MIN_PART_LENGTH]
    parts, done = [], 0
    while (found := text.find(head, done)) != -1:
        end = found + _MIN_PART_LENGTH
        while end < len(text) and end - found < len(secret) and text[end] == secret[end - found]:
            end += 1
        parts += [text[done:found], "***"]
        done = end
    parts.append(text[done:])
    return "".join(parts)
