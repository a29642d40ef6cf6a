"""Parse JSON while remembering where every value and key stands in the text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

__all__ = ["JsonPath", "PositionedJson", "format_path", "parse_with_positions"]

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
