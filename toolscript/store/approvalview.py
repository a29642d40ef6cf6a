"""How a call waiting for approval is shown to the person who approves it: its arguments
whole (pretty JSON) up to a generous size; past it shortened, never silently: each long
string keeps its start and its end with ``[… N characters not shown …]`` in place of its
middle, long lists and objects their first and last items, and the notice says so and
names the command that shows the whole (``toolscript runs show RUN_ID``).

Markers stand outside any JSON string (a string's text cannot hold a bare ``"``), so no
argument can forge one; control and invisible format characters (ESC, CR, bidi overrides,
zero-width spaces) are shown as escapes, so no argument can hide text on the terminal.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from toolscript.store.outputs import visible_controls

__all__ = [
    "SHOWN_WHOLE",
    "ShownArguments",
    "shortened_notice",
    "shown_arguments",
    "visible_text",
]

SHOWN_WHOLE = 8000  # characters of pretty JSON a prompt shows whole; longer is shortened
# Lines of pretty JSON a prompt shows whole: more scroll its first ones (the call's first
# arguments) off a terminal's screen above the question, 400 short list items of padding
# after the argument that matters; past them the view is shortened as past SHOWN_WHOLE.
SHOWN_LINES = 40


class Ends(NamedTuple):
    """How much of a long value a shortened view keeps, at each end."""

    string: int  # characters of a string's start, and as many of its end
    items: int  # first items of a list, and as many last ones
    members: int  # first members of an object, and as many last ones
    depth: int  # levels of nesting shown; deeper containers are a marker


# Tried in turn until the view fits; past the last, the view itself keeps its two ends.
SHORTENINGS = (Ends(300, 10, 25, 12), Ends(120, 4, 10, 8), Ends(40, 2, 4, 5))
# Invisible characters that move or hide text, shown as \uXXXX like the control
# characters: every format character of Unicode (bidi controls, zero-width, soft hyphen,
# the tag characters U+E0000.., an invisible twin of each ASCII character), line and
# paragraph separators, variation selectors (which hide bytes after a visible letter),
# the combining grapheme joiner, blank fillers, and lone surrogates (no terminal prints
# them).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f"
    "\ufeff\uffa0\ufff0-\ufffb\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


class ShownArguments(NamedTuple):
    """A call's arguments as shown: the text, whether it is shortened, and the size of the
    whole (UTF-8 bytes of its compact JSON)."""

    text: str
    shortened: bool
    size: int


def shown_arguments(
    arguments: Any, limit: int | None = SHOWN_WHOLE, *, one_line: bool = False
) -> ShownArguments:
    """``arguments`` (already redacted) as pretty JSON (``one_line``: compact, for a
    message) with every character visible: whole when it fits in ``limit`` characters
    (None: always whole), else shortened with markers saying how much is not shown where."""
    compact = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    size = len(compact.encode("utf-8", "surrogatepass"))
    whole = _visible(compact if one_line else json.dumps(arguments, ensure_ascii=False, indent=2))
    if limit is None or _fits(whole, limit):
        return ShownArguments(whole, False, size)
    text = whole
    for ends in SHORTENINGS:
        lines = _lines(arguments, ends, 0)
        joined = " ".join(line.lstrip(" ") for line in lines) if one_line else "\n".join(lines)
        text = _visible(joined)
        if _fits(text, limit):
            return ShownArguments(text, True, size)
    if len(text) > limit:
        half = max(1, limit // 2)
        hidden = len(text) - 2 * half
        gap = " " if one_line else "\n"
        text = (
            f"{text[:half]}{gap}[… {hidden} characters of this view not shown …]{gap}{text[-half:]}"
        )
    lines = text.split("\n")
    if len(lines) > SHOWN_LINES:
        half = SHOWN_LINES // 2
        hidden = len(lines) - 2 * half
        text = "\n".join(
            [*lines[:half], f"[… {hidden} lines of this view not shown …]", *lines[-half:]]
        )
    return ShownArguments(text, True, size)


def _fits(text: str, limit: int) -> bool:
    """Whether a view of ``text`` is short enough to show whole, in characters and lines."""
    return len(text) <= limit and text.count("\n") < SHOWN_LINES


def shortened_notice(shown: ShownArguments, run_id: str | None) -> str:
    """The sentence that goes with a shortened view: that it is, and where the whole is."""
    where = (
        f"`toolscript runs show {run_id}` shows them whole"
        if run_id
        else "`toolscript runs show RUN_ID` shows them whole"
    )
    return (
        f"the arguments are SHORTENED ({shown.size} bytes in all; each [… …] marks what is "
        f"not shown): {where}"
    )


def visible_text(text: str) -> str:
    """``text`` with its control and invisible characters as escapes (as in a view): for
    what an approval shows besides the arguments, such as a resource's URI in its name. On
    one line: a line break or tab the script put in a URI is an escape too, or lines of the
    script's own below the real first line would read as the rest of the question."""
    return _visible(text).replace("\n", "\\u000a").replace("\t", "\\u0009")


def _visible(text: str) -> str:
    text = visible_controls(text)
    return _INVISIBLE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    """A character as JSON escapes it (past U+FFFF: its surrogate pair, never ambiguous)."""
    code = ord(found[0])
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _scalar(value: Any, ends: Ends) -> str:
    if isinstance(value, str) and len(value) > 2 * ends.string + 40:
        start, end = value[: ends.string], value[-ends.string :]
        hidden = len(value) - 2 * ends.string
        return (
            f"{json.dumps(start, ensure_ascii=False)}[… {hidden} characters not shown …]"
            f"{json.dumps(end, ensure_ascii=False)}"
        )
    return json.dumps(value, ensure_ascii=False)


def _lines(value: Any, ends: Ends, depth: int) -> list[str]:
    """``value`` as lines of pretty JSON, shortened within ``ends`` (markers unquoted)."""
    if isinstance(value, dict) and value:
        if depth >= ends.depth:
            return [f"[… an object of {len(value)} members not shown …]"]
        items = list(value.items())
        body: list[list[str]] = []
        for key, member in _ends_of(items, ends.members, body, "members"):
            inner = _lines(member, ends, depth + 1)
            body.append([f"{_scalar(str(key), ends)}: {inner[0]}", *inner[1:]])
        return ["{", *_joined(body), "}"]
    if isinstance(value, list) and value:
        if depth >= ends.depth:
            return [f"[… a list of {len(value)} items not shown …]"]
        body = []
        for element in _ends_of(value, ends.items, body, "items"):
            body.append(_lines(element, ends, depth + 1))
        return ["[", *_joined(body), "]"]
    return [_scalar(value, ends)]


class _Gap(list[str]):
    """The marker line standing for items left out (a line, not a value: no comma)."""


def _ends_of(items: list[Any], keep: int, body: list[list[str]], what: str) -> Any:
    """The first and last ``keep`` of ``items``, with a marker put in ``body`` between."""
    if len(items) <= 2 * keep + 1:
        yield from items
        return
    yield from items[:keep]
    body.append(_Gap([f"[… {len(items) - 2 * keep} {what} not shown …]"]))
    yield from items[-keep:]


def _joined(body: list[list[str]]) -> list[str]:
    """Entries indented, a comma after each but the last (none after a marker)."""
    lines: list[str] = []
    for number, entry in enumerate(body):
        last = number == len(body) - 1
        for index, line in enumerate(entry):
            comma = (
                "," if index == len(entry) - 1 and not last and not isinstance(entry, _Gap) else ""
            )
            lines.append(f"  {line}{comma}")
    return lines
