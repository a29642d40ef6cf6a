"""Keep configured secrets (env values, header values) out of logs, status and errors."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["redact"]

_MIN_SECRET_LENGTH = 4  # shorter values ("1", "on") would mangle ordinary text


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``***``."""
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= _MIN_SECRET_LENGTH:
            text = text.replace(secret, "***")
    return text
