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
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

__all__ = [
    "cut_redacted",
    "embedded_secrets",
    "held_secrets",
    "looks_like_secret",
    "may_hold_secret",
    "redact",
    "redact_value",
    "redaction_margin",
    "secret_name",
    "secret_setting",
    "secret_variable",
    "sent_text",
]

MASK = "***"
_MIN_SECRET_LENGTH = 4  # shorter values ("1", "on") would mangle ordinary text
_MIN_PART_LENGTH = 8  # a run of a secret this long is hidden too ("using key ghp_abc1...")
_MIN_WORD_LENGTH = 12  # the words of a secret with spaces ("Bearer <token>") count alone
# A run of an encoded spelling is hidden once it spells 8 characters of its secret: 16 hex
# digits, 11 of base64 (a run of 8 would be 4 bytes of hex: "ghp_" of every GitHub token).
_MIN_ENCODED_RUN = {"hex": 2 * _MIN_PART_LENGTH, "base64": -(-4 * _MIN_PART_LENGTH // 3)}
# A value whose runs are hidden too: one opaque word, not a path or a URL (whose runs,
# "/home/me/", "https://", are everyone's text).
_OPAQUE = re.compile(r"(?![/.~])(?!.*://)\S+")


def redact(
    text: str,
    secrets: Iterable[str],
    *,
    sent: str = "",
    written: str = "",
    received: Iterable[str] = (),
) -> str:
    """``text`` with every secret replaced by ``***``: whole, JSON-escaped, URL-encoded, in hex,
    base64-encoded, and every run of 8 characters or more of one (its start, its end, its
    middle; in hex or base64, a run spelling 8 characters of it) when it reads as one opaque
    value (no spaces, not a path or a URL).

    ``sent``: what the reader of ``text`` wrote itself (a script's arguments, which a
    server's error echoes; ``sent_text``): a spelling, or a run of a secret as long as the
    text holds it, found in it (whatever its case) is left as it is. Masked, it told the
    script which of its guesses were runs of a secret: guessing 8 characters (``ghp_`` and
    4 more), then one more at a time, read the whole token.

    ``written``: what a script wrote, kept where it or its agent reads it back and a person
    or a file sees it too (the run log, an approval, ``get-types``' examples; ``sent_text``):
    a run of a secret found in it is left as written (the same oracle), a whole secret in any
    spelling is masked still (a token cannot be guessed whole, and none lands in a file or a
    prompt).

    ``received``: the secrets the writer was handed whole (``held_secrets`` of the results a
    run received): their runs are masked even in ``sent`` and ``written``. Such a writer
    guesses nothing, and shown as written, a token it sent on in two halves was shown whole
    in two pieces."""
    return _redact(text, _prepared(tuple(sorted(set(secrets)))), _lookups(sent, written, received))


def cut_redacted(text: str, limit: int, secrets: Iterable[str], **lookups: Any) -> str:
    """``text`` redacted (``redact``, with its ``sent``, ``written``, ``received``), then cut
    to ``limit`` characters: a spelling the cut goes through is masked whole first, not left
    as the piece before the cut. Only about ``limit`` characters are redacted."""
    known = tuple(secrets)
    forms = _prepared(tuple(sorted(set(known))))[0]
    end = limit + (len(forms[0]) if forms else 0)
    while end < len(text):  # not through a spelling: past its end
        past = _past_spelling(text, end, forms)
        if past == end:
            text = text[:end]
            break
        end = past
    return redact(text, known, **lookups)[:limit]


def _past_spelling(text: str, at: int, forms: tuple[str, ...]) -> int:
    """``at``, or the end of the spelling of a secret that runs through it."""
    start = max(0, at - len(forms[0]))
    window, end = text[start : at + len(forms[0])], at
    for form in forms:
        found = window.find(form)
        while found != -1:
            if start + found < at < start + found + len(form):
                end = max(end, start + found + len(form))
            found = window.find(form, found + 1)
    return end


def redaction_margin(secrets: Iterable[str]) -> int:
    """How far past a cut a text must be kept for ``redact`` to see any spelling of a secret
    that starts before it whole (its longest spelling)."""
    forms = _prepared(tuple(sorted(set(secrets))))[0]
    return len(forms[0]) if forms else 0


def held_secrets(text: str | bytes, secrets: Iterable[str]) -> set[str]:
    """The secrets ``text`` holds whole, in any spelling ``redact`` masks (for its
    ``received``). A quick test first: most texts hold none."""
    known = tuple(sorted(set(secrets)))
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not known or not any(form in text for form in _prepared(known)[0]):
        return set()
    return {secret for secret in known if any(form in text for form in _forms_of(secret))}


class _Lookups(NamedTuple):
    was_sent: _Sent  # what a whole spelling is looked up in (``sent``)
    run_written: _Sent  # what a run is (``sent`` and ``written``)
    received: frozenset[str]  # secrets whose runs are masked whatever the two hold


def _lookups(sent: str, written: str, received: Iterable[str] = ()) -> _Lookups:
    was_sent = _Sent(sent)
    run_written = _Sent(f"{sent}\n{written}") if written else was_sent
    return _Lookups(was_sent, run_written, frozenset(received))


def _redact(text: str, prepared: tuple[tuple[str, ...], _Grams], lookups: _Lookups) -> str:
    forms, grams = prepared
    for form in forms:
        if form in text and not lookups.was_sent(form):
            text = text.replace(form, MASK)
    return _redact_runs(text, grams, lookups) if grams else text


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


class _Place(NamedTuple):
    """Where a run of 8 characters is in a spelling of a secret whose runs are hidden."""

    spelling: str  # the secret as it is, in hex or in base64
    at: int
    secret: str  # the secret it spells (``redact``'s ``received``)
    least: int  # the shortest run of the spelling hidden (8 characters of the secret)


_Grams = dict[str, list[_Place]]


@lru_cache(maxsize=256)
def _forms_of(secret: str) -> tuple[str, ...]:
    """Every spelling of one secret replaced whole (``_spellings`` of it and of its long
    words)."""
    if len(secret) < _MIN_SECRET_LENGTH:
        return ()
    words = [word for word in secret.split() if len(word) >= _MIN_WORD_LENGTH]
    forms: set[str] = set()
    for value in {secret, *words}:
        forms.update(_spellings(value))
    return tuple(form for form in forms if len(form) >= _MIN_SECRET_LENGTH)


@lru_cache(maxsize=32)
def _prepared(secrets: tuple[str, ...]) -> tuple[tuple[str, ...], _Grams]:
    """Every spelling of the secrets to replace whole (longest first), and each run of 8
    characters of the secrets whose runs are hidden (as they are, in hex, in base64), with
    where it is in which spelling (computed once per set of secrets: logs and call rows
    redact line by line)."""
    forms: set[str] = set()
    parts: list[_Place] = []
    for secret in secrets:
        forms.update(_forms_of(secret))
        words = [word for word in secret.split() if len(word) >= _MIN_WORD_LENGTH]
        for value in {secret, *words} if len(secret) >= _MIN_SECRET_LENGTH else ():
            if len(value) > _MIN_PART_LENGTH and _OPAQUE.fullmatch(value):
                parts += [
                    _Place(spelling, 0, secret, least) for spelling, least in _run_spellings(value)
                ]
    grams: _Grams = {}
    for part in parts:
        for at in range(len(part.spelling) - _MIN_PART_LENGTH + 1):
            gram = part.spelling[at : at + _MIN_PART_LENGTH]
            grams.setdefault(gram, []).append(part._replace(at=at))
    kept = sorted(forms, key=len)
    return tuple(reversed(kept)), grams


def _run_spellings(value: str) -> list[tuple[str, int]]:
    """The spellings of an opaque ``value`` whose runs are hidden, each with the shortest
    run hidden: as it is, its URL-encoding (a token holding ``+`` or ``=``), in hex and in
    base64 (at each alignment: ``_spellings``). A piece of an encoded secret (the half a
    length limit leaves, one of two messages) would else show."""
    raw = value.encode()
    found = [(value, _MIN_PART_LENGTH)]
    found += [(spelling, _MIN_PART_LENGTH) for spelling in {quote(value, safe="")} - {value}]
    found += [(spelling, _MIN_ENCODED_RUN["hex"]) for spelling in (raw.hex(), raw.hex().upper())]
    if len(raw) >= _MIN_PART_LENGTH:
        found += [
            (spelling, _MIN_ENCODED_RUN["base64"])
            for spelling in sorted(_base64_spellings(raw))
            if len(spelling) >= _MIN_ENCODED_RUN["base64"]
        ]
    return found


def _spellings(secret: str) -> set[str]:
    """``secret`` as it is, JSON-escaped, URL-encoded, in hex and base64-encoded (at each of the three
    byte alignments it may have inside a longer encoded text, without the characters the
    neighbouring bytes decide)."""
    found = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    found |= {quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret)}
    raw = secret.encode()
    found |= {raw.hex(), raw.hex().upper()}
    if len(raw) >= 6:
        found |= _base64_spellings(raw)
    return found


def _base64_spellings(raw: bytes) -> set[str]:
    """``raw`` base64-encoded (standard and URL-safe) at each of the three byte alignments
    it may have inside a longer encoded text, without the characters the neighbouring bytes
    decide."""
    found = set()
    for shift in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * shift + raw).decode()
            start = -(-8 * shift // 6)  # the first character of the secret's bits alone
            end = 8 * (shift + len(raw)) // 6  # past the last one
            found.add(encoded[start:end])
    return found


def _redact_runs(text: str, grams: _Grams, lookups: _Lookups | None = None) -> str:
    """Replace each run of ``text`` of 8 characters or more that also occurs in a secret's
    spelling, as far as it goes, unless ``lookups.run_written`` holds that whole run
    (``redact``'s ``sent``) and its secret is not one ``received``: a guess of its first 8
    characters left them shown and masked the rest, which told the script its guess was
    right, one more character at a time."""
    size = _MIN_PART_LENGTH
    pieces, done, i = [], 0, 0
    while i <= len(text) - size:
        places = grams.get(text[i : i + size])
        end, longest = i, None
        for place in places or ():
            spelling, at = place.spelling, place.at
            reach = i + size
            while (
                reach < len(text)
                and at + reach - i < len(spelling)
                and text[reach] == spelling[at + reach - i]
            ):
                reach += 1
            if reach - i >= place.least and reach > end:
                end, longest = reach, place
        if longest is None:
            i += 1
            continue
        if (
            lookups is not None
            and longest.secret not in lookups.received
            and lookups.run_written.holds(longest.spelling, longest.at, end - i)
        ):
            # As sent, and so is each part of it: what follows starts at the first run that
            # reaches past it.
            i = max(i + 1, end - size + 1)
            continue
        pieces += [text[done:i], MASK]
        done = i = end
    pieces.append(text[done:])
    return "".join(pieces)


# Argument names whose values are credentials whatever they hold (compared lowercased,
# without "-" and "_"): these names exactly, or ending so. Not "key" (a map's key, a
# primary key), "tokens" (a text's words) or "auth" (oauth: true) as endings.
_SECRET_NAMES = frozenset({"auth", "passwd", "pin", "jwt", "bearer"})
_SECRET_ENDINGS = (
    "password",
    "passwords",
    "passphrase",
    "pwd",  # dbPwd; a shell tool's "pwd" (a path) is masked with them
    "secret",
    "secrets",
    "secretkey",
    "accesskey",  # aws_secret_access_key
    "token",
    "apikey",
    "apikeys",
    "privatekey",
    "credential",
    "credentials",
    "authorization",  # Proxy-Authorization
    "cookie",  # Set-Cookie
    "cookies",
    "sessionid",
)
# A header list's entry: {"name": "Authorization", "value": ...} (HAR, Postman's "key").
_ENTRY_NAMES = ("name", "key", "header")
_COUNTS = ("max", "num", "count", "total")  # maxTokens, numTokens: counts, not credentials
# nextPageToken, NextToken, continuation_token, syncToken: where a listing goes on, no credential
_PAGING = ("page", "nextpage", "next", "continuation", "sync", "pagination", "cursor")

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
# A name, not a generated credential: words and numbers joined by - _ or . (a model,
# ``claude-3-5-sonnet-20241022``; a version), each part letters or digits alone, or 3
# characters at most (``4o``). A UUID's or a token's parts mix them, longer.
_NAMED_PARTS = re.compile(
    r"(?:[A-Za-z]+|[0-9]+|[A-Za-z0-9]{1,3})(?:[-_.](?:[A-Za-z]+|[0-9]+|[A-Za-z0-9]{1,3}))+"
)
# What a setting named like a secret holds when it says how to sign in, not with what
# (``AUTH_MODE=none``, ``TOKEN_TYPE=bearer``, ``AUTH_ENABLED=true``): as secrets, every such
# word was masked in every error, log and example, a result's key ``none`` shown as ``***``.
_SETTING_WORDS = frozenset(
    {
        "true",
        "false",
        "none",
        "null",
        "enabled",
        "disabled",
        "enable",
        "disable",
        "required",
        "optional",
        "bearer",
        "basic",
        "oauth",
        "oauth2",
        "digest",
        "header",
        "query",
        "cookie",
        "token",
        "apikey",
        "api_key",
        "default",
        "auto",
    }
)


def secret_name(key: str) -> bool:
    """Whether an argument called ``key`` holds a credential (``apiKey``, ``access_token``)."""
    name = key.lower().replace("-", "").replace("_", "")
    if name in _SECRET_NAMES:
        return True
    if name.startswith(_PAGING) and name.endswith("token"):
        return False
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
    if not _TOKEN_CHARACTERS.fullmatch(value) or _NAMED_PARTS.fullmatch(value):
        return False
    digits = sum(char.isdigit() for char in value)
    letters = sum(char.isalpha() for char in value)
    return digits >= 3 and letters >= 3


def secret_setting(name: str, value: str) -> bool:
    """Whether the setting ``name=value`` (an env entry, a ``${VAR}``) is a secret: not
    one of the words that say how to sign in (``AUTH_MODE=none``)."""
    if value.strip().lower() in _SETTING_WORDS:
        return False
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


def redact_value(
    value: Any,
    secrets: Iterable[str],
    *,
    sent: str = "",
    written: str = "",
    received: Iterable[str] = (),
    by_name: bool = True,
) -> Any:
    """A JSON value with configured secrets out of its strings and the values of keys named
    like credentials (``password``, ``apiKey``, ``token``...) replaced by ``***`` (``sent``,
    ``written``, ``received``: as ``redact``'s). ``by_name`` False: keys are no reason to
    mask (a form's schema, whose field ``password`` holds its spec, not one)."""
    known = tuple(secrets)
    prepared = _prepared(tuple(sorted(set(known))))
    lookups = _lookups(sent, written, received)

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            return _redact(item, prepared, lookups) if known else item
        if isinstance(item, dict):
            named = _named_entry(item)
            cleaned: dict[Any, Any] = {}
            for key, member in item.items():
                masked = by_name and (secret_name(str(key)) or (named and key == "value"))
                shown_key = clean(key) if isinstance(key, str) else key
                while shown_key in cleaned:  # two keys masked alike: both kept
                    shown_key = f"{shown_key}'"
                # (a flag, ``has_password: true``, holds no credential)
                hidden = masked and member and not isinstance(member, bool)
                cleaned[shown_key] = MASK if hidden else clean(member)
            return cleaned
        if isinstance(item, list):
            return [
                [element[0], MASK] if by_name and _named_pair(element) else clean(element)
                for element in item
            ]
        return item

    return clean(value)


def _named_entry(item: dict[Any, Any]) -> bool:
    """Whether ``item`` is a header list's entry naming a credential (``{"name":
    "Authorization", "value": ...}``): its value is one."""
    return "value" in item and any(
        isinstance(item.get(key), str) and secret_name(item[key]) for key in _ENTRY_NAMES
    )


def _named_pair(element: Any) -> bool:
    """Whether ``element`` of a list of pairs (fetch's ``[["Authorization", ...], ...]``)
    names a credential."""
    return (
        isinstance(element, list)
        and len(element) == 2
        and isinstance(element[0], str)
        and bool(element[1])
        and secret_name(element[0])
    )
