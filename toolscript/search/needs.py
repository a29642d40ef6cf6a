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

from toolscript.search.text import QUOTED, file_names, tokenize, without_data

__all__ = [
    "MAX_NEEDS",
    "PLACE_COORDINATES",
    "READ_FILE",
    "WRITE_FILE",
    "file_reading",
    "gives_coordinates",
    "is_file_need",
    "is_implied",
    "is_written_file",
    "split_needs",
]

MAX_NEEDS = 6  # more pieces than this are joined into the sixth
MAX_WRITTEN = 2  # files a request asks to write that each add a need (see _file_needs)
MAX_READ = 1  # files a split request names, not to write, that each add a need
MIN_WORDS = 2  # content words a piece needs to count as a request of its own

# Verbs that start a request, in the imperative (the base form: "sorted by size" and
# "including their sizes" describe the request before them, they ask for nothing new).
_VERBS = """
acknowledge activate add adjust aggregate analyse analyze annotate append apply approve archive
arrange ask assign attach audit back backup ban block book bookmark browse build buy calculate
call cancel capture change charge check clean clear click clone close collect combine comment
commit compare compile compose compress compute configure confirm connect convert copy count
crawl create crop deactivate debug decode delete deny deploy deposit describe design detect
determine diff disable discard disconnect dismiss download draft drag draw drop duplicate edit
email embed enable encode escalate estimate evaluate examine execute expand explain explore
export extract fetch fill filter find fix follow forecast fork format forward gather generate
geocode get give go grab grant graph hide highlight hover import include inform insert inspect
install invite invoice join keep kill label launch leave list load locate lock log look make
manage map mark measure mention merge message migrate monitor mount move mute navigate notify
obtain open optimize order organize outline paste pause pay pick pin ping plan play plot post
predict prepare present press preview print process produce provide provision publish pull
purchase push put query rate read rebase reboot receive recommend record redirect redo refresh
refund register reject reload remind remove rename render renew reopen reply report request
rerun reserve reset resize resolve restart restore resume retrieve retry return retweet revert
review revoke rewrite rollback rotate run save scale scan schedule scrape scroll search select
sell send set share show sign silence snooze sort split squash star start stop store submit
subscribe suggest summarise summarize switch sync tag take tell terminate throw toggle track
trade transcribe transfer transform translate trigger turn tweet unarchive unassign unblock
underline undo unhide uninstall unlock unmount unmute unpin unsubscribe update upgrade upload
upvote validate verify view visit visualize vote wait watch withdraw write zip
"""
VERBS = frozenset(_VERBS.split())

_ABBREVIATIONS = frozenset(["e.g.", "i.e.", "etc.", "vs.", "approx.", "no.", "mr.", "ms.", "dr."])
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
            if pieces and pieces[-1].split()[-1].lower() in _ABBREVIATIONS:
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
    """Words that can make a need (pasted data is gone by now: ``split_needs``)."""
    return len(tokenize(text))


def _shield(text: str) -> str:
    """What stands in brackets or quotes is one value ("Mozilla/5.0 (X11; Linux x86_64)",
    "entities (companies, people)"): its spaces and commas cut nothing."""
    return _BRACKETED.sub(
        lambda found: found.group(0).replace(",", "\x01").translate(_SPACES), text
    )


_SPACES = str.maketrans({" ": "\x00", "\t": "\x00", "\n": "\x00"})


def _unshield(text: str) -> str:
    return text.replace("\x00", " ").replace("\x01", ",")


# Verbs that put something into a file named after them ("save it to /root/cv.md", "generate
# a report in report.md", "a page saved at /srv/ai.html"), in any inflection.
_OUTPUT_VERB = re.compile(
    r"\b(?:sav(?:e|es|ed|ing)|writ(?:e|es|ing|ten)|wrote|export(?:s|ed|ing)?"
    r"|stor(?:e|es|ed|ing)|output(?:s|ted|ting)?|creat(?:e|es|ed|ing)|generat(?:e|es|ed|ing)"
    r"|draft(?:s|ed|ing)?|mak(?:e|es|ing)|made|produc(?:e|es|ed|ing)|dump(?:s|ed|ing)?"
    r"|put(?:s|ting)?|compos(?:e|es|ed|ing)|prepar(?:e|es|ed|ing)|record(?:s|ed|ing)?"
    r"|append(?:s|ed|ing)?)\b",
    re.IGNORECASE,
)
# ... and the word that says the file is where it goes, just before its name ("to", "in",
# "as", "at", "named": "save it to cv.md", not "compare old.txt and new.txt").
_DESTINATION = re.compile(
    r"\b(?:to|in|into|at|as|on|named|called)\s+(?:(?:a|an|the|new)\s+)*(?:file\s+)?"
    r"(?:(?:named|called)\s+)?$",
    re.IGNORECASE,
)


WRITE_FILE = "write file"  # a written file's need: "write file <name>"
READ_FILE = "read file"  # a file the request names otherwise: "read file <name>"

# The kind of document a file's extension names, in the words its tools use: a ".pptx" is
# written by a presentation tool and a ".pdf" read by a PDF reader, not a plain file writer
# or reader. Other files are plain files.
_FORMATS = {
    "ppt": "presentation",
    "pptx": "presentation",
    "odp": "presentation",
    "doc": "word document",
    "docx": "word document",
    "odt": "word document",
    "xls": "excel spreadsheet",
    "xlsx": "excel spreadsheet",
    "ods": "spreadsheet",
    "pdf": "pdf",
    **dict.fromkeys(("mp3", "wav", "flac", "ogg", "m4a", "aac"), "audio"),
    **dict.fromkeys(("png", "jpg", "jpeg", "gif", "webp", "bmp", "tiff"), "image"),
    **dict.fromkeys(("mp4", "mov", "avi", "mkv", "webm"), "video"),
}


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
    kind = _FORMATS.get(rest.rpartition(".")[2].lower())
    return f"{action} {kind} file" if kind else f"{action} file"


def _file_needs(needs: list[str]) -> list[str]:
    """A need of its own for each file the request asks to write ("write file <name>"), and,
    when the request asks for several things, for a file it names otherwise ("read file
    <name>").

    "Find today's challenge and generate a walkthrough in /root/md/daily.md" needs a tool
    that writes files, which neither the words nor the meaning of "generate a walkthrough"
    point to: the request names the file, not the tool. A need that names the file with
    an output verb before it ("save", "write", "generate", "made", ...) and a destination
    word just before it ("to", "in", "as", ...) adds one that does
    (LiveMCPBench whole tasks: a file writer is wanted by 18 of 94 and ranked 11th or lower
    in every ranking of 14 of them). A file named otherwise is read, edited or compared:
    "read the customers in /root/customers.csv and tell me Sheryl's email" needs a file
    reader that the clause about the customers does not find. A request for one thing is
    ranked whole for it ("read the paper in /root/WebArena.pdf" adds nothing).
    """
    written: list[str] = []  # the files' names, in the request's order
    read: list[str] = []
    for need in needs:
        for start, name in file_names(need):
            before = need[:start]
            named = written if _OUTPUT_VERB.search(before) and _DESTINATION.search(before) else read
            if name not in named:
                named.append(name)
    read = [name for name in read if name not in written][:MAX_READ] if len(needs) > 1 else []
    return [f"{WRITE_FILE} {name}" for name in written[:MAX_WRITTEN]] + [
        f"{READ_FILE} {name}" for name in read
    ]


def split_needs(query: str) -> list[str]:
    """The needs of ``query``, in its order, then a need for each file it asks to write and,
    if it asks for several things, for a file it names to read (``_file_needs``); ``[query]``
    itself when it asks for one thing."""
    # Pasted data is no need, and cutting 18,000 characters of it into sentences and
    # clauses, and looking for file names in it, took 9 ms.
    text = without_data(query)
    pieces = [
        _unshield(clause) for sentence in _sentences(_shield(text)) for clause in _clauses(sentence)
    ]
    needs: list[str] = []
    pending = ""  # a piece too short to stand alone, waiting to join the next one
    for piece in pieces:
        text = f"{pending} {piece}".strip() if pending else piece
        if _content_words(text) < MIN_WORDS:
            pending = text
            continue
        pending = ""
        needs.append(text)
    if pending:
        if needs:
            needs[-1] = f"{needs[-1]} {pending}"
        else:
            needs.append(pending)
    if len(needs) > MAX_NEEDS:
        needs = [*needs[: MAX_NEEDS - 1], " ".join(needs[MAX_NEEDS - 1 :])]
    files = _file_needs(needs or [text])
    if len(needs) <= 1 and not files:
        return [query]
    return [*(needs if len(needs) > 1 else [query]), *files]


# The need a request has when a tool it wants takes a latitude and longitude and the request
# names places ("park near the Forbidden City", "the weather in Paris"): a geocoder first.
PLACE_COORDINATES = "find the latitude and longitude coordinates of a place or address"
_COORDINATES = re.compile(
    r"-?\d{1,3}\.\d{2,}|\b(?:coordinates?|latitudes?|longitudes?|geocod\w*|lat|lon|lng)\b",
    re.IGNORECASE,
)


def gives_coordinates(query: str) -> bool:
    """Whether ``query`` gives coordinates ("48.8584, 2.2945") or is itself about them ("turn
    these coordinates into an address"): then no geocoder is implied."""
    return _COORDINATES.search(query) is not None


def is_implied(need: str) -> bool:
    """Whether ``need`` is one the request implies rather than asks: a file to write or read,
    or the coordinates of a place."""
    return is_file_need(need) or need == PLACE_COORDINATES
