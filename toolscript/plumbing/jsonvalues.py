"""How many JSON values a text holds, counted before it is decoded.

Decoded in Python, each JSON value is an object of its own (some 200 bytes of a dict's
entry, 56 of an empty dict): 8 MB of ``[{},{},...]`` is 186 MB once decoded. The places
that decode what a script or a server sends count its values first: its commas and
openers (``[``, ``{``) outside strings, so a CSV file quoted in one string value is one
value, not one per comma.

A JSON string never holds a raw line break (every decoder the gateway uses refuses one),
so a string is looked for within its line only: a quote with no end on its line ends at
the line's end. Without that, one stray quote in a line no decoder reads (an event
stream's comment ``: "`` or ``id: "``) hid every value after it, as if in a string. It
counts with ``bytes`` methods only (C loops): 12 MB in some 60 ms; a text with a line
break in what its quotes enclose (no valid text has one) with ``re``, 12 MB in 0.5 s.
"""

from __future__ import annotations

import re

__all__ = ["ValueCount", "json_values"]

# A whole string on one line; what follows an open string's quote up to its end or the
# line's; a backslash escapes any byte but a line break.
_STRING = re.compile(rb'"[^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*"')
_STRING_REST = re.compile(rb'[^"\\\r\n]*(?:\\[^\r\n][^"\\\r\n]*)*')


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
        """Counts ``data``, the text's next piece; the total so far."""
        data = bytes(data)
        if not self._feed_lines_whole(data):
            self._feed_by_line(data)
        return self.total

    def _feed_lines_whole(self, data: bytes) -> bool:
        """Counts ``data`` by its quotes, if no string in it holds a line break (a valid
        text's do not): ``bytes`` methods only. False, counting nothing, if one does."""
        if not data:
            return True
        if self._escaped:
            if data[:1] in b"\r\n":  # an escaped line break
                return False
            data = data[1:]
        # An escaped backslash, then an escaped quote, are never a string's end.
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
        parts = data.split(b'"')
        inside = b"".join(parts[::2] if self._in_string else parts[1::2])
        if b"\n" in inside or b"\r" in inside:
            return False
        in_string = self._in_string ^ (len(parts) % 2 == 0)
        outside = b"".join(parts[1::2] if self._in_string else parts[::2])
        self.total += outside.count(b",") + outside.count(b"[") + outside.count(b"{")
        self._in_string = in_string
        self._escaped = in_string and data.endswith(b"\\")
        return True

    def _feed_by_line(self, data: bytes) -> None:
        """Counts ``data`` line by line: a string with no end on its line ends there."""
        if self._in_string:
            data = self._finish_string(data)
            if self._in_string:
                return
        outside = _STRING.sub(b"", data)
        line = max(outside.rfind(b"\n"), outside.rfind(b"\r")) + 1
        quote = outside.find(b'"', line)
        if quote >= 0:  # a string the piece ends in (a stray quote's ends at its line's end)
            rest = outside[quote + 1 :]
            self._in_string = True
            self._escaped = (len(rest) - len(rest.rstrip(b"\\"))) % 2 == 1
            outside = outside[:quote]
        self.total += outside.count(b",") + outside.count(b"[") + outside.count(b"{")

    def _finish_string(self, data: bytes) -> bytes:
        """What follows the string the last piece ended in (``b""`` if it goes on)."""
        start = 0
        if self._escaped and data:
            self._escaped = False
            if data[:1] in b"\r\n":  # an escaped line break: no string goes on past it
                self._in_string = False
                return data
            start = 1
        end = _STRING_REST.match(data, start).end()  # type: ignore[union-attr]
        if end == len(data):
            return b""
        if data[end : end + 1] == b'"':
            self._in_string = False
            return data[end + 1 :]
        if end == len(data) - 1:  # a backslash, the piece's last byte
            self._escaped = True
            return b""
        self._in_string = False  # a line break (or a backslash before one) ends it
        return data[end:]
