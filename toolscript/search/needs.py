"""Splitting a request that asks for several things into its needs.

Agents often ask for a whole step at once: "find the open PRs that touch auth and post a
summary to Slack" needs a search tool and a messaging tool, and a single ranking of the
whole sentence finds one of them. ``split_needs`` cuts such a request where a new request
starts: at sentence ends, list items, sequence words ("then", "after that", "finally"),
and at "and" or a comma followed by a verb ("... and post ...", "..., summarizing ...").
A piece that says too little to be a request of its own (fewer than two content words)
stays with its neighbour, so "search and replace text" or "read and write files" remain
one need. A request that does not split is one need, ranked exactly as it always was.

General English only: nothing here is fitted to a tool catalogue or a query set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolscript.search.parameters import PARAMETERS, SearchParameters
from toolscript.search.text import (
    QUOTED,
    ToolDocument,
    file_names,
    statements,
    tokenize,
    without_data,
    without_negated,
)
from toolscript.search.words import ABBREVIATIONS, DOCUMENT_KINDS, OUTPUT_VERBS, VERBS

__all__ = [
    "IMPLIED_NEEDS",
    "PLACE_COORDINATES",
    "READ_FILE",
    "WRITE_FILE",
    "Implication",
    "Implied",
    "ImpliedNeed",
    "file_reading",
    "gives_coordinates",
    "implied_by",
    "is_file_need",
    "is_implied",
    "is_written_file",
    "split_needs",
    "tells_context",
]

# Sentence ends (a stop, question or exclamation mark, or a semicolon, then a space) and line
# breaks; list markers ("1.", "2)", "-", "*") at a line's start are dropped with them.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\s*\n\s*(?:[-*\u2022]|\d+[.)])?\s*")
_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|" + QUOTED)  # and quoted values (text.QUOTED)
_NUMBERED = re.compile(r"(?:^|\s)\(?\d+[.)]\s+(?=[A-Za-z])")
_SEQUENCE = re.compile(
    r"\s*,?\s*\b(?:and\s+then|and\s+also|after\s+that|afterwards|and\s+finally|finally|then|"
    r"once\s+done)\b,?\s*",
    re.IGNORECASE,
)
# "and" or "plus", or a comma (with or without them), courtesy words, then the word that may
# start a request ("..., and please help me save it").
_JOINT = re.compile(
    r"\s*(?:,\s*(?:(?:and|plus)\s+)?|\s+(?:and|plus)\s+)"
    r"(?:(?:please|kindly|help\s+me|can\s+you|could\s+you)\s+)*(?=([A-Za-z]+))",
    re.IGNORECASE,
)


def _is_verb(word: str) -> bool:
    return word.lower() in VERBS


def _sentences(text: str) -> list[str]:
    pieces: list[str] = []
    for part in _SENTENCE_END.split(_NUMBERED.sub("\n", text)):
        part = part.strip()
        if part:
            # "e.g. x" and "etc. and" do not end a sentence: join such a piece to the next.
            if pieces and pieces[-1].split()[-1].lower() in ABBREVIATIONS:
                pieces[-1] = f"{pieces[-1]} {part}"
            else:
                pieces.append(part)
    return pieces


def _clauses(sentence: str) -> list[str]:
    """A sentence cut at sequence words, and at "and"/commas that a verb follows."""
    clauses: list[str] = []
    for part in _SEQUENCE.split(sentence):
        start = 0
        for joint in _JOINT.finditer(part):
            if _is_verb(joint.group(1)):
                clauses.append(part[start : joint.start()])
                start = joint.end()
        clauses.append(part[start:])
    return [clause.strip(" ,;:") for clause in clauses if clause.strip(" ,;:")]


def _content_words(text: str) -> int:
    """Words that can make a need (pasted data is gone by now: ``split_needs``); a negated
    word makes none ("don't delete it, archive it" is one need)."""
    return len(tokenize(without_negated(text)))


def _shield(text: str) -> str:
    """What stands in brackets or quotes is one value ("Mozilla/5.0 (X11; Linux x86_64)",
    "entities (companies, people)"), and so is a SQL or Cypher statement ("SELECT id, name,
    email FROM users": text.statements): its spaces and commas cut nothing."""
    for start, end, _ in reversed(statements(text)):
        text = f"{text[:start]}{_one_value(text[start:end])}{text[end:]}"
    return _BRACKETED.sub(lambda found: _one_value(found.group(0)), text)


def _one_value(text: str) -> str:
    return text.replace(",", "\x01").translate(_SPACES)


_SPACES = str.maketrans({" ": "\x00", "\t": "\x00", "\n": "\x00"})


def _unshield(text: str) -> str:
    return text.replace("\x00", " ").replace("\x01", ",")


# Verbs that put something into a file named after them (words.OUTPUT_VERBS).
_OUTPUT_VERB = re.compile(rf"\b(?:{'|'.join(OUTPUT_VERBS)})\b", re.IGNORECASE)
# ... and the word that says the file is where it goes, just before its name ("to", "in",
# "as", "at", "named": "save it to cv.md", not "compare old.txt and new.txt").
_DESTINATION = re.compile(
    r"\b(?:to|in|into|at|as|on|named|called)\s+(?:(?:a|an|the|new)\s+)*(?:file\s+)?"
    r"(?:(?:named|called)\s+)?$",
    re.IGNORECASE,
)


WRITE_FILE = "write file"  # a written file's need: "write file <name>"
READ_FILE = "read file"  # a file the request names otherwise: "read file <name>"
# The need a request has when a tool it wants takes a latitude and longitude and the request
# names places ("park near the Forbidden City", "the weather in Paris"): a geocoder first.
PLACE_COORDINATES = "find the latitude and longitude coordinates of a place or address"
_COORDINATES = re.compile(
    r"-?\d{1,3}\.\d{2,}|\b(?:coordinates?|latitudes?|longitudes?|geocod\w*|lat|lon|lng)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Implication:
    """What a rule of ``IMPLIED_NEEDS`` reads: the request, the needs it asks for (its pieces:
    one when it asks for one thing), and the tools ranked first for it (none yet for a rule
    that does not read the ranking)."""

    query: str
    asked: list[str]
    first: Sequence[ToolDocument]
    parameters: SearchParameters


@dataclass(frozen=True)
class Implied:
    """A need a request implies, and the servers whose tools it prefers (engine.py counts
    their scores ``same_server`` times: the tool that implied it reads their output)."""

    text: str
    prefer: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ImpliedNeed:
    """A kind of need a request has without asking for it: ``find`` gives a request's needs
    of this kind, ``owns`` tells them from asked ones, and ``reading`` is how the model reads
    one (the words that say what is needed: their vector is computed once and kept). A rule
    that ``reads_ranking`` is applied after the request's first ranking, to its first hits;
    the others with the request's own needs, before it."""

    name: str
    reads_ranking: bool
    find: Callable[[Implication], list[Implied]]
    owns: Callable[[str], bool]
    reading: Callable[[str], str]


def is_written_file(need: str) -> bool:
    """Whether ``need`` is the need of a file the request asks to write (``_file_needs``)."""
    return need.startswith(f"{WRITE_FILE} ")


def is_file_need(need: str) -> bool:
    """Whether ``need`` is a file's need (``_file_needs``): one to write or one to read."""
    return is_written_file(need) or need.startswith(f"{READ_FILE} ")


def file_reading(need: str) -> str:
    """How the model reads a file's need: what is done ("write file", "read file") with the
    kind of document its extension names ("write presentation file" for "slides.pptx",
    "read pdf file"); the file's own name tells the model nothing."""
    action, _, rest = need.partition(" file ")
    kind = DOCUMENT_KINDS.get(rest.rpartition(".")[2].lower())
    return f"{action} {kind} file" if kind else f"{action} file"


def _file_needs(request: Implication) -> list[Implied]:
    """A need of its own for each file the request asks to write ("write file <name>"), and,
    when the request asks for several things, for a file it names otherwise ("read file
    <name>").

    "Find today's challenge and generate a walkthrough in /root/md/daily.md" needs a tool
    that writes files, which neither the words nor the meaning of "generate a walkthrough"
    point to: the request names the file, not the tool. A need that names the file with
    an output verb before it ("save", "write", "generate", "made", ...) and a destination
    word just before it ("to", "in", "as", ...) adds one that does (bench/NOTES.md: how
    often whole tasks want a file writer that no ranking finds). A file named otherwise is read, edited or compared:
    "read the customers in /root/customers.csv and tell me Sheryl's email" needs a file
    reader that the clause about the customers does not find. A request for one thing is
    ranked whole for it ("read the paper in /root/WebArena.pdf" adds nothing).
    """
    needs = request.asked
    written: list[str] = []  # the files' names, in the request's order
    read: list[str] = []
    for need in needs:
        for start, name in file_names(need):
            before = need[:start]
            named = written if _OUTPUT_VERB.search(before) and _DESTINATION.search(before) else read
            if name not in named:
                named.append(name)
    read = [name for name in read if name not in written][: request.parameters.max_read]
    read = read if len(needs) > 1 else []
    return [
        *(Implied(f"{WRITE_FILE} {name}") for name in written[: request.parameters.max_written]),
        *(Implied(f"{READ_FILE} {name}") for name in read),
    ]


def gives_coordinates(query: str) -> bool:
    """Whether ``query`` gives coordinates ("48.8584, 2.2945") or is itself about them ("turn
    these coordinates into an address"): then no geocoder is implied."""
    return _COORDINATES.search(query) is not None


def _place_coordinates(request: Implication) -> list[Implied]:
    """A geocoder's need, when a tool among the first ``implied_within`` hits takes a latitude
    and longitude and the request names places instead ("show me where to park near the
    Forbidden City" needs the Forbidden City's coordinates first); it prefers the servers of
    those tools (a geocoder gives coordinates as its own server's tools read them)."""
    takers = [
        document
        for document in request.first[: request.parameters.implied_within]
        if document.takes_coordinates
    ]
    if not takers or gives_coordinates(request.query):
        return []
    return [Implied(PLACE_COORDINATES, frozenset(document.server for document in takers))]


IMPLIED_NEEDS = (
    ImpliedNeed("files", False, _file_needs, is_file_need, file_reading),
    ImpliedNeed(
        "place coordinates",
        True,
        _place_coordinates,
        lambda need: need == PLACE_COORDINATES,
        lambda need: need,
    ),
)


def implied_by(need: str) -> ImpliedNeed | None:
    """The rule of ``IMPLIED_NEEDS`` that ``need`` comes from; None for a need asked for."""
    return next((rule for rule in IMPLIED_NEEDS if rule.owns(need)), None)


def is_implied(need: str) -> bool:
    """Whether ``need`` is one the request implies rather than asks: a file to write or read,
    or the coordinates of a place."""
    return implied_by(need) is not None


# A sentence that tells the request's context rather than asks for anything: "We shipped 2.4
# of the app yesterday and crash reports are climbing. I need to see which errors are new",
# "I'm preparing the board deck. I'd like a line chart of monthly revenue". As a need of its
# own, its best hit took a first place (get_board_visualization for the board deck). Such a
# sentence opens with a subject (a pronoun, a possessive, an article: not an imperative's
# verb), holds a finite verb ("is", "was", "didn't", "we're", "flagged"), and has no word
# that asks ("need", "want", "please", "should", "can you", a question mark). It is no need
# when another piece of the request asks; the request whole is ranked with it all the same.
# A terse request ("my open PRs", "the weather in paris") has no finite verb: it asks.
_SUBJECT = re.compile(
    r"\s*(?:i|i'm|im|i've|ive|we|we're|we've|our|my|he|she|they|it|it's|its|their|his|her"
    r"|there|the|a|an|this|that)\b",
    re.IGNORECASE,
)
_FINITE = re.compile(
    r"\b(?:am|is|are|was|were|has|have|had|do|does|did|don'?t|doesn'?t|didn'?t"
    r"|[a-z]+'(?:s|re|ve|m)|[a-z]{3,}ed)\b",
    re.IGNORECASE,
)
_ASKS = re.compile(
    r"\?|\b(?:please|need|needs|want|wants|would\s+like|i'?d\s+like|can\s+you|could\s+you"
    r"|help\s+me|let'?s|should|must|ha(?:ve|s)\s+to)\b",
    re.IGNORECASE,
)


def tells_context(piece: str) -> bool:
    """Whether ``piece`` of a request tells its context rather than asks (see ``_SUBJECT``)."""
    return bool(_SUBJECT.match(piece) and _FINITE.search(piece) and not _ASKS.search(piece))


def split_needs(query: str, parameters: SearchParameters = PARAMETERS) -> list[str]:
    """The needs of ``query``, in its order, then those it implies (``IMPLIED_NEEDS`` that
    read the request alone: a file it asks to write, ...); ``[query]`` itself when it asks for
    one thing and implies nothing. A piece that tells the request's context is no need when
    another asks (``tells_context``); a file it names is implied all the same."""
    pieces = _asked(query, parameters)
    request = Implication(query, pieces, (), parameters)
    implied = [
        need.text for rule in IMPLIED_NEEDS if not rule.reads_ranking for need in rule.find(request)
    ]
    asked = [piece for piece in pieces if not tells_context(piece)] or pieces
    if len(asked) <= 1 and not implied:
        return [query]
    return [*(asked if len(asked) > 1 else [query]), *implied]


def _asked(query: str, parameters: SearchParameters) -> list[str]:
    """The pieces of ``query`` that ask for something each (at least one)."""
    # Pasted data is no need (and cutting it into sentences and clauses costs).
    text = without_data(query)
    pieces = [
        _unshield(clause) for sentence in _sentences(_shield(text)) for clause in _clauses(sentence)
    ]
    needs: list[str] = []
    pending = ""  # a piece too short to stand alone, waiting to join the next one
    pending_words = 0  # its words, counted once (a recount at each piece was quadratic)
    for piece in pieces:
        text = f"{pending} {piece}".strip() if pending else piece
        words = pending_words + _content_words(piece)
        if words < parameters.min_words:
            pending, pending_words = text, words
            continue
        pending, pending_words = "", 0
        needs.append(text)
    if pending:
        if needs:
            needs[-1] = f"{needs[-1]} {pending}"
        else:
            needs.append(pending)
    most = parameters.max_needs
    if len(needs) > most:
        needs = [*needs[: most - 1], " ".join(needs[most - 1 :])]
    return needs or [text]
