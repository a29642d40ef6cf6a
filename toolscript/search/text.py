"""Turning tools and queries into words: identifier splitting, stop words, light stemming."""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from dataclasses import dataclass
from typing import Any

from toolscript.search.parameters import PARAMETERS, SearchParameters
from toolscript.search.words import (
    BARE_FILE_EXTENSIONS,
    DEPRECATION_MARKS,
    DISPLAY_VERBS,
    DOCUMENT_KINDS,
    DONE_VERBS,
    EARLIER_WORDS,
    FOREIGN_WORDS,
    IDIOMS,
    LATITUDE_NAMES,
    LONGITUDE_NAMES,
    NARRATED_ADVERBS,
    NARRATORS,
    NEGATION_FILLERS,
    PAST_FORMS,
    PHRASAL_VERBS,
    PREPOSITIONS,
    RESULT_NOUNS,
    SHORT_FORMS,
    STATEMENT_READINGS,
    STOP_WORDS,
    SUFFIXES,
    SYNONYM_GROUPS,
    VERBS,
    WISH_WORDS,
)

__all__ = [
    "QUOTED",
    "ToolDocument",
    "added_new",
    "argument_names",
    "changes_one",
    "channels_read",
    "code_names",
    "document_for",
    "documents_for",
    "error_text_read",
    "expand_abbreviations",
    "file_names",
    "first_step_read",
    "foreign_words_read",
    "joined_words",
    "keyword_query",
    "mostly_cjk",
    "name_words",
    "named_one",
    "named_tool_tier",
    "phrasal_verbs_read",
    "plural",
    "plural_name_words",
    "plural_words",
    "says_first_step",
    "says_steps_in_order",
    "semantic_query",
    "split_identifier",
    "statements",
    "stem",
    "tokenize",
    "verbless_plural",
    "without_done_step",
    "without_negated",
    "without_open_state",
    "without_provenance",
    "without_signature_verbs",
]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
# Han, kana and hangul are written without spaces: a run of them becomes overlapping character
# pairs (the usual unit for keyword search in those scripts), so "推荐菜谱" finds "推荐" and "菜谱".
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_WORD = re.compile(rf"[A-Za-z0-9]+|[{_CJK}]+")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_CJK_RUN = re.compile(rf"[{_CJK}]+")


# Literal values in a request say what an argument looks like, not which tool is wanted:
# an embedding of "set the user agent to Mozilla/5.0 (X11; Linux x86_64) ..." is mostly
# about the string. The semantic half of search reads the request without them (a URL,
# an e-mail address and a path keep a word that says what they were); keywords see all.
_URL = re.compile(r"\b(?:https?|ftp|wss?)://\S+|\bwww\.\S+", re.IGNORECASE)
# An address starts where a run of its characters does: tried from inside one, each start
# scanned the run again (8,000 characters of "a.a.a." took 0.13 s, now 0.1 ms).
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+\.[\w.-]+\b")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/(?:[\w.\-~]+/)*([\w.\-~]+)")
_CSS_CLASS = re.compile(r"(?<!\S)\.[A-Za-z_][\w-]*")
# An IPv4 address, with its prefix length or port if any: the model reads "IP address" ("what
# host is 10.20.3.15" asks for a host by IP) where it reads nothing of the digits.
_IP_ADDRESS = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?:/\d{1,2}|:\d{1,5})?(?![\w.])")
# A channel named as chat writes it ("post the notes in #general"): its name is a value, what
# it says is "a channel" (the name's own words pulled other tools: "#incidents" found incident
# reports); said once, where the request names the chat or a channel already ("post it to
# #general on slack": a second "channel" there ranked every channel tool of the chat above the
# request's other need). Not in a request about a page's elements, where "#main-nav" is a CSS
# selector; nor "#123" (an issue or pull request number).
_CHANNEL = re.compile(r"(?<![\w&#/])#[A-Za-z][\w-]*")
_SELECTOR_TALK = re.compile(r"\b(?:selector|element|css|iframe|identified|id|dom)\b", re.I)
_CHAT_SAID = re.compile(r"\b(?:channels?|slack|discord|mattermost|teams)\b", re.I)


_VERSION_BEFORE = re.compile(r"(?:\bversion|\brelease|\bv)\s*$", re.IGNORECASE)


def _ip_address(found: re.Match[str]) -> str:
    """An IPv4 address as the model reads it; a version of four numbers ("v1.2.3.4") is
    none."""
    if _VERSION_BEFORE.search(found.string, 0, found.start()):
        return found.group(0)
    return " IP address "


def channels_read(text: str) -> str:
    """``text`` with each chat channel it names ("#general") read as the word "channel", or
    as nothing where the request says where already (``_CHAT_SAID``)."""
    if _SELECTOR_TALK.search(text):
        return text
    return _CHANNEL.sub("" if _CHAT_SAID.search(text) else "channel", text)


_NUMBERED_VALUE = re.compile(r"(?<!\S)\S*\d[./:;]\S*")  # versions, coordinates, times, ids
# Pasted data (base64, digests, keys): a long run of letters, digits and "+/=_-" with a digit
# in it. Neither half reads it: its fragments match no tool's words, and tokenizing a pasted
# image costs keyword search more than a search (bench/NOTES.md).
_DATA = re.compile(r"[A-Za-z0-9+/=_-]{64,}")
# A quoted value ("rename issue 88 to 'crash on startup'"). Single quotes open and close
# outside words: the apostrophes of "I'm" and "what's" quote nothing (read as quotes, they
# joined "I'm planning ... what's" into one value).
QUOTED = r"\"[^\"]*\"|(?<![A-Za-z0-9])'[^']*'(?![A-Za-z0-9])"
_QUOTED = re.compile(QUOTED)
# The words a request dictates ("leave a comment on issue 17 saying I'm looking into it",
# "commit with message fix typo"): what to send, not which tool sends it. To the end of
# the clause: a sentence or comma, or "and", "then" or "but", where another request may start.
_MESSAGE = re.compile(
    r"\s(?:saying|that\s+says|which\s+says|with\s+(?:the\s+)?(?:message|text|body|caption))\b"
    r".*?(?=[.!?;,](?:\s|$)|\s(?:and|then|but)\b|$)",
    re.IGNORECASE | re.DOTALL,
)


# A statement of SQL or Cypher typed as the request (words.STATEMENT_READINGS): its keywords
# in capitals, or in lower case where the syntax around them is SQL's own ("select * from",
# "select count(" ... "from", "insert into t (", "delete from t where", "update t set c =");
# "select the second option from the list" is English.
_SQL = re.compile(
    r"(?<![\w.])(?:"
    r"(?P<select>SELECT)\s[^;]*?\sFROM\s|(?P<with>WITH)\s+\w+\s+AS\s*\("
    r"|(?P<insert>INSERT)\s+INTO\s|(?P<update>UPDATE)\s+[\w.\"`]+\s+SET\s"
    r"|(?P<delete>DELETE)\s+FROM\s|(?P<create>CREATE)\s+(?:TABLE|VIEW|INDEX)\s"
    r"|(?P<alter>ALTER)\s+TABLE\s|(?P<drop>DROP)\s+(?:TABLE|VIEW|INDEX)\s"
    r"|(?i:(?P<lselect>select)\s+(?:\*|count\s*\(|distinct\s)[^;]*?\sfrom\s"
    r"|(?P<linsert>insert)\s+into\s+[\w.\"`]+\s*(?:\(|values\b)"
    r"|(?P<ldelete>delete)\s+from\s+[\w.\"`]+\s+where\s"
    r"|(?P<lupdate>update)\s+[\w.\"`]+\s+set\s+[\w.\"`]+\s*=)"
    r")"
)
# Cypher: a node pattern followed by a relationship or a clause ("MATCH (n:Person) RETURN n",
# "match (a)-[:KNOWS]->(b)"), or CREATE of a labelled node.
_CYPHER = re.compile(
    r"(?<![\w.])(?:(?i:(?:optional\s+)?match|merge)\s*\([^()]*\)\s*"
    r"(?:<?-|(?i:return|where|set|delete|detach|with)\b|,)|CREATE\s*\(\s*\w*\s*:\s*\w+)"
)
_CYPHER_WRITES = re.compile(r"\b(?:CREATE|MERGE|SET|DELETE|REMOVE)\b", re.IGNORECASE)
# ... to a semicolon, the line's end, the next sentence or a next request ("..., then post
# it", "... and email it": "and" and a verb), less a last "on postgres" or "in the analytics
# database": where to run it is part of the request.
_STATEMENT_END = re.compile(
    r"\s*(?:[;\n]|,?\s+(?:and\s+)?then\b|\.\s+(?=[A-Z])|,?\s+and\s+(?P<verb>[A-Za-z]+))",
    re.IGNORECASE,
)
_WHERE_RUN = re.compile(
    r"\s+(?:on|in|against|using|via)\s+(?:the\s+|my\s+|our\s+)?[A-Za-z][\w-]*"
    r"(?:\s+(?:database|db|server|instance|cluster))?\s*[.?!]?\s*$",
    re.IGNORECASE,
)


def statements(text: str) -> list[tuple[int, int, str]]:
    """The SQL and Cypher statements ``text`` is or holds: where each starts and ends, and
    what it reads as (words.STATEMENT_READINGS)."""
    found: list[tuple[int, int, str]] = []
    start = 0
    while True:
        sql, cypher = _SQL.search(text, start), _CYPHER.search(text, start)
        first = min((m for m in (sql, cypher) if m), key=lambda m: m.start(), default=None)
        if first is None:
            return found
        end = next(
            (
                stop.start()
                for stop in _STATEMENT_END.finditer(text, first.end())
                if stop["verb"] is None or stop["verb"].lower() in VERBS
            ),
            len(text),
        )
        where = _WHERE_RUN.search(text, first.end(), end)
        end = where.start() if where else end
        body = text[first.start() : end]
        if first is sql:
            keyword = next(name for name, value in first.groupdict().items() if value)
            key = ("sql", keyword.removeprefix("l"))
        else:
            key = ("cypher", "write" if _CYPHER_WRITES.search(body) else "read")
        found.append((first.start(), end, STATEMENT_READINGS[key]))
        start = max(end, first.end())


def read_statements(text: str) -> str:
    """``text`` with each statement it holds read as words (see ``statements``)."""
    for start, end, reading in reversed(statements(text)):
        text = f"{text[:start]}{reading}{text[end:]}"
    return text


# A request that says what it does not want ("don't merge yet, just ask carol to review PR
# 90", "not the logs, the events of pod api-7f9", "deactivate, don't delete, the app",
# "archive the note instead of deleting it"): the negated word names a sibling of the tool
# asked for, and both halves read it as asked (merge_pull_request, get_logs, delete_* ranked
# first). The word a negation governs is not read: after "don't", "do not", "never" or "no
# need to" opening a clause or after "I" / "we" ("I don't want to change anything": the
# word after "want to" or "need"); after "not" and an article or possessive ("...but not the
# whole browser", "reply in the thread, not as a new message"); after "instead of", "rather
# than", "except", "other than"; the "-ing" verb after "without" ("preview the page without
# publishing it"; "users without MFA" asks for MFA all the same); and "no" after a comma
# ("plain text, no html"). One word, the first after articles and possessives
# (words.NEGATION_FILLERS): "not a new container, show the running ones" still asks about
# containers. A negation that describes is left as it is: "why is the pod not starting",
# "what files did I change but not stage" (the unstaged changes: ranked 4th with "stage"
# dropped, 1st with it read).
_FILLERS = rf"\s+(?:(?:{'|'.join(NEGATION_FILLERS)})\s+)*"
_DETERMINER = r"(?:a|an|the|any|its|their|his|her|my|our|your|as)\b"
_NEGATED_WORD = r"[A-Za-z][\w\u2019'-]*"
_NEGATED = re.compile(
    "|".join(
        (
            # opening a clause and ended by a comma, a colon or a dash, the asked-for thing
            # after it: "not the event logs, the triggers themselves", "not ZIA: create a ZTW
            # IP group" (at most five words; not where what follows is a part of the negated
            # thing or points back at it: "not the whole file, just its size", "not a new
            # container, show the ones running")
            rf"(?P<opening>^\s*|[,;:.!?(\u2014\u2013]\s*)not{_FILLERS}{_NEGATED_WORD}"
            rf"(?:\s+{_NEGATED_WORD}){{0,4}}(?=\s*(?:[,;:\u2014\u2013]|-\s)"
            r"(?!\s*(?:just|only)\b)(?![^,;.!?\u2014\u2013]*\bones?\b))",
            # a contrast closing a clause: "list the branches, not tags", "get the page's
            # HTML, not the visible text", "the group itself, not the list of all groups":
            # every word to the clause's end (at most five)
            rf"(?P<contrast>[,;]\s*)not{_FILLERS}{_NEGATED_WORD}(?:\s+{_NEGATED_WORD}){{0,4}}"
            r"(?=\s*(?:[,;.!?)\u2014\u2013]|$))",
            # opening a clause: what the lead is, is kept
            r"(?P<lead>^|[,;:.!?(]\s*|\b(?:but|and|so|please|just|i|we)\s+)"
            rf"(?:don[\u2019']?t|do\s+not|never|no\s+need\s+to){_FILLERS}[A-Za-z][\w-]*",
            rf"\bnot\s+{_DETERMINER}{_FILLERS}[A-Za-z][\w-]*",
            rf"\b(?:instead\s+of|rather\s+than|except(?:\s+for)?|other\s+than){_FILLERS}"
            r"[A-Za-z][\w-]*",
            r"\bwithout\s+[A-Za-z]+ing\b",
            r"(?P<comma>[,;:]\s*|\bbut\s+)no\s+[A-Za-z][\w-]*",
        )
    ),
    re.IGNORECASE,
)


# A word every match of ``_NEGATED`` holds: a request without one (most) is not scanned.
_NEGATION_MARK = re.compile(
    r"\b(?:don|dont|do|never|not|no|instead|rather|except|other|without)\b", re.I
)


def without_negated(text: str) -> str:
    """``text`` less each word a negation governs, and the negation (see ``_NEGATED``); as it
    is when nothing else would be left ("do not disturb")."""
    if not _NEGATION_MARK.search(text):
        return text
    kept = _NEGATED.sub(
        lambda found: (
            f"{found['opening'] or found['contrast'] or found['lead'] or found['comma'] or ''} "
        ),
        text,
    )
    return kept if kept == text or tokenize(kept) else text


# A step the request says is done before the step it asks for: "task marked done, now approve
# it", "got the okta group id, now add carol to it", "audio loaded, now the beat positions", "I
# have the pod name now, forward 8080 to it". Its verbs name the tool already used
# (mark_task_done, load, new_game for "new game started"): they are dropped, and what the step
# names is kept ("the dataset id on data.gov" says which server). The step opens the request
# and ends at a comma, semicolon or colon before "now", or at "now" before one.
_DONE_STEP = re.compile(
    r"\s*(?P<step>(?:[^,;:.!?]|\.(?=\w))+?)(?:\s*[,;:]\s*now\b|(?<!\bright)\s+now\s*[,;:])", re.I
)
_DONE_VERB = re.compile(rf"\b(?:[A-Za-z]{{3,}}ed|{'|'.join(DONE_VERBS)})\b", re.IGNORECASE)


# A plan's step says its number, or that it is the next ("step 2 of the plan: I have the nct id,
# now get the trial's protocol", "after loading the audio file, step 2: get its duration"): the
# label hid a done step from ``_DONE_STEP`` (which opens the request), and says nothing a tool
# does. It opens the request or follows a comma, semicolon or colon, and ends at one (or "is":
# "step 3 is listing the webhooks"). A step opening with "after", "once", "now that" or
# "having" and ended by a comma, semicolon or colon is done too ("after creating the deployment,
# scale it"): its "-ing" verbs are dropped as well (the tool used: create_deployment).
_STEP_LABEL = re.compile(
    r"(?:^|(?<=[,;:]))\s*(?:(?:the\s+)?(?:next|first|last|final)\s+step"
    r"|step\s+\d+(?:\s+of\s+(?:\d+|the\s+plan))?)(?:\s*[:,;.)-]|\s+is\b)\s*",
    re.IGNORECASE,
)
_AFTER_STEP = re.compile(
    r"\s*(?:after|once|now\s+that|having)\s+(?P<step>[^,;:.!?]+?)\s*[,;:]", re.IGNORECASE
)
_DOING_VERB = re.compile(r"\b[A-Za-z]{3,}ing\b", re.IGNORECASE)


def without_done_step(text: str) -> str:
    """``text`` less a plan's step label (``_STEP_LABEL``) and the verbs of a step it says is
    done before the one it asks for (``_DONE_STEP``, ``_AFTER_STEP``); as it is when nothing
    else would be left."""
    unlabelled = _STEP_LABEL.sub(" ", text) if "step" in text.lower() else text
    found = _DONE_STEP.match(unlabelled)
    if found is not None:
        kept = f"{_DONE_VERB.sub(' ', found['step'])}{unlabelled[found.end('step') :]}"
    elif (after := _AFTER_STEP.match(unlabelled)) is not None:
        step = _DOING_VERB.sub(" ", _DONE_VERB.sub(" ", after["step"]))
        kept = f"{unlabelled[: after.start('step')]}{step}{unlabelled[after.end('step') :]}"
    else:
        kept = unlabelled
    return kept if tokenize(kept) else text


# An error's text pasted before the question ("TypeError: Cannot read properties of undefined
# (reading 'map') at Cart.render — how many times did it fire this week?", "error: Your local
# changes ... would be overwritten by checkout — which files did I change?"): its words are the
# program's, not the request's, and they match other tools' ("map": the maps tools, "charge":
# EV charging, "address": geocoders). It opens the request with an error's mark (a name ending
# in "Error" or "Exception" before a colon or "at", "fatal:", "panic:", "Traceback") and ends at
# a dash or a line break before the question; both halves read it as the word "error". An
# error that runs into the question with no such break is left as it is ("SQLITE_ERROR: no
# such column: created, what columns does events have" names its server and its cause).
_ERROR_TEXT = re.compile(
    r"\s*(?:(?:uncaught|unhandled)\s+)?"
    r"(?:[\w.$]*(?:error|exception)(?=:|\s+at\s)|(?:fatal|panic)(?=:)|traceback\s*\()"
    r".*?(?:\s+[\u2014\u2013]+\s*|\s+--?\s+|\s*\n\s*)(?=\S)",
    re.IGNORECASE | re.DOTALL,
)


def error_text_read(text: str) -> str:
    """``text`` with an error's text pasted before the question read as "error" (see
    ``_ERROR_TEXT``; a traceback's lines one after another)."""
    rest = text
    while (found := _ERROR_TEXT.match(rest)) is not None:
        rest = rest[found.end() :]
    return text if rest is text else f"error {rest}"


# Where a value came from, an earlier call's output ("from the earlier list output", "in the
# previous step's output", "from the last result"; words.EARLIER_WORDS, RESULT_NOUNS): read,
# "list output" asked for the lister ("the PRA portal ... from the earlier list output, id
# 7205...: its domain" found zpa_list_pra_portals over the getter). Not after "of" ("the
# logs of the last step" asks for the step's logs).
_PROVENANCE = re.compile(
    rf"\s*\b(?:from|in)\s+(?:the\s+)?(?:{'|'.join(EARLIER_WORDS)})\b"
    rf"(?:\s+[\w'\u2019-]+){{0,3}}\s+(?:{'|'.join(RESULT_NOUNS)})\b",
    re.IGNORECASE,
)


def without_provenance(text: str) -> str:
    """``text`` without where a value of it was found (``_PROVENANCE``); as it is when nothing
    else would be left."""
    rest = _PROVENANCE.sub(" ", text)
    return rest if rest.strip() else text


# A past event the request tells, not the action it asks for: "Okta sign-ins broke right after
# someone edited the app; app id 0oa8x2" (update_application first), "the build I started (pid
# 4412) — has it printed anything new?" (start_process), "read the full text I downloaded"
# (download_paper), "has the chess board moved since the last move?" (make_move), "is Copilot
# already assigned to issue 4412?" (assign_copilot_to_issue). The verb, a regular "-ed" form or
# an irregular past (words.PAST_FORMS), follows a teller (words.NARRATORS: "I", "someone", ...;
# "'ve" or "have" / "has" / "had" between), or opens a perfect question ("has it printed", "have
# you deployed") or a question of a state reached ("is X already assigned"), perhaps after an
# adverb (words.NARRATED_ADVERBS). It is not read: what the request asks for is elsewhere, and
# when nothing else would be left it is read as typed. Not a participle before its noun ("list
# archived pages"), after "is" alone ("which repos are starred" asks for the starred ones), in a
# passive ("how much time was logged" asks for the worklog, "it was fixed" to mark it so), nor
# after a question's "am I" ("which db am I connected to").
_PAST = rf"(?:[A-Za-z]{{3,}}ed|{'|'.join(PAST_FORMS)})"
_ADVERBS = rf"(?:(?:{'|'.join(NARRATED_ADVERBS)})\s+)?"
_NARRATED = re.compile(
    rf"(?<!\bam\s)(?<!\bis\s)(?<!\bare\s)\b(?:{'|'.join(NARRATORS)})"
    rf"(?:['\u2019]ve|\s+(?:have|has|had))?\s+{_ADVERBS}(?P<verb>{_PAST})\b"
    rf"|(?:^|(?<=[,;:.?!\u2014\u2013-]))\s*"
    rf"(?:(?:has|have|had)\s+(?:[\w'\u2019-]+\s+){{1,3}}?{_ADVERBS}"
    rf"|(?:is|are)\s+(?:[\w'\u2019-]+\s+){{1,3}}?(?:already|still)\s+)(?P<asked>{_PAST})\b",
    re.IGNORECASE,
)


def without_narrated(text: str) -> str:
    """``text`` less the verbs of a past event it tells (``_NARRATED``); as it is when nothing
    else would be left."""
    kept = _NARRATED.sub(lambda found: _cut(found, "verb" if found["verb"] else "asked"), text)
    return kept if kept == text or tokenize(kept) else text


def _cut(found: re.Match[str], group: str) -> str:
    """``found``'s text without its ``group``."""
    start, end = found.span(group)
    whole = found.group(0)
    return f"{whole[: start - found.start()]}{whole[end - found.start() :]}"


# "open" said of a state ("list the open PRs", "open issues in acme/web", "which tickets are
# still open"), not the verb ("open a ticket", "open https://shop.acme.io"): read as the verb,
# a synonym of "create" and "start", it pulled create_* and open_* tools. Keyword search does
# not read it after a determiner, a quantifier or "is" / "are" / "still", nor before a plural.
_OPEN_STATE = re.compile(
    r"\b(?P<lead>(?:the|my|our|all|any|its|their|your|his|her|which|what|many|of|with|are|is"
    r"|still|currently|only|no)\s+)open\b"
    r"|\bopen(?=\s+[A-Za-z]*[^\W\dsuSIU_]s\b(?![:/.]))",
    re.IGNORECASE,
)


def without_open_state(text: str) -> str:
    """``text`` less "open" where it says a state (see ``_OPEN_STATE``)."""
    if "open" not in text.lower():
        return text
    kept = _OPEN_STATE.sub(lambda found: found["lead"] or "", text)
    return kept if tokenize(kept) else text


# A plan that says which of its steps comes first ("first the open PRs, then I'll request
# reviewers on each", "to begin, get the service desk for project HELP; then its queues"): the
# step asked for now is the first, and a later step's tool ranked above it. The request is read
# to its first "then"; each step is still a need of its own (needs.py). A later step said
# before the one asked ("before I open the PR I need a branch off main") is not read either.
_FIRST_STEP = re.compile(
    r"\s*(?:first(?:\s+of\s+all)?|to\s+(?:begin|start)(?:\s+with)?|(?:start|begin)\s+(?:by|with)"
    r"|initially|step\s+(?:one|1)\s+is)\b(?P<step>.+?)(?:\s*[,;]\s*|\s+)(?:and\s+)?then\b",
    re.IGNORECASE | re.DOTALL,
)
# Two steps in their order with no "first" ("drop the forwarding rule "bypass" and then create
# one ...", "make 12 tickets from this list, then put them all in sprint 88"): the step asked
# now is the first too, but the request is read whole (cut at "then", a later step's tool
# fell out of the first five where both are wanted: "fetch the json then save it to
# data.json"); the first step's best leads (engine.py). Only in the request's first sentence:
# its first need is that step ("There are three of us. ... recommend a meeting point, and then
# ..." opens with context). Not a condition's ("if the build failed then retry it", "once it
# passes, then deploy"), nor "then" closing the request ("... the BTC price then").
_THEN_STEP = re.compile(
    r"(?!\s*(?:if|when|whenever|once|after|unless|as\s+soon\s+as)\b)"
    r"\s*(?P<step>\S(?:[^.!?\n]|[.!?](?=\S))*?)(?:\s*[,;]\s*|\s+)(?:and\s+)?then\s+(?=\w)",
    re.IGNORECASE,
)
_LATER_STEP = re.compile(
    r"\s*before\s+(?:i|we|you)\s+[^,;.?!]+?"
    r"(?:\s*[,;]\s*|\s+(?=(?:i|we)\s+(?:need|want|have|must|should)\b))",
    re.IGNORECASE,
)


# A later step said after the one asked for, as its purpose ("next I need the tag v3.0.0's
# commit sha so I can diff it against main", "I need to see who can edit the Runbooks space
# before I move pages into it"): the way an agent says what it needs mid-task. The later
# step's words found its tool first (git_diff, confluence_move_page); the clause is not read,
# to a comma (not one before "then": a step later still), the end of its sentence or a colon.
# It opens with "so (that) I / we / you can ...", "in order to" or "before I / we / you" after
# a need said as one ("I need", "we want", "I have to") in the same clause (after the last
# colon before it: "I need two things: record my clicks so I can ..." is an imperative):
# after an imperative the purpose may be what the verb means ("duplicate the report docx so I
# can edit a copy", "record my clicks so I can turn them into a playwright test").
_PURPOSE = re.compile(
    r"(?<![.!?:])(?:\s*[,;]\s*|\s+)(?:so\s+(?:that\s+)?(?:i|we|you)\s+(?:can|could|may|might|will)"
    r"|so\s+(?:i|we|you)[\u2019']ll|in\s+order\s+to|before\s+(?:i|we|you))\b"
    r"(?:[^.,;:!?\n]|[.,!?:](?=\w)|,(?=\s*(?:and\s+)?then\b))*",
    re.IGNORECASE,
)
_SAYS_NEED = re.compile(
    r"\b(?:i|we)\s+(?:(?:really|just|also|still|first)\s+)?"
    r"(?:need|want|have\s+to|must|would\s+like|[\u2019']d\s+like)\b",
    re.IGNORECASE,
)


def _without_purpose(text: str) -> str:
    """``text`` less a later step said as the purpose of a need it says (``_PURPOSE``)."""
    found = _PURPOSE.search(text)
    if found is None:
        return text
    clause = text.rfind(":", 0, found.start()) + 1  # the need said after the last colon
    if not _SAYS_NEED.search(text, clause, found.start()):
        return text
    return f"{text[: found.start()]}{text[found.end() :]}"


def says_first_step(text: str) -> bool:
    """Whether ``text`` is a plan that says which of its steps comes first, before a "then"
    (``_FIRST_STEP``)."""
    return _FIRST_STEP.match(text) is not None


def says_steps_in_order(text: str) -> bool:
    """Whether ``text`` is two steps in their order, joined by "then" (``_THEN_STEP``)."""
    return _THEN_STEP.match(text) is not None


def first_step_read(text: str) -> str:
    """``text`` less the later steps of a plan that says which comes first (``_FIRST_STEP``,
    ``_LATER_STEP``) or that follow as the purpose of the step asked (``_PURPOSE``); as it is
    when nothing else would be left."""
    if (found := _FIRST_STEP.match(text)) is not None:
        kept = text[: found.end("step")]
    elif (later := _LATER_STEP.match(text)) is not None:
        kept = text[later.end() :]
    else:
        kept = text
    kept = _without_purpose(kept)
    return kept if kept is text or tokenize(kept) else text


# A request that names a tool by what it takes or gives ("which tool takes a JQL string",
# "something that returns a list of commit SHAs", "takes a requestId, returns the next pending
# task") asks about its parameters or its result: the verb says nothing a tool does, and
# "takes" read as an action found browser_take_screenshot first for "takes a pmid". It is
# such a verb where it opens the request or a clause, or follows the word for a tool or "that"
# / "which" ("handle returns for order 55" keeps its noun).
_SIGNATURE = re.compile(
    r"(?P<lead>^\s*|[,;(]\s*|\b(?:that|which|tool|one|and)\s+)"
    r"(?:takes|accepts|expects|returns|gives\s+back)\b",
    re.IGNORECASE,
)


def without_signature_verbs(text: str) -> str:
    """``text`` less a verb that names a tool by its parameters or result (``_SIGNATURE``)."""
    return _SIGNATURE.sub(lambda found: found["lead"], text)


_SHORT_FORM = re.compile(r"\b(" + "|".join(SHORT_FORMS) + r")\b", re.IGNORECASE)


# A verb's forms, for the verbs of words.PHRASAL_VERBS.
_VERB_FORMS = {
    "set": "set|sets|setting",
    "switch": "switch|switches|switched|switching",
    "turn": "turn|turns|turned|turning",
    "take": "take|takes|took|taken|taking",
    "upload": "upload|uploads|uploaded|uploading",
    "throw": "throw|throws|threw|thrown|throwing",
    "tick": "tick|ticks|ticked|ticking",
    "check": "check|checks|checked|checking",
}
_PHRASAL = re.compile(
    "|".join(
        rf"\b(?:{_VERB_FORMS[verb]})\b"
        + (rf"(?:\s+[\w'\u2019\"-]+){{0,3}}?\s+{particle[0]}\b" if particle else "")
        for verb, *particle in (phrase.split() for phrase in PHRASAL_VERBS)
    ),
    re.IGNORECASE,
)
_PHRASAL_READING = {
    form: PHRASAL_VERBS[phrase]
    for phrase in PHRASAL_VERBS
    for form in (
        " ".join((verb, *phrase.split()[1:])) for verb in _VERB_FORMS[phrase.split()[0]].split("|")
    )
}
_STATE = re.compile(r"\b(?:is|are|was|were|be|been|being|am|get|gets|got)\s+$", re.IGNORECASE)


def phrasal_verbs_read(text: str) -> str:
    """``text`` with the verb each phrase of words.PHRASAL_VERBS, and each idiom of
    words.IDIOMS, means said after it ("set up a custom domain" -> "set up (create) a custom
    domain", "has to go" -> "has to go (delete remove)"), unless a form of "be" says a state
    before it ("the organizations that are set up", "the subtasks that are ticked off")."""

    def read(found: re.Match[str]) -> str:
        if _STATE.search(text, 0, found.start()):
            return found.group(0)
        words = found.group(0).lower().split()
        phrase = " ".join(dict.fromkeys((words[0], words[-1])))  # its object left out
        return f"{found.group(0)} ({_PHRASAL_READING[phrase]})"

    text = _PHRASAL.sub(read, text)
    for idiom, reading in _IDIOMS:
        text = idiom.sub(functools.partial(_idiom_read, reading), text)
    return text


_IDIOMS = tuple((re.compile(idiom, re.IGNORECASE), reading) for idiom, reading in IDIOMS.items())


def _idiom_read(reading: str, found: re.Match[str]) -> str:
    """An idiom of words.IDIOMS with the words it means after it, unless it says a state."""
    if _STATE.search(found.string, 0, found.start()):
        return found.group(0)
    return f"{found.group(0)} ({reading})"


def expand_abbreviations(text: str) -> str:
    """``text`` with each short form spelled out after it (a tool may use either)."""

    def spelled(found: re.Match[str]) -> str:
        return f"{found.group(1)} ({SHORT_FORMS[found.group(1).lower()]})"

    return _SHORT_FORM.sub(spelled, text)


# A word of the tool vocabulary in another language (words.FOREIGN_WORDS): a Latin-script one
# as a whole word, a Han or kana one anywhere in a run (those scripts have no spaces), the
# longest first. Words are looked up one by one (a regex of every form cost 0.27 ms a request).
_FOREIGN_LATIN = frozenset(w for w in FOREIGN_WORDS if not _CJK_CHAR.search(w))
_FOREIGN_CJK = re.compile(
    "|".join(
        map(re.escape, sorted((w for w in FOREIGN_WORDS if _CJK_CHAR.search(w)), key=len)[::-1])
    )
)
_LATIN_WORD = re.compile(r"[^\W\d_]+")


def foreign_words_read(text: str) -> str:
    """``text`` with each word of the tool vocabulary it says in another language followed by
    its English word ("lösche den Benutzer" -> "lösche (delete) den Benutzer (user)"): neither
    the keyword index nor the default model reads Spanish, German, French, Chinese or Japanese.
    An English request is left as it is."""

    def glossed(found: re.Match[str]) -> str:
        english = FOREIGN_WORDS.get(found[0].lower())
        return found[0] if english is None else f"{found[0]} ({english}) "

    if any(word.lower() in _FOREIGN_LATIN for word in _LATIN_WORD.findall(text)):
        text = _LATIN_WORD.sub(glossed, text)
    if _CJK_CHAR.search(text):
        text = _FOREIGN_CJK.sub(glossed, text)
    return text


def without_data(text: str) -> str:
    """``text`` less the pasted data in it (see ``_DATA``)."""
    return _DATA.sub(lambda found: " " if any(c.isdigit() for c in found[0]) else found[0], text)


_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")
# A file named without a folder ("save it as notes.md"): only with a common extension
# (words.BARE_FILE_EXTENSIONS); neither side of an e-mail address ("jane.doc@corp.com" is
# no word document).
_BARE_FILE = re.compile(
    rf"(?<![\w/.@-])[\w-]+(?:\.[\w-]+)*\.(?:{'|'.join(BARE_FILE_EXTENSIONS)})(?![\w/@-])",
    re.IGNORECASE,
)


def _file_name(path: re.Match[str]) -> str | None:
    """The file a path (a ``_PATH`` match) names: its last part, if that has an extension;
    None for a folder or a page ("/root/music", "/settings/profile")."""
    name = path.group(1).rstrip(".")
    return name if _EXTENSION.search(name) else None


def file_names(text: str) -> list[tuple[int, str]]:
    """The files ``text`` names, each with where it starts: a path whose last part has an
    extension ("/root/notes/cv.md" -> "cv.md"), or a bare name with a common extension in
    lower or upper case."""
    found: list[tuple[int, str]] = []
    for path in _PATH.finditer(text):
        name = _file_name(path)
        if name is not None:
            found.append((path.start(), name))
    found.extend((name.start(), name.group(0)) for name in _bare_files(text))
    return sorted(found)


def _bare_files(text: str) -> list[re.Match[str]]:
    """The files ``text`` names without a folder ("notes.md"), outside its paths."""
    bare = _PATH.sub(lambda path: " " * len(path.group(0)), text)  # same offsets, no paths
    return [
        name for name in _BARE_FILE.finditer(bare) if _file_case(name.group(0).rpartition(".")[2])
    ]


def _file_case(extension: str) -> bool:
    """Whether a bare name's extension is written as files' are: in lower or upper case
    ("notes.md", "SCAN.PDF"); "Newtonsoft.Json" names a package."""
    return extension.islower() or extension.isupper()


# The JSON (or a Python dict) an agent writes for the call it wants filled ('{"policyId":
# "00p1", "ruleId": "0pr2", "conditions": {...}}'): its keys name what the tool takes, its
# string values are data. The model read a quoted key as a quoted value, cut ("{ : , : }");
# it reads the words the key joins ("policy id", "rule id"). A key is an identifier in quotes
# after "{" or "," and before ":". Keyword search reads keys and values as it did.
_OBJECT_PAIR = re.compile(
    r"(?P<lead>[{,]\s*)(?P<quote>[\"'])(?P<key>[A-Za-z_$][\w$]*)(?P=quote)\s*:"
)


def object_keys_read(text: str) -> str:
    """``text`` with each key of an object it writes as JSON as the words it joins, out of
    its quotes (see ``_OBJECT_PAIR``)."""
    if ":" not in text:
        return text
    return _OBJECT_PAIR.sub(
        lambda found: f"{found['lead']}{' '.join(split_identifier(found['key']))}:", text
    )


# A request that asks for an outcome ("make sure the team knows the deploy failed", "make sure
# the customer gets their money back"): "make" there creates nothing, yet as a word of the
# request it is a synonym of "create" and a tool name's verb (chess's make_move, every create_*
# tool). Keyword search reads the outcome without it; the model reads the phrase as it is.
_MAKE_SURE = re.compile(r"\bmak(?:e|es|ing)\s+sure\b(?:\s+that\b)?", re.IGNORECASE)


def keyword_query(text: str) -> str:
    """``text`` as keyword search reads it: without pasted data or a word it negates
    (``without_negated``), short forms spelled out, and
    a file's path or name read as the kind of file it is: its extension and the word "file"
    ("write the report to /tmp/report.md" wants a file writer, not ``issue_write``). The
    file's own name and folders are a value, not what is asked: "whats in config.yaml?"
    wants a file reader, not ``get_config``, and "read customers.csv" a reader, not
    ``list_customers``. A path without an extension may be a folder or a page: left as it is."""

    def marked(found: re.Match[str]) -> str:
        name = _file_name(found)
        return found.group(0) if name is None else f"{_kind(name)} file"

    text = first_step_read(error_text_read(without_data(without_provenance(text))))
    text = without_narrated(text)
    text = without_signature_verbs(without_done_step(without_negated(read_statements(text))))
    text = channels_read(_MAKE_SURE.sub(" ", without_open_state(text)))
    text = _bare_files_kind(_PATH.sub(marked, text))
    return expand_abbreviations(phrasal_verbs_read(foreign_words_read(text)))


def _kind(name: str) -> str:
    """The kind of file ``name`` is, as its extension says and in its tools' words for a
    document ("report.md" -> "md", "sales.xlsx" -> "xlsx excel spreadsheet")."""
    extension = name.rpartition(".")[2]
    kind = DOCUMENT_KINDS.get(extension.lower())
    return f"{extension} {kind}" if kind else extension


def _bare_files_kind(text: str) -> str:
    """``text`` with each file it names without a folder ("notes.md") read as its kind."""
    for found in reversed(_bare_files(text)):
        text = f"{text[: found.start()]}{_kind(found.group(0))} file{text[found.end() :]}"
    return text


def _bare_files_marked(text: str) -> str:
    """``text`` with the word "file" after each file it names without a folder ("notes.md")."""
    for end in reversed([name.end() for name in _bare_files(text)]):
        text = f"{text[:end]} file{text[end:]}"
    return text


def _unless_a_file(quoted: re.Match[str]) -> str:
    """A quoted value as the model reads it: nothing, unless it names a file ("open
    'report.pdf'")."""
    return quoted.group(0) if file_names(quoted.group(0)) else " "


# Code the request is written in: a call or member chain ("page.goBack()",
# "okta.users.deactivate(userId)"), a snake_case identifier ("zdx_start_deeptrace",
# "github.list_prs"), or an API route with placeholders ("/repos/{owner}/{repo}/pulls", read as a
# file's path before: "pulls file"). The model reads such a word as the pieces its tokenizer cuts
# ("go", "##back"); keyword search splits identifiers already (split_identifier), and the model
# now reads their words too. A camelCase word alone stays as typed: tools write "localStorage"
# or "useEffect" joined as well (browser_localstorage_get), and a file's name stays one.
_IDENTIFIER = re.compile(
    r"(?<![\w/.@-])(?:[A-Za-z]\w*\.)+[A-Za-z]\w*(?=\s*\()"
    r"|\b[a-z]+(?:_[A-Za-z0-9]+)+\b(?!\.\w)"
)
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_ROUTE = re.compile(r"(?<!\S)(?:/[\w.-]*)*/\{[^{}\s]*\}(?:/[\w{}.-]*)*")


def _route_read(text: str) -> str:
    """``text`` with an API route as the words of its fixed segments (see ``_ROUTE``)."""
    return _ROUTE.sub(
        lambda found: " ".join(split_identifier(_PLACEHOLDER.sub(" ", found[0]))), text
    )


def _identifiers_read(text: str) -> str:
    """``text`` with each code identifier as the words it joins (see ``_IDENTIFIER``)."""
    return _IDENTIFIER.sub(lambda found: " ".join(split_identifier(found[0])), text)


# A tool's name or its arguments written as code: an agent guessing the identifier
# ("get_file_contents?", "confluence.updatePage", "atlassian.getIssue('PLAT-88')",
# "list-pull-requests", "github_create_issue") or writing the call it is about to make with the
# tool left out ("await tools.github.???({ owner, repo, title, body, labels })", "takes
# project_key and issue_type_id"). Both halves read such words as the words they join, and
# siblings share most of them: "get_file_contents" found get_text_file_contents first,
# "confluence.updatePage" confluence_update_page_section, the call's "labels" get_label. A
# word is code when it joins words with "_" or "-", or is camelCase starting in lower case
# ("getIssue"; "JavaScript" and "GitHub" are names), or joins three or more with "-"
# ("list-pull-requests"; "sub-issue" and "one-time" are English); a dotted chain when it is
# called or holds such a word ("data.gov", "example.com" and "notes.md" are no code); not a
# value assigned ("assignee = currentUser()" names no tool current_user) or one's source ("the
# pid from start_process": kill_process is asked for). An argument is an object
# literal's key ("{ owner, repo }") or a word written as code outside a dotted chain (a chain's
# members are a receiver and a method) and a kebab-case word (no argument is written so).
_CODE_WORD = re.compile(r"(?<![\w$.-])[A-Za-z_$][\w$]*(?:[.-][A-Za-z_$][\w$]*)*(?P<call>\s*\()?")
_CODE_SHAPE = re.compile(r"_|(?<![A-Za-z])[a-z]+[A-Z]")
# what a text holding a word written as code holds somewhere (most requests hold none)
_MAYBE_CODE = re.compile(r"\w_|[a-z][A-Z]|\w[.-]\w")
_NOW = re.compile(r"\bnow\b", re.IGNORECASE)  # what a step said to be done ends at
_NOT_ASKED = re.compile(r"(?:(?<![=!<>])=|\b(?:from|by|of))\s*$", re.IGNORECASE)
_OBJECT_LITERAL = re.compile(r"\{([^{}]*)\}")
_OBJECT_KEY = re.compile(r"(?:^|,)\s*(?:\.\.\.)?([A-Za-z_$][\w$]*)\s*(?=[:,]|$)")


def _code_form(word: str) -> str:
    """``word`` as code names compare: lower case, without "_", "-" and "$"."""
    return re.sub(r"[_$-]", "", word).lower()


CODE_WORDS = 32  # the most words written as code read of one request


@functools.lru_cache(maxsize=64)
def _code_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` written as code (see ``_CODE_WORD``), without the values it
    quotes ("PLAT-88") and a step it says is done ("git_add done, now commit": see
    ``without_done_step``); the first ``CODE_WORDS`` (a request is ranked whole and by
    need: each reads them)."""
    if not _MAYBE_CODE.search(text):
        return ()
    done = _DONE_STEP.match(text) if _NOW.search(text) else None
    if done is not None:
        text = text[done.end("step") :]
    text = _QUOTED.sub(" ", text)
    words = []
    for found in _CODE_WORD.finditer(text):
        word = found[0].rstrip("( \t").strip(".-")
        if "." in word:
            code = found["call"] or _CODE_SHAPE.search(word)
        else:
            code = word.count("-") >= 2 or ("-" not in word and _CODE_SHAPE.search(word))
        # not a value assigned ("assignee = currentUser()") or a value's source ("the pid
        # from start_process, kill it")
        if code and not _NOT_ASKED.search(text[max(0, found.start() - 8) : found.start()]):
            words.append(word)
            if len(words) >= CODE_WORDS:
                break
    return tuple(words)


def argument_names(text: str) -> frozenset[str]:
    """The argument names ``text`` writes as code (``_code_form``; see ``_CODE_WORD``). Which
    of them name a parameter is for the tools to say."""
    names = {
        _code_form(key)
        for literal in _OBJECT_LITERAL.finditer(text)
        for key in _OBJECT_KEY.findall(literal[1])
    }
    names.update(_code_form(word) for word in _code_words(text) if not re.search(r"[.-]", word))
    return frozenset(names)


def _name_parts(word: str) -> list[list[str]]:
    """The identifiers a code word may name a tool by, each as its words: a dotted chain's
    last member, and its last two members as one ("confluence.updatePage": "update page",
    "confluence update page")."""
    members = [split_identifier(member) for member in word.split(".") if member]
    candidates = [members[-1]] if members else []
    if len(members) > 1:
        candidates.append([*members[-2], *members[-1]])
    return [words for words in candidates if len(words) > 1]


def named_tool_tier(code_words: list[list[str]], name: str, server: str = "") -> int:
    """How closely a word the request writes as code names the tool called ``name`` (of
    ``server``): 3, its server's name and then its name ("github_create_issue",
    "github.createIssue" for github's create_issue); 2, its name word for word; 1, its name
    less a first word of either ("github_create_issue" for create_issue, "getIssue" for
    jira_get_issue); 0, neither. Words compare as code does ("listPullRequests",
    "list-pull-requests"). A server names its tools as it likes: one of another server
    calling a tool "github_create_issue" is second to github's create_issue there."""
    tool = [_code_form(word) for word in split_identifier(name)]
    if len(tool) < 2:
        return 0
    prefix = _code_form(server)
    tier = 0
    for words in code_words:
        written = [_code_form(word) for word in words]
        if prefix and "".join(written) == prefix + "".join(tool):
            return 3
        if "".join(written) == "".join(tool):
            tier = 2
            continue
        if "".join(written[1:]) == "".join(tool) or "".join(written) == "".join(tool[1:]):
            tier = max(tier, 1)
    return tier


def code_names(text: str) -> list[list[str]]:
    """The identifiers ``text`` may name a tool by (``_name_parts`` of each code word)."""
    return [words for word in _code_words(text) for words in _name_parts(word)]


def semantic_query(text: str) -> str:
    """``text`` less its literal values, a message it dictates, a word it negates and short
    forms, for the embedding model (see above)."""
    text = first_step_read(error_text_read(without_data(without_provenance(text))))
    text = without_done_step(without_negated(read_statements(without_narrated(text))))
    whole = " ".join(text.split())  # what is read when nothing else is left
    text = object_keys_read(text)
    text = _route_read(text)
    text = _QUOTED.sub(_unless_a_file, _MESSAGE.sub(" ", text))
    text = _URL.sub(" URL ", text)
    text = _EMAIL.sub(" email address ", text)
    text = _IP_ADDRESS.sub(_ip_address, channels_read(text))
    text = _bare_files_marked(text)
    text = _PATH.sub(lambda found: f" {found.group(1).rstrip('.')} file ", text)
    text = _identifiers_read(text)
    text = _CSS_CLASS.sub(" ", text)
    cleaned = " ".join(_NUMBERED_VALUE.sub(" ", text).split())
    if cleaned and named_one(whole):  # "ip source group 552": the thing itself
        cleaned = f"get {cleaned}"
    return expand_abbreviations(phrasal_verbs_read(foreign_words_read(cleaned or whole)))


def split_identifier(text: str) -> list[str]:
    """``getUserProfile`` / ``get_user-profile`` -> ``["get", "user", "profile"]``."""
    words: list[str] = []
    for chunk in _WORD.findall(text):
        if _CJK_CHAR.match(chunk):
            words.extend(chunk[i : i + 2] for i in range(max(1, len(chunk) - 1)))
        else:
            words.extend(part.lower() for part in _CAMEL.sub(" ", chunk).split())
    return words


# A product's name written in mixed case ("SonarQube", "NuGet", "GitHub", "MySQL", "macOS")
# is split into its parts like any identifier, but people type it in one piece ("is
# sonarqube up", "versions on nuget"): a tool's text says it joined too. Only words that
# start with a capital or hold a run of capitals: a camelCase identifier ("getUserProfile")
# names no product.
_CAPITALS = re.compile(r"[A-Z]{2}")


def joined_words(text: str) -> list[str]:
    """The stemmed words that mixed-case words of ``text`` make joined: each two parts next
    to each other ("NuGetPackageVersions": "nuget", "getpackag", "packageversion"), and the
    whole word of three or more parts."""
    words: list[str] = []
    for chunk in _WORD.findall(text):
        if chunk.islower() or chunk.isupper() or _CJK_CHAR.match(chunk):
            continue
        if not (chunk[0].isupper() or _CAPITALS.search(chunk)):
            continue
        parts = [part.lower() for part in _CAMEL.sub(" ", chunk).split()]
        if len(parts) < 2:
            continue
        pairs = [a + b for a, b in itertools.pairwise(parts)]
        words.extend(
            stem(word) for word in (pairs if len(parts) == 2 else [*pairs, "".join(parts)])
        )
    return words


def mostly_cjk(text: str) -> bool:
    """Whether at least half of the letters of ``text`` are Han, kana or hangul."""
    letters = sum(map(str.isalpha, text))  # (a character at a time in C: pasted data is long)
    cjk = sum(map(str.isalpha, "".join(_CJK_RUN.findall(text))))
    return letters > 0 and cjk * 2 >= letters


CACHED_WORD = 64  # characters of the longest word whose stem is cached


def stem(word: str) -> str:
    """A light suffix stripper: ``issues`` -> ``issu``, ``issue`` -> ``issu``, ``created`` -> ``creat``."""
    # A request's words, over and over: a third of its keyword time. Only words of a
    # plausible length are cached: a query of long made-up words (a search's ``q`` is up to
    # the URL's length) would otherwise keep gigabytes in the cache's 65,536 entries.
    return _cached_stem(word) if len(word) <= CACHED_WORD else _stem(word)


@functools.lru_cache(maxsize=65_536)
def _cached_stem(word: str) -> str:
    return _stem(word)


def _stem(word: str) -> str:
    if len(word) <= 3 or word.isdigit():
        return word
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def tokenize(text: str, *, keep_stop_words: bool = False) -> list[str]:
    return [
        stem(word) for word in split_identifier(text) if keep_stop_words or word not in STOP_WORDS
    ]


def query_tokens(text: str) -> tuple[list[str], list[str]]:
    """``tokenize(text)`` and ``tokenize(text, keep_stop_words=True)``, splitting it once."""
    every = [(word, stem(word)) for word in split_identifier(text)]
    return [stemmed for word, stemmed in every if word not in STOP_WORDS], [s for _, s in every]


@dataclass(frozen=True)
class ToolDocument:
    """One tool as search sees it."""

    server: str
    name: str
    description: str
    fields: dict[str, list[str]]  # field -> tokens
    name_words: frozenset[str]  # what the tool's name says it does (see ``name_words``)
    text: str  # what the embedding model reads
    content_hash: str  # of ``text``: the embedding cache key (with the model)
    kind: str = "tool"  # or "script": a saved script (its server is "")
    takes_coordinates: bool = False  # has latitude and longitude parameters (see needs.py)
    deprecated: bool = False  # its description says it is kept for old clients only
    # those of its name words the name writes in the plural only ("list_jobs": "job"; see
    # ``plural_name_words``)
    plural_name_words: frozenset[str] = frozenset()
    # its parameters' names as code writes them, in lower case and without "_" or "-"
    # ("pullNumber", "pull_number": "pullnumber"; see ``argument_names``)
    parameter_names: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.server}__{self.name}"


def _parameters(schema: Any) -> list[tuple[str, str]]:
    if not isinstance(schema, dict):
        return []
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    found = []
    for name, sub in properties.items():
        description = sub.get("description", "") if isinstance(sub, dict) else ""
        found.append((str(name), description if isinstance(description, str) else ""))
    return found


def _takes_coordinates(parameters: list[tuple[str, str]]) -> bool:
    names = {name.lower() for name, _ in parameters}
    return bool(names & LATITUDE_NAMES and names & LONGITUDE_NAMES)


def name_words(server: str, name: str) -> frozenset[str]:
    """The stemmed words of a tool's name, less stop words and words repeating the server's name.

    ``jira_create_issue`` on server ``atlassian`` -> ``{"jira", "creat", "issu"}``;
    ``github`` / ``github_get_repo`` -> ``{"repo"}``. A name made only of such words keeps them.
    """
    words = tokenize(name)
    server_words = {*tokenize(server, keep_stop_words=True), "mcp"}
    return frozenset([word for word in words if word not in server_words] or words)


def plural(word: str) -> bool:
    """Whether ``word`` (lower case) is written in the plural: it ends in an "s" that its stem
    drops ("jobs", "queues", "watchers"; not "status", "analysis", "access")."""
    return (
        len(word) > 3
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is"))
        and stem(word) == stem(word[:-1])
    )


def verbless_plural(text: str) -> bool:
    """Whether ``text`` names things in the plural and asks nothing of them: some word of it
    plural and none a verb (words.VERBS): "rule labels", "application servers in ZPA", "which
    PRA credentials do we have?" want the things' list, not one of them."""
    words = [word.lower() for word in _LATIN_WORD.findall(text)]
    return any(plural(word) for word in words) and not any(word in VERBS for word in words)


# A thing named by its identifier: a word, perhaps "id", "no.", "number", "called" or
# "named", then a value with a digit in it or a quoted name ("group 552", "rule id 8812",
# "user 4410's profile", 'the timeout rule called "contractors-2h"').
_NAMED_ONE = re.compile(
    r"(?<![\w'-])([^\W\d_]+)\s+(?:(?:id|no\.?|number|called|named)\s*[:#]?\s*|#\s*)?"
    rf"(?:(?<![\w.-])[\w.:-]*\d[\w.:'\u2019-]*|{QUOTED})"
)
_NEXT_WORD = re.compile(r"\s*([^\W\d_]+)")
_CONNECTORS = frozenset(["id", "no", "number", "called", "named", "name"])
NAMED_READ = 32  # the most things named by an identifier read of one request
# What asks for something else than the thing itself: a verb, a word of a verb's synonym
# group ("new", "nuke") or a modal ("should"); not a verb that asks to see it
# (words.DISPLAY_VERBS), nor "list"'s other words ("all").
_ASKING = (
    VERBS
    | WISH_WORDS
    | {
        word
        for group in SYNONYM_GROUPS
        if group.split()[0] in VERBS and group.split()[0] != "list"
        for word in group.split()
    }
) - DISPLAY_VERBS


def named_one(text: str) -> frozenset[str]:
    """The stems of the things ``text`` names one by one by their identifier, where it asks
    nothing else of them: no verb but one to see them (words.DISPLAY_VERBS). "ip source group
    552", "Firewall rule 1203, what's its action?", "network service 7000 — show ports" want
    the thing itself (the mirror of ``verbless_plural``); "delete group 552" does not, nor
    "the last 20 messages" (the value counts things named in the plural after it)."""
    words = [(found.start(), found.group(0).lower()) for found in _LATIN_WORD.finditer(text)]
    if any(word in _ASKING for _, word in words):
        return frozenset()
    named = set()
    seen = 0  # the words before the match in hand
    lead = ""  # the last stop word among them: "for" in "a key for connector group "fra""
    plural_before = False  # "groups named like "eng-*""
    for found in itertools.islice(_NAMED_ONE.finditer(text), NAMED_READ):
        while seen < len(words) and words[seen][0] < found.start():
            before = words[seen][1]
            lead = before if before in STOP_WORDS else lead
            plural_before = plural_before or plural(before)
            seen += 1
        word = found.group(1).lower()
        after = _NEXT_WORD.match(text, found.end())
        if (
            word in STOP_WORDS
            or word in _CONNECTORS  # "the container name "/api""
            or lead in PREPOSITIONS
            or plural_before
            or plural(word)
            or (after and plural(after.group(1).lower()))  # "the last 20 messages"
        ):
            continue
        named.add(stem(word))
    return frozenset(named)


# A change to a thing that is there: something added to it ("add 198.51.100.7 to the
# "payment-gateways" destination group", "add the group "SRE" to its conditions"), or a thing
# named by its identifier that should be otherwise ("DLP rule 12 should alert instead").
_ADDED_TO = re.compile(
    r"\badd\b(?:[^.;:?!]|\.(?=\S)){1,80}?\b(?:to|into)\s+(?:the|this|that|its|their|our|my|your)\b",
    re.IGNORECASE,
)
_WISH_AFTER = re.compile(rf"\s+(?:also\s+|now\s+)?(?:{'|'.join(sorted(WISH_WORDS))})\b", re.I)


# A new item added to a collection ("add an item to the Groceries checklist", "add a task to
# my checklist project"): an indefinite thing after "add", the word before the preposition
# that ends it its head. Such an "add" creates the item where the catalogue has a tool that
# creates or adds that thing (lexical.py); "add a column description to the table", whose
# things are only updated there, stays a change.
_ADDED_NEW = re.compile(
    r"\badd\s+(?:a|an|another|one|some|new)\s+"
    r"(?P<thing>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*){0,3}?)"
    r"\s+(?:to|into|about|for|with|on|in|of|from|that|which|called|named)\b",
    re.IGNORECASE,
)


def added_new(text: str) -> str | None:
    """The (stemmed) head of a new thing ``text`` adds to a collection (``_ADDED_NEW``)."""
    found = _ADDED_NEW.search(text)
    return None if found is None else stem(found["thing"].split()[-1].lower())


def changes_one(text: str) -> bool:
    """Whether ``text`` asks to change a thing that is there, in words that would otherwise
    create one ("add X to the Y": ``_ADDED_TO``) or without a verb of the list ("rule 12
    should alert instead of block")."""
    if _ADDED_TO.search(text):
        return True
    return any(_WISH_AFTER.match(text, found.end()) for found in _NAMED_ONE.finditer(text))


def plural_words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The stems of the words of ``text`` written in the plural, and of those written in the
    singular (a stem may be in both)."""
    words = split_identifier(text)
    return (
        frozenset(stem(word) for word in words if plural(word)),
        frozenset(stem(word) for word in words if not plural(word)),
    )


def plural_name_words(server: str, name: str) -> frozenset[str]:
    """The words of a tool's name (``name_words``) that it writes in the plural and never in
    the singular: "list_cluster_queues" -> {"queu"}; "get_cluster_queue" -> none. A list tool
    names its things in the plural, a tool for one thing in the singular: what a request
    names in the plural ("agent queues in the default cluster") is the list's."""
    plurals, singulars = plural_words(name)
    return (plurals - singulars) & name_words(server, name)


_EXAMPLES = re.compile(
    r"\((?:e\.\s?g\.|eg\b|for example|example|such as)[^)]*\)"
    r"|\b(?:e\.\s?g\.|for example|such as)[,:]?[^.;]*",
    re.IGNORECASE,
)


def _examples(text: str) -> str:
    """The example values of a parameter's description (weak evidence: ``asides``)."""
    return " ".join(found.group(0) for found in _EXAMPLES.finditer(text))


def _without_examples(text: str) -> str:
    """A parameter's description without its example values ("e.g., 'Asia/Tokyo'"): they say
    what a value looks like, not what the tool does, and would match queries about them."""
    return _EXAMPLES.sub(" ", text)


def documents_for(
    server: str,
    server_description: str,
    tools: list[dict[str, Any]],
    parameters: SearchParameters = PARAMETERS,
) -> list[ToolDocument]:
    """One server's tools as search sees them. A parameter whose description names another
    tool of the server ("the train_no from `get-tickets`", "call get-current-date first")
    says where its value comes from: those are the other tool's words, weak evidence for
    this one ("find train tickets" asks for get-tickets, not for the route that cites it).
    A tool's own description naming another ("then read_process_output") tells how the two
    are used together, and counts as it is."""
    siblings = _tool_names([str(tool.get("name", "")) for tool in tools])
    return [document_for(server, server_description, tool, siblings, parameters) for tool in tools]


def _tool_names(names: list[str]) -> re.Pattern[str] | None:
    """A pattern of a server's tool names as a text would name them (whole, as written), or
    None. A name of one word ("search", "fetch") is a word descriptions use for themselves:
    it is not matched."""
    named = sorted({name for name in names if len(split_identifier(name)) > 1}, key=len)
    if not named:
        return None
    alternatives = "|".join(map(re.escape, reversed(named)))  # the longest first
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")


_DEPRECATED = re.compile(DEPRECATION_MARKS)


def document_for(
    server: str,
    server_description: str,
    tool: dict[str, Any],
    siblings: re.Pattern[str] | None = None,
    parameters: SearchParameters = PARAMETERS,
) -> ToolDocument:
    """``tool`` as search sees it; ``siblings`` matches the names of its server's tools,
    another of which a parameter's description may cite: weak evidence (``documents_for``).
    A name that is part of this tool's own ("delete_group" of "confirm_delete_group") says
    what this tool does too, and stays."""
    name = str(tool.get("name", ""))
    annotations = tool.get("annotations")
    # The display name: the tool's own title, else the one its annotations carry (older
    # servers put it there).
    title = str(
        tool.get("title")
        or (annotations.get("title") if isinstance(annotations, dict) else None)
        or ""
    )
    description = str(tool.get("description") or "")
    arguments = _parameters(tool.get("inputSchema"))
    cited: list[str] = []

    def uncited(found: re.Match[str]) -> str:
        if found.group(0) in name:  # this tool's own name, or part of it
            return found.group(0)
        cited.append(found.group(0))
        return " "

    if siblings is not None:
        arguments = [(argument, siblings.sub(uncited, text)) for argument, text in arguments]
    fields = {
        "name": [
            *tokenize(f"{name} {title}", keep_stop_words=True),
            *joined_words(f"{name} {title}"),
        ],
        "server": tokenize(f"{server} {server_description}"),
        "description": tokenize(description),
        "parameters": tokenize(" ".join(f"{p} {_without_examples(d)}" for p, d in arguments)),
        # weak evidence: example values, and the tools the parameters cite
        "asides": tokenize(" ".join([*(_examples(d) for _, d in arguments), *cited])),
    }
    readable_name = " ".join(split_identifier(name))
    parameter_names = ", ".join(
        " ".join(split_identifier(p)) for p, _ in arguments[: parameters.model_parameter_names]
    )
    server_words = " ".join(split_identifier(server))
    text = f"{server_words}: {readable_name}. {title + '. ' if title else ''}{description[: parameters.model_description_chars]}".strip()
    if parameter_names:
        text += f" Parameters: {parameter_names}."
    # What the server is for (its config's description) helps most where a tool says little;
    # last, so that a long description of the tool's own comes first within the model's window.
    about = " ".join(server_description.split())[: parameters.model_server_chars]
    if about:
        text += f" Server: {about}"
    return ToolDocument(
        server=server,
        name=name,
        description=description,
        fields=fields,
        name_words=name_words(server, name),
        plural_name_words=plural_name_words(server, name),
        text=text,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
        takes_coordinates=_takes_coordinates(arguments),
        parameter_names=frozenset(_code_form(argument) for argument, _ in arguments),
        deprecated=_DEPRECATED.search(description) is not None,
    )
