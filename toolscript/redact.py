"""Keep configured secrets (env values, header values) out of logs, status and errors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["holds_secret", "redact", "redact_value", "secret_name"]

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


def holds_secret(text: str | bytes, secrets: Iterable[str]) -> bool:
    """Whether ``text`` holds one of ``secrets`` whole (those long enough to redact)."""
    if isinstance(text, bytes):
        return any(s.encode() in text for s in secrets if len(s) >= _MIN_SECRET_LENGTH)
    return any(s in text for s in secrets if len(s) >= _MIN_SECRET_LENGTH)


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


# Argument names whose values are credentials whatever they hold (compared lowercased,
# without "-" and "_"): these names exactly, or ending so.
_SECRET_NAMES = frozenset({"auth", "authorization", "cookie", "sessionid", "passwd", "pin"})
_SECRET_ENDINGS = (
    "password",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "privatekey",
    "credential",
    "credentials",
)
_COUNTS = ("max", "num", "count", "total")  # maxTokens, numTokens: counts, not credentials


def secret_name(key: str) -> bool:
    """Whether an argument called ``key`` holds a credential (``apiKey``, ``access_token``)."""
    name = key.lower().replace("-", "").replace("_", "")
    if name in _SECRET_NAMES:
        return True
    return name.endswith(_SECRET_ENDINGS) and not name.startswith(_COUNTS)


def redact_value(value: Any, secrets: Iterable[str]) -> Any:
    """A JSON value with configured secrets out of its strings and the values of keys named
    like credentials (``password``, ``apiKey``, ``token``...) replaced by ``***``."""
    known = tuple(secrets)

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            return redact(item, known) if known else item
        if isinstance(item, dict):
            return {
                key: "***" if secret_name(str(key)) and item[key] else clean(item[key])
                for key in item
            }
        if isinstance(item, list):
            return [clean(element) for element in item]
        return item

    return clean(value)
