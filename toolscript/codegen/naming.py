"""Spec 001 naming rules: server and tool names to TypeScript identifiers.

- camelCase for namespaces and functions: ``create_issue`` -> ``createIssue``,
  ``get-user-profile`` -> ``getUserProfile``, ``github-api`` -> ``githubApi``;
- PascalCase for types: ``GithubCreateIssueParams``;
- runs of separators (``_ - . : /`` and spaces) collapse (``create__issue`` ->
  ``createIssue``), a letter with an accent is its letter (``météo`` -> ``meteo``), other
  characters that are not ASCII letters, digits or underscores are removed, and a leading digit
  gets an ``_`` prefix (``123test`` -> ``_123test``).

Collisions after normalization (``create_issue`` and ``createIssue``) never
overwrite each other: names are taken in sorted order of the original names, the
first keeps the normalized name and each later one gets ``2``, ``3``, ... appended,
with a warning.

A tool is never named as a member JavaScript calls on an object by itself (``then`` at
``await tools.x``, ``toJSON`` at ``JSON.stringify``, ``toString`` and ``valueOf`` at a
string or number conversion): a server's tool named ``then`` is ``then2``, so awaiting,
printing or returning ``tools.<server>`` calls no tool.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Container, Iterable
from dataclasses import dataclass, field

__all__ = [
    "IMPLICIT_MEMBERS",
    "TYPE_NAMES_LIMIT",
    "NameMap",
    "assign_names",
    "check_type_names",
    "denied_name",
    "first_free",
    "to_camel_case",
    "to_pascal_case",
    "without_namespace",
]

# Members JavaScript looks up and calls on an object unasked (await, JSON.stringify, string
# and number conversion): as a tool, each was a call the script never wrote.
IMPLICIT_MEMBERS = frozenset({"then", "toJSON", "toString", "toLocaleString", "valueOf"})

# Characters (joined by commas) of the tools get-types is asked for at once: they go in the
# URL of one request, which the gateway's HTTP server refuses past 64 KB, unsaid
TYPE_NAMES_LIMIT = 16_384

_SEPARATORS = re.compile(r"[-_\s.:/]+")
_INVALID = re.compile(r"[^A-Za-z0-9_]")


def _words(name: str) -> list[str]:
    if not name.isascii():  # a letter with an accent keeps its letter: météo is meteo, not mto
        name = "".join(
            char for char in unicodedata.normalize("NFKD", name) if not unicodedata.combining(char)
        )
    parts = [_INVALID.sub("", part) for part in _SEPARATORS.split(name)]
    return [part.lower() if part.isupper() and len(part) > 1 else part for part in parts if part]


def to_camel_case(name: str) -> str:
    """``get-user_profile`` -> ``getUserProfile``; ``123test`` -> ``_123test``."""
    words = _words(name)
    if not words:
        return "_"
    first, rest = words[0], words[1:]
    text = first[0].lower() + first[1:] + "".join(word[0].upper() + word[1:] for word in rest)
    return "_" + text if text[0].isdigit() else text


_CAMEL_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def denied_name(member: str, rules: Iterable[str], denies: Callable[[str], bool]) -> str | None:
    """The tool a policy denies (``denies``, its ``rules``' names) that ``member`` stands for,
    as a script calls it or as the tool is named: the member itself, a rule spelled as
    scripts call it (``wipeAll`` for a rule ``wipe_all``), or the member's words joined by
    ``_`` or ``-`` (``dropTable`` for ``drop_table``, which a rule ``drop_*`` denies)."""
    words = [word.lower() for word in _CAMEL_WORDS.findall(member)]
    spellings = [
        member,
        *(rule for rule in rules if to_camel_case(rule) == member),
        "_".join(words),
        "-".join(words),
    ]
    return next((name for name in spellings if name and denies(name)), None)


def to_pascal_case(name: str) -> str:
    """``my-api_server`` -> ``MyApiServer``; ``123server`` -> ``_123server``."""
    camel = to_camel_case(name)
    return camel[0].upper() + camel[1:] if camel[0] != "_" else camel


def without_namespace(name: str, servers: Collection[str]) -> str:
    """``name`` as a script writes it (``tools.time.now``) without the ``tools.`` in front:
    ``time.now``. When a server is named ``tools``, ``tools.search`` is its tool ``search``
    unless ``search`` (or what ``search.`` begins) is a server too: the script's spelling
    wins, as ``tools.search`` is that server in a script; ``tools.tools.search`` is always
    the tool. ``servers``: the names (and spellings) of the configured servers."""
    rest = name.removeprefix("tools.")
    if rest == name or name in servers:
        return name
    if "tools" not in servers:
        return rest
    names_a_server = any(rest == server or rest.startswith(server + ".") for server in servers)
    return rest if names_a_server else name


def first_free(base: str, taken: Container[str]) -> str:
    """``base``, else the first of ``base2``, ``base3``, ... that is not ``taken``."""
    candidate, counter = base, 2
    while candidate in taken:
        candidate, counter = f"{base}{counter}", counter + 1
    return candidate


@dataclass
class NameMap:
    """Original names to unique identifiers, with the collisions that were resolved."""

    names: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def assign_names(
    originals: Iterable[str], *, what: str = "name", reserved: frozenset[str] = frozenset()
) -> NameMap:
    """Unique camelCase identifiers for ``originals``, deterministic whatever their order;
    none is one of ``reserved`` (``IMPLICIT_MEMBERS`` for a server's tools)."""
    result = NameMap()
    taken: dict[str, str] = {}
    # those normalizing to a reserved member last: they take no name another one has as it is
    ordered = sorted(set(originals), key=lambda name: (to_camel_case(name) in reserved, name))
    for original in ordered:
        base = to_camel_case(original)
        candidate = first_free(base, taken.keys() | reserved)
        if base in reserved:
            result.warnings.append(
                f"{what} {original!r} normalizes to {base!r}, which JavaScript calls by itself "
                f"(await, JSON.stringify, a string conversion); it is available as {candidate!r}"
            )
        elif candidate != base:
            result.warnings.append(
                f"{what} {original!r} normalizes to {base!r} like {taken[base]!r}; "
                f"it is available as {candidate!r}"
            )
        taken[candidate] = original
        result.names[original] = candidate
    return result


def check_type_names(names: Collection[str]) -> None:
    """Refuse get-types' ``names`` past ``TYPE_NAMES_LIMIT`` characters, saying the cap: the
    gateway's HTTP server answered their request 400, read as 'another program listens
    there'."""
    joined = sum(len(name) + 1 for name in names) - 1
    if joined > TYPE_NAMES_LIMIT:
        from toolscript.errors import UsageError

        raise UsageError(
            f"get-types was asked for {len(names):,} tools ({joined:,} characters); at most "
            f"{TYPE_NAMES_LIMIT:,} characters of names at once",
            hint="name a server alone for all of its tools, or ask for fewer at a time",
        )
