"""Keep secrets out of logs, status, errors and what a script sees.

A value is a secret because of what it is: a header value, an OAuth secret, a local tool's
``secrets`` entry, or a setting whose name says so (``GITHUB_TOKEN``, ``apiKey``) or whose
value reads like a generated token. Secrets are hidden thoroughly (whole, in the encodings
a message may carry them in, and any long run of one); other values (paths, URLs, text that
happens to share a few characters with a setting) are never touched.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

__all__ = [
    "embedded_secrets",
    "looks_like_secret",
    "may_hold_secret",
    "redact",
    "redact_value",
    "secret_name",
    "secret_setting",
    "secret_variable",
    "sent_text",
]

MASK = "***"
_MIN_SECRET_LENGTH = 4  # shorter values ("1", "on") would mangle ordinary text
_MIN_PART_LENGTH = 8  # a run of a secret this long is hidden too ("using key ghp_abc1...")
_MIN_WORD_LENGTH = 12  # the words of a secret with spaces ("Bearer <token>") count alone
# A value whose runs are hidden too: one opaque word, not a path or a URL (whose runs,
# "/home/me/", "https://", are everyone's text).
_OPAQUE = re.compile(r"(?![/.~])(?!.*://)\S+")


def redact(text: str, secrets: Iterable[str], *, sent: str = "", written: str = "") -> str:
    """``text`` with every secret replaced by ``***``: whole, JSON-escaped, URL-encoded, in hex,
    base64-encoded, and every run of 8 characters or more of one (its start, its end, its
    middle) when it reads as one opaque value (no spaces, not a path or a URL).

    ``sent``: what the reader of ``text`` wrote itself (a script's arguments, which a
    server's error echoes; ``sent_text``): a spelling, or a run of a secret as long as the
    text holds it, found in it (whatever its case) is left as it is. Masked, it told the
    script which of its guesses were runs of a secret: guessing 8 characters (``ghp_`` and
    4 more), then one more at a time, read the whole token.

    ``written``: what a script wrote, kept where it or its agent reads it back and a person
    or a file sees it too (the run log, an approval, ``get-types``' examples; ``sent_text``):
    a run of a secret found in it is left as written (the same oracle), a whole secret in any
    spelling is masked still (a token cannot be guessed whole, and none lands in a file or a
    prompt)."""
    return _redact(text, _prepared(tuple(sorted(set(secrets)))), *_lookups(sent, written))


def _lookups(sent: str, written: str) -> tuple[_Sent, _Sent]:
    """What a whole spelling is looked up in (``sent``) and what a run is (``sent`` and
    ``written``)."""
    was_sent = _Sent(sent)
    return was_sent, (_Sent(f"{sent}\n{written}") if written else was_sent)


def _redact(
    text: str, prepared: tuple[tuple[str, ...], _Grams], was_sent: _Sent, run_written: _Sent
) -> str:
    forms, grams = prepared
    for form in forms:
        if form in text and not was_sent(form):
            text = text.replace(form, MASK)
    return _redact_runs(text, grams, run_written) if grams else text


def sent_text(arguments: Any) -> str:
    """What a script sent, for ``redact``'s ``sent``: its arguments as JSON, and each of their
    strings (keys too) as it is, unescaped (a server quotes a value holding a quote or a
    backslash as it is)."""
    strings: list[str] = []

    def collect(item: Any) -> None:
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                collect(str(key))
                collect(value)
        elif isinstance(item, list):
            for element in item:
                collect(element)

    collect(arguments)
    return "\n".join([json.dumps(arguments, ensure_ascii=False), *strings])


class _Sent:
    """Whether a piece of text was in ``sent`` (whatever its case), each piece looked up
    once, and ``sent`` (a script's arguments: up to megabytes) casefolded only when first
    asked about, so a text holding no secret costs nothing more. A run of a secret is asked
    about whole (``holds``): for each place in the secret, the longest run from there that
    ``sent`` holds is found once, in at most two searches of ``sent`` per character of it,
    however many runs a text holds."""

    def __init__(self, sent: str) -> None:
        self.sent = sent
        self.folded: str | None = None
        self.found: dict[str, bool] = {}
        self.reach: dict[str, list[int]] = {}

    def _sent_folded(self) -> str:
        if self.folded is None:
            self.folded = self.sent.casefold()
        return self.folded

    def __call__(self, piece: str) -> bool:
        if not self.sent:
            return False
        key = piece.casefold()
        found = self.found.get(key)
        if found is None:
            found = self.found[key] = key in self._sent_folded()
        return found

    def holds(self, secret: str, at: int, size: int) -> bool:
        """Whether ``sent`` holds ``secret[at:at + size]`` (whatever its case)."""
        if not self.sent:
            return False
        reach = self.reach.get(secret)
        if reach is None:
            reach = self.reach[secret] = self._reach(secret)
        return size <= reach[at]

    def _reach(self, secret: str) -> list[int]:
        """For each place in ``secret``, the length of the longest run from there (8
        characters or more, else 0) that ``sent`` holds: one shorter than the last one's at
        least, since that run less its first character is in ``sent`` too."""
        folded, reach, size = self._sent_folded(), [], 0
        for at in range(len(secret)):
            size = max(size - 1, 0)
            if size < _MIN_PART_LENGTH:
                end = at + _MIN_PART_LENGTH
                size = (
                    _MIN_PART_LENGTH
                    if end <= len(secret) and (secret[at:end].casefold() in folded)
                    else 0
                )
            while (
                size
                and at + size < len(secret)
                and (secret[at : at + size + 1].casefold() in folded)
            ):
                size += 1
            reach.append(size)
        return reach


def may_hold_secret(text: str | bytes, secrets: Iterable[str], *, runs: bool = True) -> bool:
    """Whether ``redact`` would change ``text``: it holds a secret in one of its spellings
    (JSON-escaped, base64...) or a run of 8 characters of one. A quick test (a substring
    search per spelling and per run) before the slower redaction of a long text.
    ``runs=False``: whole spellings only (of a script's own text, which its author can
    read: whether it holds a run of a secret is an oracle, as ``redact``'s ``written``)."""
    forms, grams = _prepared(tuple(sorted(set(secrets))))
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return any(form in text for form in forms) or (runs and any(gram in text for gram in grams))


_Grams = dict[str, list[tuple[str, int]]]


@lru_cache(maxsize=32)
def _prepared(secrets: tuple[str, ...]) -> tuple[tuple[str, ...], _Grams]:
    """Every spelling of the secrets to replace whole (longest first), and each run of 8
    characters of the secrets whose runs are hidden, with where it is in which secret
    (computed once per set of secrets: logs and call rows redact line by line)."""
    forms: set[str] = set()
    parts: list[str] = []
    for secret in secrets:
        if len(secret) < _MIN_SECRET_LENGTH:
            continue
        words = [word for word in secret.split() if len(word) >= _MIN_WORD_LENGTH]
        for value in {secret, *words}:
            forms.update(_spellings(value))
            if len(value) > _MIN_PART_LENGTH and _OPAQUE.fullmatch(value):
                parts.append(value)
    grams: _Grams = {}
    for secret in parts:
        for at in range(len(secret) - _MIN_PART_LENGTH + 1):
            grams.setdefault(secret[at : at + _MIN_PART_LENGTH], []).append((secret, at))
    kept = sorted((form for form in forms if len(form) >= _MIN_SECRET_LENGTH), key=len)
    return tuple(reversed(kept)), grams


def _spellings(secret: str) -> set[str]:
    """``secret`` as it is, JSON-escaped, URL-encoded, in hex and base64-encoded (at each of the three
    byte alignments it may have inside a longer encoded text, without the characters the
    neighbouring bytes decide)."""
    found = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    found |= {quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret)}
    raw = secret.encode()
    found |= {raw.hex(), raw.hex().upper()}
    if len(raw) >= 6:
        for shift in range(3):
            for encode in (base64.b64encode, base64.urlsafe_b64encode):
                encoded = encode(b"\0" * shift + raw).decode()
                start = -(-8 * shift // 6)  # the first character of the secret's bits alone
                end = 8 * (shift + len(raw)) // 6  # past the last one
                found.add(encoded[start:end])
    return found


def _redact_runs(text: str, grams: _Grams, was_sent: _Sent | None = None) -> str:
    """Replace each run of ``text`` of 8 characters or more that also occurs in a secret, as
    far as it goes, unless ``was_sent`` holds that whole run (``redact``'s ``sent``): a
    guess of its first 8 characters left them shown and masked the rest, which told the
    script its guess was right, one more character at a time."""
    size = _MIN_PART_LENGTH
    pieces, done, i = [], 0, 0
    while i <= len(text) - size:
        places = grams.get(text[i : i + size])
        if not places:
            i += 1
            continue
        end, longest = i + size, places[0]
        for secret, at in places:
            reach = i + size
            while (
                reach < len(text)
                and at + reach - i < len(secret)
                and text[reach] == secret[at + reach - i]
            ):
                reach += 1
            if reach > end:
                end, longest = reach, (secret, at)
        if was_sent is not None and was_sent.holds(longest[0], longest[1], end - i):
            # As sent, and so is each part of it: what follows starts at the first run that
            # reaches past it.
            i = max(i + 1, end - size + 1)
            continue
        pieces += [text[done:i], MASK]
        done = i = end
    pieces.append(text[done:])
    return "".join(pieces)


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

# Words of a setting's name (GITHUB_TOKEN, aws_secret_access_key, apiKey) that make its
# value a secret; MEMORY_FILE_PATH or MAX_TOKENS hold none of them.
_SECRET_WORDS = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "bearer",
        "cookie",
        "credential",
        "credentials",
        "jwt",
        "key",
        "pass",
        "passphrase",
        "passwd",
        "password",
        "pat",
        "pin",
        "private",
        "privatekey",
        "pwd",
        "secret",
        "session",
        "sessionid",
        "token",
    }
)
# Values that read as generated credentials: known prefixes, or a long run of token
# characters mixing letters and digits.
_TOKEN_PREFIXES = re.compile(
    r"^(?:gh[pousr]_|github_pat_|glpat-|sk-|rk_|pk_live_|xox[abposr]-|AKIA|ASIA|AIza|ya29\.|eyJ)"
)
_TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9_\-+=.~]{20,}")


def secret_name(key: str) -> bool:
    """Whether an argument called ``key`` holds a credential (``apiKey``, ``access_token``)."""
    name = key.lower().replace("-", "").replace("_", "")
    if name in _SECRET_NAMES:
        return True
    return name.endswith(_SECRET_ENDINGS) and not name.startswith(_COUNTS)


def secret_variable(name: str) -> bool:
    """Whether a setting or variable called ``name`` holds a secret: one of its words says
    so (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``apiKey``, ``DB_PASSWORD``)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    words = {word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word}
    return bool(words & _SECRET_WORDS) or secret_name(name)


def looks_like_secret(value: str) -> bool:
    """Whether ``value`` reads as a generated credential (``ghp_...``, ``sk-...``, a long
    run of letters and digits), whatever its name."""
    if _TOKEN_PREFIXES.match(value) and len(value) >= 12 and not re.search(r"\s", value):
        return True
    if not _TOKEN_CHARACTERS.fullmatch(value):
        return False
    digits = sum(char.isdigit() for char in value)
    letters = sum(char.isalpha() for char in value)
    return digits >= 3 and letters >= 3


def secret_setting(name: str, value: str) -> bool:
    """Whether the setting ``name=value`` (an env entry, a ``${VAR}``) is a secret."""
    return secret_variable(name) or looks_like_secret(value)


def embedded_secrets(value: str) -> list[str]:
    """Secrets written inside a larger value: a URL's password, and the values of its query
    parameters named like credentials (``?api_key=...``)."""
    if "://" not in value:
        return []
    try:
        parts = urlsplit(value.strip())
        found = [parts.password] if parts.password else []
        found += [v for k, v in parse_qsl(parts.query) if v and secret_variable(k)]
    except ValueError:
        return []
    return found


def redact_value(value: Any, secrets: Iterable[str], *, sent: str = "", written: str = "") -> Any:
    """A JSON value with configured secrets out of its strings and the values of keys named
    like credentials (``password``, ``apiKey``, ``token``...) replaced by ``***`` (``sent``,
    ``written``: as ``redact``'s)."""
    known = tuple(secrets)
    prepared, lookups = _prepared(tuple(sorted(set(known)))), _lookups(sent, written)

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            return _redact(item, prepared, *lookups) if known else item
        if isinstance(item, dict):
            return {
                key: MASK if secret_name(str(key)) and item[key] else clean(item[key])
                for key in item
            }
        if isinstance(item, list):
            return [clean(element) for element in item]
        return item

    return clean(value)
