"""How many JSON values a text holds, counted before it is decoded.

Decoded in Python, each JSON value is an object of its own (some 200 bytes of a dict's
entry, 56 of an empty dict): 8 MB of ``[{},{},...]`` is 186 MB once decoded. The places
that decode what a script or a server sends count its values first: its commas and
openers (``[``, ``{``) outside strings, so a CSV file quoted in one string value is one
value, not one per comma.

A JSON string never holds a raw line break (every decoder the gateway uses refuses one),
so a string is looked for within its line only: without that, one stray quote in a line no
decoder reads (an event stream's comment ``: "`` or ``id: "``) hid every value after it, as
if in a string.

Its cost is bounded whatever the text: it counts with ``bytes`` methods only (C loops), and
follows strings one by one only where they are few or long (``_followed``), which is where
commas in strings can be many (a CSV file in one string: 8 MB in some 30 ms). A text of many
short strings, or with a quote no line closes, is counted raw, its strings' commas and
openers too (at least as many: a list of 2 million short strings has that many values
anyway). Following each of 8 million quotes took a gateway's loop seconds and hundreds of
megabytes.
"""

from __future__ import annotations

import re

__all__ = ["ValueCount", "cut_nesting", "json_values", "nested_past"]


def json_values(data: bytes | bytearray) -> int:
    """About how many JSON values ``data`` holds (at least as many as a valid text does,
    less its strings): its commas and openers outside strings."""
    return ValueCount().feed(data)


class ValueCount:
    """Commas and openers outside strings in a text fed in pieces (a stream's chunks): a
    string or an escape cut between two pieces is followed across them."""

    def __init__(self) -> None:
        self.total = 0
        self._in_string = False
        self._escaped = False  # the last piece ended on a backslash in a string

    def feed(self, data: bytes | bytearray) -> int:
        """Counts ``data``, the text's next piece; the total so far. A text with no escape
        is read where it lies (a 50 MB answer is not copied to be counted)."""
        if not data:
            return self.total
        if self._escaped:
            self._escaped = False
            if data[:1] not in b"\r\n":  # an escaped line break: its line's end ends it
                data = data[1:]
        if b"\\" in data:  # an escaped backslash, then an escaped quote, never end a string
            data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
        quotes = data.count(b'"')
        if _followed(quotes, len(data)) and self._follow(data):
            return self.total
        self.total += _raw(data)  # its strings' commas too: at least as many
        line = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1  # a string ends with its line
        self._in_string = (self._in_string and line == 0) ^ (data.count(b'"', line) % 2 == 1)
        self._escaped = self._in_string and data.endswith(b"\\")
        return self.total

    def _follow(self, data: bytes | bytearray) -> bool:
        """Counts ``data`` string by string, unless a string in it holds a line break (no
        valid text's does): then False, having counted nothing."""
        found = 0
        in_string = self._in_string
        start = 0
        while start <= len(data):
            quote = data.find(b'"', start)
            end = len(data) if quote < 0 else quote
            if in_string:
                if data.find(b"\n", start, end) >= 0 or data.find(b"\r", start, end) >= 0:
                    return False
            else:
                found += (
                    data.count(b",", start, end)
                    + data.count(b"[", start, end)
                    + data.count(b"{", start, end)
                )
            if quote < 0:
                break
            in_string = not in_string
            start = quote + 1
        self.total += found
        self._in_string = in_string
        self._escaped = in_string and data.endswith(b"\\")
        return True


def _followed(quotes: int, size: int) -> bool:
    """Whether a piece's strings are followed one by one: a few, or long ones (a piece cut
    at each quote is that many objects at once)."""
    return quotes <= 4096 or quotes <= size // 256


def _raw(data: bytes | bytearray) -> int:
    return data.count(b",") + data.count(b"[") + data.count(b"{")


# A JSON string (its escapes followed) or a bracket: what ``cut_nesting`` steps through.
_STRING_OR_BRACKET = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[\[\]{}]')


def cut_nesting(data: bytes | bytearray, depth: int) -> bytes:
    """``data`` with each object or array nested deeper than ``depth`` levels given as an
    empty one (``{}``, ``[]``): a text every decoder can read (msgspec and Python's json
    stop near 1,000 levels). Linear in its strings and brackets (C's regex steps them)."""
    pieces: list[bytes] = []
    kept_from = 0
    level = 0
    for found in _STRING_OR_BRACKET.finditer(data):
        bracket = data[found.start()]
        if bracket == 0x22:  # a string: its brackets are text
            continue
        if bracket in b"[{":
            level += 1
            if level == depth + 1:
                pieces.append(bytes(data[kept_from : found.start()]))
                pieces.append(b"{}" if bracket == 0x7B else b"[]")
        else:
            if level == depth + 1:
                kept_from = found.end()
            level -= 1
    pieces.append(bytes(data[kept_from:]))
    return b"".join(pieces)


_STRING = re.compile(rb'"[^"\\\n]*(?:\\.[^"\\\n]*)*"')  # unrolled: no alternation per byte
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nested_past(data: bytes | bytearray, depth: int) -> bool:
    """Whether ``data`` nests objects or arrays deeper than ``depth`` levels (its strings'
    brackets are text). Its brackets alone, each pass drops every innermost pair, until
    none is left or ``depth + 1`` openers follow each other: at most ``depth`` passes of C
    loops, however large the text. A text whose brackets do not pair up is left to its
    decoder (False)."""
    if data.count(b"[") + data.count(b"{") <= depth:
        return False
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    run = re.compile(rb"[\[{]{%d}" % (depth + 1))
    for _ in range(depth):
        if run.search(brackets):
            return True
        inner = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if not inner or len(inner) == len(brackets):
            return False
        brackets = inner
    return True
