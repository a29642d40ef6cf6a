"""Parse JSON while remembering where every value and key stands in the text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

__all__ = [
    "JsonLocator",
    "JsonPath",
    "PositionedJson",
    "deepest_at",
    "format_path",
    "json_syntax_error",
    "parse_with_positions",
]

JsonPath = tuple[str | int, ...]

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}


@dataclass(frozen=True)
class PositionedJson:
    """A parsed document plus the text offsets of each value and object key."""

    text: str
    value: Any
    value_offsets: dict[JsonPath, int]
    key_offsets: dict[JsonPath, int]

    def line_col(self, path: JsonPath, *, key: bool = False) -> tuple[int, int]:
        """1-based line and column of the value (or its key) at ``path``.

        Falls back to the nearest ancestor that exists in the document.
        """
        offsets = self.key_offsets if key else self.value_offsets
        probe = path
        while probe not in offsets and probe:
            probe = probe[:-1]
            offsets = self.value_offsets
        offset = offsets.get(probe, 0)
        line = self.text.count("\n", 0, offset) + 1
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return line, col


def parse_with_positions(text: str) -> PositionedJson:
    """Parse ``text`` as JSON; raises ``json.JSONDecodeError`` like ``json.loads``."""
    value = json.loads(text)  # precise errors for invalid documents
    values: dict[JsonPath, int] = {}
    keys: dict[JsonPath, int] = {}

    def skip(i: int) -> int:
        match = _WHITESPACE.match(text, i)
        assert match is not None
        return match.end()

    def parse(i: int, path: JsonPath) -> tuple[Any, int]:
        i = skip(i)
        values[path] = i
        char = text[i]
        if char == "{":
            obj: dict[str, Any] = {}
            i = skip(i + 1)
            if text[i] == "}":
                return obj, i + 1
            while True:
                i = skip(i)
                key_at = i
                key, i = scanstring(text, i + 1)
                keys[(*path, key)] = key_at
                i = skip(i) + 1  # the colon
                obj[key], i = parse(i, (*path, key))
                i = skip(i)
                if text[i] == "}":
                    return obj, i + 1
                i += 1  # the comma
        if char == "[":
            arr: list[Any] = []
            i = skip(i + 1)
            if text[i] == "]":
                return arr, i + 1
            while True:
                item, i = parse(i, (*path, len(arr)))
                arr.append(item)
                i = skip(i)
                if text[i] == "]":
                    return arr, i + 1
                i += 1
        if char == '"':
            string, end = scanstring(text, i + 1)
            return string, end
        for literal, literal_value in _LITERALS.items():
            if text.startswith(literal, i):
                return literal_value, i + len(literal)
        match = _NUMBER.match(text, i)
        assert match is not None
        return json.loads(match.group()), match.end()

    parse(0, ())
    return PositionedJson(text=text, value=value, value_offsets=values, key_offsets=keys)


class JsonLocator:
    """``PositionedJson.line_col`` for a large valid document, without walking all of it:
    only the objects and arrays along the paths asked for are read member by member, each
    sibling skipped by the C decoder (``~/.claude.json`` is megabytes of history)."""

    _decoder = json.JSONDecoder()

    def __init__(self, text: str) -> None:
        self.text = text
        # container offset -> its members: key (or index) -> (key offset or None, value offset)
        self._members: dict[int, dict[str | int, tuple[int | None, int]]] = {}

    def line_col(self, path: JsonPath, *, key: bool = False) -> tuple[int, int]:
        """1-based line and column of the value (or its key) at ``path``; the nearest
        ancestor's value when ``path`` is not in the document."""
        offset = self._skip(0)
        found: tuple[int | None, int] | None = None
        for depth, part in enumerate(path):
            member = self._members_of(offset).get(part)
            if member is None:
                break
            offset = member[1]
            if depth == len(path) - 1:
                found = member
        if key and found is not None and found[0] is not None:
            offset = found[0]
        elif key and found is not None:
            offset = self._value_at(path[:-1])
        text = self.text
        return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1

    def _value_at(self, path: JsonPath) -> int:
        offset = self._skip(0)
        for part in path:
            member = self._members_of(offset).get(part)
            if member is None:
                break
            offset = member[1]
        return offset

    def _skip(self, i: int) -> int:
        match = _WHITESPACE.match(self.text, i)
        assert match is not None
        return match.end()

    def _members_of(self, offset: int) -> dict[str | int, tuple[int | None, int]]:
        if offset in self._members:
            return self._members[offset]
        text, members = self.text, {}
        opening = text[offset : offset + 1]
        if opening in ("{", "["):
            closing = "}" if opening == "{" else "]"
            i = self._skip(offset + 1)
            index = 0
            while i < len(text) and text[i] != closing:
                name: str | int = index
                key_at: int | None = None
                if opening == "{":
                    key_at = i
                    name, i = scanstring(text, i + 1)
                    i = self._skip(self._skip(i) + 1)  # past the colon
                members[name] = (key_at, i)  # a repeated key: the last, as json.loads keeps
                _, i = self._decoder.raw_decode(text, i)
                i = self._skip(i)
                if text[i : i + 1] == ",":
                    i = self._skip(i + 1)
                index += 1
        self._members[offset] = members
        return members


def format_path(path: JsonPath) -> str:
    """``('mcpServers', 'gh', 'args', 0)`` -> ``mcpServers.gh.args[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_$][\w$-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(root)"


def json_syntax_error(exc: json.JSONDecodeError) -> str:
    """``line:col: invalid JSON: what is wrong`` for the document ``json.loads`` refused
    with ``exc``. A comma after the last entry and a comment are named as such, at where
    they stand: json's own words for them ("Expecting property name enclosed in double
    quotes" at the closing brace) send a person looking for a missing quote."""
    text = exc.doc
    before = text[: exc.pos].rstrip(" \t\r\n")
    if text[exc.pos : exc.pos + 1] in ("}", "]") and before.endswith(","):
        line, col = _line_col(text, len(before) - 1)
        return f"{line}:{col}: invalid JSON: a comma after the last entry (JSON allows none)"
    if text.startswith(("//", "/*"), exc.pos):
        return f"{exc.lineno}:{exc.colno}: invalid JSON: a comment (JSON allows none)"
    if exc.msg.startswith("Unexpected UTF-8 BOM"):  # json's words name a Python codec
        return "1:1: invalid JSON: a byte order mark starts the file (save it as UTF-8 without one)"
    if text.startswith("'", exc.pos):
        return f"{exc.lineno}:{exc.colno}: invalid JSON: a single quote (JSON strings take double quotes)"
    if exc.msg == "Extra data":
        return (
            f"{exc.lineno}:{exc.colno}: invalid JSON: more text after the end of the document "
            "(the file holds one object)"
        )
    return f"{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def deepest_at(text: str, limit: int = 200) -> tuple[int, int]:
    """1-based line and column where ``[`` / ``{`` (or a TOML ``[``) first nest deeper than
    ``limit``, strings aside: where a document too deep to parse goes wrong; else 1:1."""
    depth = 0
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            end = text.find(char, i + 1)
            while end > 0 and text[end - 1] == "\\" and char == '"':
                end = text.find(char, end + 1)
            i = n if end < 0 else end + 1
            continue
        if char in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1
        elif char in "]}":
            depth -= 1
        i += 1
    return 1, 1
