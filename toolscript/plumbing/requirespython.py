"""Does a Python version satisfy a ``requires-python`` specifier (PEP 440, PEP 723)?

``packaging`` decides this elsewhere, but it is not one of toolscript's dependencies; and
the worker of a PEP 723 tool file runs on an interpreter named to uv by path, so uv never
checks the file's ``requires-python`` itself. Interpreters have plain versions (3.11.7, or
3.14.0rc1), so this is the part of PEP 440 that compares such a version with a specifier
set: every operator (``~= == != <= >= < > ===``), ``.*`` prefixes, and pre-, post- and
dev-release specifier versions. Local versions (``+abc``) are refused, as in a specifier
set of ``packaging`` for ordered comparisons.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

__all__ = ["InvalidSpecifier", "python_satisfies", "running_python_version"]

_CLAUSE = re.compile(r"^\s*(?P<op>~=|===|==|!=|<=|>=|<|>)\s*(?P<version>[^\s,]+)\s*$")
_VERSION = re.compile(
    r"""^v?(?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_kind>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]*))?
    (?P<post>[-_.]?(?:post|rev|r)[-_.]?(?P<post_n>[0-9]*)|-(?P<post_implicit>[0-9]+))?
    (?P<dev>[-_.]?dev[-_.]?(?P<dev_n>[0-9]*))?$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE_KINDS = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "c": "rc", "pre": "rc"}
_PRE_KINDS |= {"preview": "rc", "rc": "rc"}
_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}


class InvalidSpecifier(ValueError):
    """The text is not a PEP 440 version specifier that this check can read."""


@dataclass(frozen=True)
class _Version:
    release: tuple[int, ...]
    pre: tuple[str, int] | None = None
    post: int | None = None
    dev: int | None = None

    def key(self, width: int) -> tuple[object, ...]:
        """PEP 440's order: padded release, then pre (none sorts last, unless only dev),
        post (none first), dev (none last)."""
        release = self.release + (0,) * (width - len(self.release))
        if self.pre is None and self.post is None and self.dev is not None:
            pre: tuple[int, int] = (-1, 0)
        elif self.pre is None:
            pre = (3, 0)
        else:
            pre = (_PRE_ORDER[self.pre[0]], self.pre[1])
        post = -1 if self.post is None else self.post
        dev = sys.maxsize if self.dev is None else self.dev
        return (release, pre, post, dev)

    @property
    def is_prerelease(self) -> bool:
        return self.pre is not None or self.dev is not None


def running_python_version() -> str:
    """This interpreter's version as PEP 440 writes it (``3.11.7``, ``3.14.0rc1``)."""
    info = sys.version_info
    text = f"{info.major}.{info.minor}.{info.micro}"
    level = {"alpha": "a", "beta": "b", "candidate": "rc"}.get(info.releaselevel)
    return text if level is None else f"{text}{level}{info.serial}"


def python_satisfies(specifier: str, version: str) -> bool:
    """True when ``version`` (a plain interpreter version) meets every clause of ``specifier``;
    an empty specifier allows any. Raises InvalidSpecifier for text PEP 440 does not allow."""
    candidate = _parse(version, version)
    if specifier.strip() == "":
        return True
    for clause in specifier.split(","):
        match = _CLAUSE.match(clause)
        if match is None:
            raise InvalidSpecifier(f"{clause.strip()!r} is not a version specifier")
        if not _meets(candidate, version, match["op"], match["version"], clause.strip()):
            return False
    return True


def _parse(text: str, clause: str) -> _Version:
    match = _VERSION.match(text)
    if match is None:
        raise InvalidSpecifier(f"{clause!r}: {text!r} is not a version PEP 440 allows here")
    pre = None
    if match["pre_kind"] is not None:
        pre = (_PRE_KINDS[match["pre_kind"].lower()], _number(match["pre_n"] or "0", clause))
    post = None
    if match["post"] is not None:  # "1.0.post" is 1.0.post0
        post = _number(match["post_implicit"] or match["post_n"] or "0", clause)
    dev = None if match["dev"] is None else _number(match["dev_n"] or "0", clause)
    release = tuple(_number(part, clause) for part in match["release"].split("."))
    return _Version(release=release, pre=pre, post=post, dev=dev)


def _number(text: str, clause: str) -> int:
    """A version's number; one past Python's 4,300 digits is refused as unreadable (int()
    raised a bare ValueError, the file failing with words of no use)."""
    try:
        return int(text)
    except ValueError:
        raise InvalidSpecifier(f"{clause!r}: a number of {len(text):,} digits") from None


def _meets(candidate: _Version, raw: str, op: str, text: str, clause: str) -> bool:
    if op == "===":
        return raw.strip().lower() == text.lower()
    if text.endswith(".*"):
        if op not in ("==", "!="):
            raise InvalidSpecifier(f"{clause!r}: a .* prefix goes only with == or !=")
        prefix = _parse(text[:-2], clause)
        if prefix.pre is not None or prefix.post is not None or prefix.dev is not None:
            raise InvalidSpecifier(f"{clause!r}: a .* prefix is a release number only")
        width = max(len(prefix.release), len(candidate.release))
        padded = candidate.release + (0,) * (width - len(candidate.release))
        same = padded[: len(prefix.release)] == prefix.release
        return same if op == "==" else not same
    bound = _parse(text, clause)
    width = max(len(bound.release), len(candidate.release))
    mine, theirs = candidate.key(width), bound.key(width)
    if op == "==":
        return mine == theirs
    if op == "!=":
        return mine != theirs
    if op == "<=":
        return mine <= theirs
    if op == ">=":
        return mine >= theirs
    if op == "<":
        # "<3.12" does not let 3.12's own pre-releases in, unless it names one itself.
        same_release = candidate.key(width)[0] == bound.key(width)[0]
        if candidate.is_prerelease and not bound.is_prerelease and same_release:
            return False
        return mine < theirs
    if op == ">":
        # ">3.11" does not let 3.11's post-releases in, unless it names one itself.
        same_release = candidate.key(width)[0] == bound.key(width)[0]
        if candidate.post is not None and bound.post is None and same_release:
            return False
        return mine > theirs
    # "~=": at least this version, within its last release number but one.
    if len(bound.release) < 2:
        raise InvalidSpecifier(f"{clause!r}: ~= needs at least two release numbers (~=3.10)")
    kept = bound.release[:-1]
    padded = candidate.release + (0,) * (len(kept) - len(candidate.release))
    return mine >= theirs and padded[: len(kept)] == kept
