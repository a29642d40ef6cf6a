"""Runs: every script the gateway serves has one, with its own token, log and policy checks.

A run is registered (``POST /runs``) by whoever starts the sandbox (exec, the MCP face) and
gets a token that reaches the tool calls and the module only: the script never holds the
gateway's own token, so it cannot answer its own approval prompt. Each call of a run goes
through ``RunBook.call``, in this order:

1. a run that stopped (approval needed, replay diverged, too many calls) refuses every
   further call with the same error;
2. ``max_calls`` counts calls;
3. a resumed run answers the calls its log holds from the log, in order, without calling
   the servers; a call the log does not hold at that point stops the run;
4. an ``ask`` tool needs an approval: a tool approval on record, the approval of the very
   call the resumed run stopped at (used once), or the user's "yes" at the prompt of an
   interactive run; otherwise the call is not made and the run stops, resumable;
5. the call is made; its record (arguments redacted, sizes, duration, outcome) is kept for
   the run log, flushed to SQLite in the background (never on a call's path).

Before all of these, a run whose script is still being type-checked while it already runs
(``hold``: the MCP face hands a new script to its spare Deno beside the check) has every
request of its token wait at the guard (``cleared``) for the check's verdict: passed, they go
on; failed, they are refused, so nothing a script that fails its check asks is ever done.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import re
import secrets
import shlex
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import msgspec

from toolscript.config import IDENTITY_PARTS
from toolscript.errors import (
    ApprovalRequiredError,
    CallRefusedError,
    NewerRunLogError,
    NotFoundError,
    PolicyError,
    ReplayDivergedError,
    RunLogError,
    ToolscriptError,
    TooManyCallsError,
    TooManyRunsError,
    UsageError,
    tool_named,
)
from toolscript.gateway.recentcalls import MORE, Limits, shrunk
from toolscript.plumbing.processes import identity_alive, process_identity
from toolscript.plumbing.redact import (
    cut_redacted,
    held_secrets,
    may_hold_secret,
    redact,
    redact_value,
    sent_text,
)
from toolscript.store.approvalview import shortened_notice, shown_arguments, visible_text
from toolscript.store.runlog import RunLog, new_run_id
from toolscript.upstream.base import CALL_PROGRESS, CALL_RECEIVED
from toolscript.upstream.limits import NAME_LIMIT, cut_text

__all__ = [
    "DEFAULT_MAX_CALLS",
    "MAX_LIVE_RUNS",
    "PROMPT_LIMIT",
    "UNCLAIMED_SILENCE",
    "Run",
    "RunBook",
    "approve_commands",
]

log = logging.getLogger("toolscript.runs")

DEFAULT_MAX_CALLS = 1000
PROMPT_LIMIT = 600.0  # seconds a call waits for an answer at the prompt before the run stops
# a server's questions a run holds behind the one being asked; more at once are refused
QUESTIONS_WAITING = 4
FLUSH_SECONDS = 1.0
PENDING_CALLS = 10_000  # calls kept in memory while the run log cannot be written
ENDED_KEPT = 200  # ended runs kept in memory (for /runs/{id}/end answered twice, prompts)
# Runs under way at once (registered, not ended): each holds its script, calls and progress
# in memory and its row in the run log, which keeps every live run. The agent's URL
# registers them with one request each, and none need ever start or end: past this a
# registration is refused (429) rather than the gateway growing without bound. Exec and the
# face register one run per script they run, so only a flood comes near it. Counted apart
# for the agent's URL and the owner's: the agent's runs may claim a process that never
# exits (pid 1), so never expire, and must not refuse the user's exec and face.
MAX_LIVE_RUNS = 32
KEPT_SCRIPT_BYTES = 1024 * 1024  # characters of a run's script kept for ``exec --resume``
# Bytes of a call's arguments the log and --trace keep whole; larger ones are kept trimmed
# (their long strings cut, their first items and members: ``ARGUMENT_LIMITS``).
LOGGED_ARGUMENTS = 16 * 1024
ARGUMENT_LIMITS = Limits(
    arguments=LOGGED_ARGUMENTS, result=LOGGED_ARGUMENTS, string=2000, items=20, keys=100, depth=8
)
# Bytes of the arguments of a call waiting for approval kept whole (its prompt, the log,
# `toolscript runs show`): a person approves only what they could see, so a call whose
# arguments are larger cannot be approved by itself (only its tool, for every call).
APPROVAL_ARGUMENTS = 1024 * 1024
MESSAGE_ARGUMENTS = 2000  # characters of them a stop's message shows (shortened past it, saying so)
LOGGED_ERROR = 8 * 1024  # bytes of a call's error body kept (the log keeps 2000 characters)
# Bytes of call records one run keeps itemized (its calls in the log and in --trace), each
# call counting CALL_RECORD_BYTES besides its kept arguments and error: a run may make any
# number of calls (``--max-calls``), the calls past this are counted (the run's "calls")
# but not itemized, so a run calling in a loop cannot fill the memory and the log's disk.
RUN_LOG_BYTES = 32 * 1024 * 1024
CALL_RECORD_BYTES = 256
TRACES_KEPT = 8  # ended runs whose calls and progress stay in memory (an end asked twice)
# Seconds a run no process claimed (registered without the pid of a process still running:
# exec and the face always give theirs) may go without a sign of life (its token shown, a
# call, a progress report) before it ends as "expired"; never while a call or a prompt of
# it is under way, never a background run (its runner is the gateway's own).
UNCLAIMED_SILENCE = 600.0
ANSWERS = ("yes", "no", "always", "stop")
ELICITATION = "elicitation"  # the kind of prompt that carries a server's question
ELICIT_ANSWERS = ("accept", "decline", "cancel")
REPLAY_BYTES = 64 * 1024 * 1024  # answers a run keeps in memory for a resume
# and all live runs together: past it the run whose answer passes it keeps none (as past
# REPLAY_BYTES: it can be run again, not resumed), so MAX_LIVE_RUNS runs of the agent's
# cannot hold MAX_LIVE_RUNS times REPLAY_BYTES
REPLAY_TOTAL = 256 * 1024 * 1024
# the answers of stopped runs that held a configured secret, kept whole in memory (the log
# keeps them as ``***``) for a resume through this gateway: the oldest run's go past it
SECRET_ANSWERS_TOTAL = 64 * 1024 * 1024
PROGRESS_KEPT = 500  # progress reports a run keeps for its watchers (older ones are dropped)
MAX_PROGRESS_MESSAGE = 1000  # characters of a report's message
PROGRESS_WAIT = 60.0  # seconds a watcher's request may wait for the next report
CLOSING_CHECK = 0.25  # seconds between a waiting watcher's looks at a gateway stopping

Answered = tuple[int, str, bytes]  # status, result shape, JSON body
Caller = Callable[[str, dict[str, Any]], Awaitable[tuple[str, Any]]]


_LIMIT_NAMES = ("timeout", "memory_mb", "max_output", "max_calls")


def _carried_limits(logged: Any) -> dict[str, float]:
    """The limits a logged run kept (its row's ``limits``), those of a known name and a
    number alone (the log is a file of the user's, read back)."""
    if not isinstance(logged, dict):
        return {}
    return {
        name: value
        for name, value in logged.items()
        if name in _LIMIT_NAMES and isinstance(value, int | float) and not isinstance(value, bool)
    }


def _require_resumable(previous: dict[str, Any]) -> None:
    """Refuse ``exec --resume`` of a run that did not stop for an approval, saying why."""
    if previous["status"] == "resumed":
        raise UsageError(
            f"run {previous['id']} was resumed already",
            hint="`toolscript runs` shows the run that resumed it",
        )
    if previous["status"] != "awaiting_approval":
        raise UsageError(
            f"run {previous['id']} did not stop for an approval "
            f"({previous['status']}): there is nothing to resume",
            hint="run the script again instead",
        )


def digest(tool: str, arguments: Any) -> str:
    """What identifies a call for replay and approval: its tool and exact arguments."""
    canonical = msgspec.json.encode(arguments, order="sorted")
    return hashlib.sha256(tool.encode() + b"\0" + canonical).hexdigest()[:32]


def call_named(qualified: str) -> str:
    """``tool_named``, as messages name a call: a resource's (``server__resource:URI``, the
    script's to make as long as a request) cut at ``NAME_LIMIT`` characters, as a server's
    names are (``upstream/limits.py``), its control and invisible characters as escapes (a
    line break in a URI would put a line of the script's below the message, read as ours)."""
    server, separator, name = qualified.partition("__")
    return visible_text(
        tool_named(f"{server}__{cut_text(name, NAME_LIMIT)}" if separator else qualified)
    )


# A member name a script may write after a dot (``tools.records.deleteRecord``), as tools are
# named: letters, digits, ``_``, ``$`` and ``-``
_MEMBER_NAME = re.compile(r"[A-Za-z0-9_$][A-Za-z0-9_$-]*")


def member_named(server: str, namespace: str, name: str) -> str:
    """A member of ``tools.<namespace>`` that is no tool, as messages name it: ``call_named``'s
    form when it reads as a name; else quoted as the script wrote it,
    ``tools.records["../../runs"]`` (``records__../../runs`` read as a path of a URL)."""
    if _MEMBER_NAME.fullmatch(name):
        return call_named(f"{server}__{name}")
    # a JavaScript string, its control and invisible characters as escapes (\u000a)
    quoted = cut_text(name, NAME_LIMIT).replace("\\", "\\\\").replace('"', '\\"')
    return f'tools.{namespace}["{visible_text(quoted)}"]'


def approve_commands(run_id: str | None, tool: str) -> str:
    """The commands that approve a call, as every refusal names them."""
    server, _, name = tool.partition("__")
    # Shell-quoted: a resource's URI (a script's) or a prompt's name (a server's) is one
    # argument of a command a user runs as shown, never shell syntax.
    forever = (
        f"`toolscript approve --tool {shlex.quote(tool_named(tool))}` (this tool, from now on)"
    )
    # a resource's long URI, or one with a control or invisible character (a line break: a
    # line of the script's below ours): no command to type, nor to show whole
    if len(name) > NAME_LIMIT or visible_text(name) != name:
        forever = f'a rule under "policy" of server {server!r} that allows it (from now on)'
    if run_id is None:
        return f"approve it with {forever}"
    return (
        f"approve it with `toolscript approve {run_id}` (this call) or {forever}, then "
        f"`toolscript exec --resume {run_id}` or run the same script again"
    )


@dataclass
class Prompt:
    """A call of an interactive run waiting for the user's answer."""

    call: dict[str, Any]
    answer: asyncio.Future[Any]  # an approval's answer (ANSWERS), or an elicitation's result


@dataclass(eq=False)
class Run:
    id: str
    token: str
    script_hash: str
    origin: str
    interactive: bool
    max_calls: int
    started: float
    resumed_from: str = ""
    replay: list[dict[str, Any]] = field(default_factory=list)  # the resumed run's answers
    replayed: int = 0  # how many of them were answered again
    resume_call: tuple[str, str] | None = None  # (tool, digest) the resumed run stopped at
    resume_kept: bool = False  # it made no call: the run it resumed waits for a resume again
    # answers of the run it resumes that held a secret, which the log keeps as ``***`` and
    # this gateway did not keep whole (the one that ran it stopped since): the script sees ***
    masked_answers: int = 0
    seq: int = 0
    answered: list[dict[str, Any]] = field(default_factory=list)  # this run's, for a resume
    answers_count: int = 0  # of its answers kept for a resume, those written too (their seq)
    records: list[dict[str, Any]] = field(default_factory=list)  # every call, for --trace
    stopped: PolicyError | None = None
    prompt: Prompt | None = None
    prompted: asyncio.Event = field(default_factory=asyncio.Event)
    ended: bool = False
    ended_at: float | None = None
    exit: int | None = None
    kept_bytes: int = 0  # of answers kept for a resume
    held: int = 0  # bytes of ``answered`` now (counted in RunBook's REPLAY_TOTAL)
    resumable: bool = True  # False once the answers outgrew REPLAY_BYTES
    span: Any = None
    script: str = ""
    script_name: tuple[str, str] = ("inline.ts", "inline.ts")
    # the sandbox's limits it was given or carried over from the run it resumes (timeout,
    # memory_mb, max_output; those unset are the runner's defaults): a resume keeps them
    limits: dict[str, float] = field(default_factory=dict)
    client: str = ""  # the process running the script (process_identity), when it said
    died: bool = False  # that process went away before the run ended
    background: bool = False  # run by the gateway's own runner (``gateway/background.py``)
    cancelled: bool = False  # stopped by `toolscript runs stop` (or the MCP face's client)
    progress: list[dict[str, Any]] = field(default_factory=list)  # the newest reports
    progress_dropped: int = 0  # reports before ``progress[0]``, no longer kept
    progressed: asyncio.Event = field(default_factory=asyncio.Event)  # set at each report
    calling: dict[str, int] = field(default_factory=dict)  # server -> its calls under way
    seen: float = field(default_factory=time.monotonic)  # its last sign of life
    expired: bool = False  # no process claimed it and it went silent (UNCLAIMED_SILENCE)
    by_agent: bool = False  # registered through the agent's URL (its own MAX_LIVE_RUNS)
    questions_waiting: int = 0  # a server's questions waiting for the one asked
    stop_logged: bool = False  # the log has its stopped call whole; ``stopped`` is trimmed
    logged_bytes: int = 0  # of its itemized call records (RUN_LOG_BYTES)
    unlogged: int = 0  # calls made past RUN_LOG_BYTES: counted, not itemized
    # its script's check under way while it runs (``RunBook.hold``): True once it passed
    checking: asyncio.Future[bool] | None = None
    # the secrets a result it received held whole: their runs in what it wrote are masked
    # (``redact``'s ``received``), its arguments' records sharing this set
    received: set[str] = field(default_factory=set)

    @property
    def agents(self) -> bool:
        """Whether the agent wrote it and reads what it answers: registered through the
        agent's URL, or run by the MCP face (the agent's own client). A person's runs (an
        exec of theirs, a background run they started) are not shown to the agent."""
        return self.by_agent or self.origin == "mcp"

    @property
    def status(self) -> str:
        if self.died:
            return "died"
        if self.expired and not isinstance(self.stopped, ApprovalRequiredError):
            return "expired"  # (one stopped for approval stays approvable, as it would ended)
        if self.cancelled and self.ended:
            return "stopped"
        if self.approving:
            return "prompting"  # kept so: a gateway gone meanwhile leaves it approvable
        if self.stopped is not None:
            return (
                "awaiting_approval"
                if isinstance(self.stopped, ApprovalRequiredError)
                else (self.stopped.kind)
            )
        if not self.ended:
            return "running"
        return "ok" if self.exit == 0 else "failed"

    @property
    def approving(self) -> bool:
        """Whether a call waits for the user's approval (not a server's question)."""
        return (
            self.prompt is not None
            and not self.ended
            and self.prompt.call.get("kind") != ELICITATION
        )

    def ended_answer(self) -> dict[str, Any]:
        """What ending the run answers (``POST /runs/{id}/end``, the face's own call): its
        status and the error it stopped with."""
        return {
            "id": self.id,
            "status": self.status,
            "stopped": self.stopped.to_dict() if self.stopped is not None else None,
            "exit_code": self.stopped.exit_code if self.stopped is not None else None,
            "resumed_from": self.resumed_from or None,
            "resume_kept": self.resume_kept,
            "replayed": self.replayed,
            "call_count": self.seq,  # calls the script asked for (made, refused, stopped at)
        }

    def row(self, known: tuple[str, ...] = ()) -> dict[str, Any]:
        """The run's record; the script only while it waits for approval (``--resume`` runs
        it again), and never when a configured secret is written in it whole (in any
        spelling masking knows: base64...). One holding only runs of a secret is kept: kept
        or not by its runs told its author which of the guesses it wrote were runs."""
        stopped = self.stopped.to_dict() if self.stopped is not None else None
        if self.prompt is not None and self.approving:
            stopped = {"error": "approval_required", "call": self.prompt.call | {"run": self.id}}
        keep_script = self.status in ("awaiting_approval", "prompting") and not may_hold_secret(
            self.script, known, runs=False
        )
        row = {
            "id": self.id,
            "script_hash": self.script_hash,
            "origin": self.origin,
            "started": self.started,
            "ended": self.ended_at,
            "exit": self.exit,
            "status": self.status,
            "calls": self.seq,
            "resumed_from": self.resumed_from,
            "stopped": msgspec.json.encode(stopped).decode() if stopped else "",
            "script": self.script if keep_script else "",
            "script_name": msgspec.json.encode(self.script_name).decode(),
            "client": self.client,
            "by_agent": int(self.by_agent),
            "limits": msgspec.json.encode(self.limits | {"max_calls": self.max_calls}).decode(),
        }
        if self.stop_logged:  # written again (a call that ended after it): keep the whole
            del row["stopped"]
        return row


class RunBook:
    """The gateway's runs: registration, each call's checks, prompts and the log."""

    def __init__(
        self,
        runlog: RunLog,
        secrets_of: Callable[[], tuple[str, ...]],
        decision: Callable[[str], str],  # server__tool -> allow, ask or deny
        telemetry: Any = None,
        owner: str = "",  # the gateway's process_identity, kept with each run it holds
        # server__tool -> the identity of its server ('' unknown: no approval holds); the
        # default, one identity for every server, is for a run book without a config
        identity: Callable[[str], str] = lambda qualified: "any",
    ) -> None:
        self.runlog = runlog
        self.owner = owner
        self._secrets_of = secrets_of
        self._decision = decision
        self.identity = identity
        self.telemetry = telemetry
        self._runs: dict[str, Run] = {}
        self._by_token: dict[str, Run] = {}
        self._calls: list[dict[str, Any]] = []
        self._dirty: dict[str, Run] = {}
        self._flush_lock = anyio.Lock()
        self._replays: dict[str, Run] = {}  # runs stopped for approval: their answers to keep
        # run id -> {seq: answer}: a stopped run's answers that held a secret, as they came
        self._secret_answers: dict[str, dict[int, bytes]] = {}
        self._unwritten_since: float | None = None
        # registrations past the MAX_LIVE_RUNS check, not yet live: the owner's, the agent's
        self._registering = [0, 0]
        self.answers_held = 0  # bytes of every run's ``answered`` (REPLAY_TOTAL)
        self.closing = False  # the gateway is stopping: watchers' waits answer at once

    def close(self) -> None:
        """The gateway is stopping: every watcher's wait answers now (each run ended), not at
        its next look, while the gateway still holds its port: exec stops its script then."""
        self.closing = True
        for run in self._runs.values():
            run.progressed.set()

    # -- registration ----------------------------------------------------------

    @property
    def live(self) -> int:
        """How many runs are under way (registered, not ended)."""
        return len(self._by_token)

    def by_token(self, token: str) -> str | None:
        """The id of the live run whose token is ``token`` (the guard's question)."""
        run = self._by_token.get(token)
        if run is None or run.ended:
            return None
        run.seen = time.monotonic()  # a sign of life: its script is at work
        return run.id

    # -- a script run while its check is under way ----------------------------

    def hold(self, run_id: str) -> bool:
        """Hold every request of ``run_id``'s token at the guard until ``settle``; whether
        they are (not for a run that ended, or that this gateway does not know)."""
        run = self._runs.get(run_id)
        if run is None or run.ended:
            return False
        if run.checking is None or run.checking.done():
            run.checking = asyncio.get_running_loop().create_future()
        return True

    def settle(self, run_id: str, passed: bool, *, reissue: bool = False) -> str | None:
        """The check's verdict on ``run_id``'s script: passed, its held requests go on; not,
        they are refused. With ``reissue`` the run gets a fresh token, returned, and its
        requests are no longer held (the script runs again, checked by Deno itself): a request
        of the process that ran it unchecked still on its way is refused by its old token."""
        run = self._runs.get(run_id)
        if run is None:
            return None
        if run.checking is not None and not run.checking.done():
            run.checking.set_result(passed)
        if passed:
            run.checking = None
        if not reissue or run.ended:
            return None
        run.checking = None
        self._by_token.pop(run.token, None)
        run.token = "r" + secrets.token_urlsafe(24)
        self._by_token[run.token] = run
        return run.token

    async def cleared(self, run_id: str) -> bool:
        """Whether a request of ``run_id``'s token may go on: at once unless its script's
        check is under way (``hold``), else once it passed."""
        run = self._runs.get(run_id)
        checking = run.checking if run is not None else None
        if checking is None:
            return True
        return await asyncio.shield(checking)

    async def register(
        self,
        script_hash: str = "",
        origin: str = "http",
        interactive: bool = False,
        max_calls: int | None = None,
        resume: str | None = None,
        script: str = "",
        script_name: tuple[str, str] = ("inline.ts", "inline.ts"),
        client_pid: int | None = None,
        by_agent: bool = False,
        limits: Mapping[str, float | None] | None = None,
    ) -> Run:
        """A new run; it resumes ``resume``, or else the newest run of the same script that
        stopped for a call approved since. Refused past MAX_LIVE_RUNS runs under way of
        those the same URL registered (``by_agent``: the agent's, else the owner's).

        ``max_calls`` and ``limits`` (the sandbox's: timeout, memory_mb, max_output) left
        None are the resumed run's, else DEFAULT_MAX_CALLS and the runner's defaults."""
        mine = sum(run.by_agent == by_agent for run in self._by_token.values())
        if mine + self._registering[by_agent] >= MAX_LIVE_RUNS:
            raise TooManyRunsError(
                f"this gateway already has {MAX_LIVE_RUNS} runs under way (registered "
                f"{'through the agent' + chr(39) + 's URL ' if by_agent else ''}and not ended), "
                "as many as it holds at once; this run was not registered",
                hint="wait for a run to end, or stop the runs registered and never run "
                "(`toolscript runs stop RUN_ID`); a run no running process claims ends by itself "
                f"after {UNCLAIMED_SILENCE / 60:.0f} minutes without a call, and a restart of the "
                "gateway ends them all (`toolscript runs` lists them)",
            )
        self._registering[by_agent] += 1  # counted from here: those at once pass the cap alone
        try:
            return await self._register(
                script_hash,
                origin,
                interactive,
                max_calls,
                resume,
                script,
                script_name,
                client_pid,
                by_agent,
                {key: value for key, value in (limits or {}).items() if value is not None},
            )
        finally:
            self._registering[by_agent] -= 1

    async def _register(
        self,
        script_hash: str,
        origin: str,
        interactive: bool,
        max_calls: int | None,
        resume: str | None,
        script: str,
        script_name: tuple[str, str],
        client_pid: int | None,
        by_agent: bool,
        limits: dict[str, float],
    ) -> Run:
        # The agent resumes only its own runs: a person's run stopped for approval replays
        # what its calls answered, to whoever resumes it.
        previous: dict[str, Any] | None = None
        if resume:
            previous = await self._logged_run(resume, by_agent)
            _require_resumable(previous)
        elif script_hash:
            try:
                previous = await anyio.to_thread.run_sync(
                    functools.partial(
                        self.runlog.resumable, script_hash, self.identity, agents_only=by_agent
                    )
                )
            except RunLogError as exc:  # the script still runs; it resumes nothing
                log.warning("runs: %s; nothing is resumed", exc)
        run = Run(
            id=new_run_id(),
            token="r" + secrets.token_urlsafe(24),
            script_hash=script_hash,
            origin=origin,
            interactive=interactive,
            max_calls=DEFAULT_MAX_CALLS if max_calls is None else max_calls,
            started=time.time(),
            script=script if len(script) <= KEPT_SCRIPT_BYTES else "",
            script_name=script_name,
            client=process_identity(client_pid) if client_pid else "",
            by_agent=by_agent,
        )
        if previous is not None and not await anyio.to_thread.run_sync(
            self.runlog.claim_resume, previous["id"]
        ):
            if resume:  # another exec resumed it first: its approved call runs once
                raise UsageError(
                    f"run {previous['id']} was resumed already",
                    hint="`toolscript runs` shows the run that resumed it",
                )
            previous = None
        if previous is not None:
            run.resumed_from = previous["id"]
            # what the resume does not set itself, it keeps of the run it resumes
            carried = _carried_limits(previous.get("limits"))
            if max_calls is None and "max_calls" in carried:
                run.max_calls = int(carried["max_calls"])
            carried.pop("max_calls", None)
            limits = carried | limits
            run.replay = await anyio.to_thread.run_sync(self.runlog.replay, previous["id"])
            # (let go when the resume uses the approval: ``end``)
            whole = self._secret_answers.get(previous["id"], {})
            for entry in run.replay:  # the log's ``***`` made the script go another way
                if entry["seq"] in whole:
                    entry["body"] = whole[entry["seq"]]
                    entry["masked"] = 0
            run.masked_answers = sum(1 for entry in run.replay if entry.get("masked"))
            call = (previous.get("stopped") or {}).get("call") or {}
            run.resume_call = (str(call.get("tool", "")), str(call.get("digest", "")))
        run.limits = limits
        self._runs[run.id] = run
        self._by_token[run.token] = run
        self._dirty[run.id] = run
        if self.telemetry is not None:
            run.span = self.telemetry.run_started(run)
        return run

    async def stopped_script(self, run_id: str, by_agent: bool = False) -> dict[str, str]:
        """The script of a run that stopped for approval, for ``exec --resume RUN_ID``;
        ``by_agent``: asked through the agent's URL, which reads its own runs' alone."""
        found = await self._logged_run(run_id, by_agent)
        _require_resumable(found)
        if not found.get("script"):
            raise UsageError(
                f"the log keeps no script for run {found['id']} ({found['status']})",
                hint="give the script too: `toolscript exec --resume RUN_ID FILE.ts`",
            )
        display, file_name = found.get("script_name") or ("inline.ts", "inline.ts")
        return {"code": found["script"], "display_name": display, "file_name": file_name}

    async def _logged_run(self, run_id: str, by_agent: bool) -> dict[str, Any]:
        """A run of the log (a unique prefix of its id will do); through the agent's URL,
        one the agent registered: a person's runs, their scripts and what their calls
        answered are not the agent's to read, nor their ids (an ambiguous prefix names runs)."""
        found = await anyio.to_thread.run_sync(
            functools.partial(self.runlog.run, run_id, agents_only=by_agent)
        )
        if found is not None:
            return found
        if by_agent:
            raise NotFoundError(
                f"no run {run_id!r} of the agent's in this project's log",
                hint="the agent's URL reaches the runs it registered; a person resumes theirs "
                "with `toolscript exec --resume RUN_ID` on their own terminal",
            )
        raise NotFoundError(
            f"no run {run_id!r} in this project's log", hint="`toolscript runs` lists them"
        )

    def ids(self) -> list[str]:
        """The ids of the runs this gateway holds (live, and the last ended ones)."""
        return list(self._runs)

    def get(self, run_id: str) -> Run:
        run = self._runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no live run {run_id!r} in this gateway")
        return run

    async def end(self, run_id: str, exit_code: int | None) -> Run:
        """Close a run (the sandbox exited): its record and calls are written before this
        returns; an approval prompt still open is answered "stop"."""
        run = self.get(run_id)
        if not run.ended:
            asking = run.approving  # its prompt, answered "stop" below, stops it for approval
            run.ended = True
            run.ended_at = time.time()
            # A run the gateway stopped (approval, a diverging resume, --max-calls) ends
            # with that stop's code, as exec and `runs wait` end: not the 123 of its output
            # cut before the stop.
            stop_code = run.stopped.exit_code if run.stopped is not None else None
            run.exit = stop_code if stop_code is not None and exit_code is not None else exit_code
            if run.checking is not None and not run.checking.done():
                run.checking.set_result(False)  # ended before its check's verdict
            if run.prompt is not None and not run.prompt.answer.done():
                asking = run.prompt.call.get("kind") == ELICITATION
                run.prompt.answer.set_result({"action": "cancel"} if asking else "stop")
            run.prompted.set()  # a watcher waiting for a prompt learns that the run ended
            run.progressed.set()  # and one waiting for progress
            self._by_token.pop(run.token, None)
            self._dirty[run.id] = run
            if self.telemetry is not None:
                self.telemetry.run_ended(run)
            await self.flush(replay_of=run if run.status == "awaiting_approval" else None)
            if run.resumed_from and run.seq == 0 and run.status != "ok":
                # Its script never called anything (its type check failed, or it failed
                # first): the approved call is not spent, and the run it resumed waits again.
                with contextlib.suppress(RunLogError):
                    run.resume_kept = await anyio.to_thread.run_sync(
                        self.runlog.release_resume, run.resumed_from
                    )
            if run.resumed_from and not run.resume_kept:  # its answers kept whole: used up
                self._secret_answers.pop(run.resumed_from, None)
            if not asking and run.status != "awaiting_approval":
                # it cannot be resumed (done, refused, died...): what a prompt kept of it goes
                self._secret_answers.pop(run.id, None)
            if run.id not in self._replays:  # its answers written for a resume, or not wanted
                self._drop_answers(run)  # an ended run is kept (ENDED_KEPT), its results not
            if run.status != "awaiting_approval":
                run.script = ""  # the log keeps a script only for a resume (``Run.row``)
            if run.id not in self._dirty:  # written: the log keeps the stopped call whole
                self._lighten_stop(run)
            ended = [r for r in self._runs.values() if r.ended]
            for old in ended[: max(0, len(ended) - ENDED_KEPT)]:
                del self._runs[old.id]
            for old in ended[: max(0, len(ended) - TRACES_KEPT)]:
                old.records = []  # written to the log; only the newest answer --trace
                old.progress_dropped += len(old.progress)  # and their watchers' last reads
                old.progress = []
        return run

    # -- progress --------------------------------------------------------------

    def report_progress(
        self,
        run: Run,
        message: str,
        progress: float | None = None,
        total: float | None = None,
        source: str = "script",
    ) -> None:
        """Keep a progress report of ``run`` (its script's ``progress()``, or a server's
        ``notifications/progress`` during one of its calls) for whoever watches it."""
        if run.ended:
            return
        run.seen = time.monotonic()
        fraction = None
        if progress is not None and total:
            fraction = max(0.0, min(1.0, progress / total))
        elif progress is not None and total is None and 0.0 <= progress <= 1.0:
            fraction = progress
        run.progress.append(
            {
                "message": message[:MAX_PROGRESS_MESSAGE],
                "progress": progress,
                "total": total,
                "fraction": fraction,
                "source": source,
            }
        )
        if len(run.progress) > PROGRESS_KEPT:
            dropped = len(run.progress) - PROGRESS_KEPT
            del run.progress[:dropped]
            run.progress_dropped += dropped
        run.progressed.set()

    async def wait_progress(self, run_id: str, after: int, wait: float) -> dict[str, Any]:
        """The reports of ``run_id`` from number ``after`` on, waiting up to ``wait`` seconds
        for one: ``{"progress": [...], "next": N, "ended": bool}``. A stopping gateway says
        every run ended: exec stops its script then, while the gateway still holds its port
        (a script living on took it, and answered as the gateway)."""
        run = self.get(run_id)
        if after >= run.progress_dropped + len(run.progress) and not run.ended and wait > 0:
            run.progressed.clear()
            with anyio.move_on_after(min(wait, PROGRESS_WAIT)):
                while not (run.progressed.is_set() or self.closing):
                    with anyio.move_on_after(CLOSING_CHECK):
                        await run.progressed.wait()
        start = max(0, after - run.progress_dropped)
        reports = run.progress[start:]
        answer: dict[str, Any] = {
            "progress": reports,
            "next": run.progress_dropped + len(run.progress),
            "ended": run.ended or self.closing,
        }
        if self.closing:
            # What its script is told: the gateway stopped, with the calls it asked for and
            # those still under way (their outcome unknown to it).
            answer.update(closing=True, calls=run.seq, calling=sum(run.calling.values()))
        return answer

    # -- calls -----------------------------------------------------------------

    async def call(
        self, run: Run, qualified: str, arguments: dict[str, Any], size: int, make: Caller
    ) -> Answered:
        """One call of ``run``, through the checks of this module's docstring."""
        started = time.time()
        clock = time.perf_counter()
        run.seen = time.monotonic()
        run.seq += 1
        seq = run.seq
        key = ""  # the call's digest: computed only where a replay or an approval needs it
        outcome = "ok"
        status, shape, body = 200, "", b""
        try:
            if run.stopped is not None:
                raise run.stopped
            if run.seq > run.max_calls:
                raise self._stop(
                    run,
                    TooManyCallsError(
                        f"the run made more than {run.max_calls} tool calls and was stopped "
                        f"(at {call_named(qualified)})",
                        hint="raise --max-calls if the script really needs more",
                    ),
                )
            if run.replay or run.resume_call is not None:
                key = digest(qualified, arguments)
                answered = await self._replayed(run, qualified, key)
                if answered is not None:
                    outcome = "replayed"
                    status, shape, body = answered
                    return answered
            if self._decision(qualified) == "ask":
                key = key or digest(qualified, arguments)
                await self._approval(run, seq, qualified, arguments, key)
            if run.resume_call == (qualified, key):
                # The call the resumed run stopped at, made now (approved for this call or
                # for its tool, or allowed by a policy changed since): the replay is over.
                run.resume_call = None
            reporting = CALL_PROGRESS.set(
                lambda done, total, message: self.report_progress(
                    run, message or "", done, total, source=qualified
                )
            )
            server = qualified.partition("__")[0]
            run.calling[server] = run.calling.get(server, 0) + 1
            receiving = CALL_RECEIVED.set(run.received)
            try:
                shape, value = await make(qualified, arguments)
            finally:
                CALL_RECEIVED.reset(receiving)
                run.calling[server] -= 1
                if not run.calling[server]:
                    self._withdraw_question(run, server)
                run.seen = time.monotonic()  # silence counts from its last call's end
                CALL_PROGRESS.reset(reporting)
            body = msgspec.json.encode(value)
            return 200, shape, body
        except ToolscriptError as exc:
            outcome = exc.kind
            status, body = exc.status_code, msgspec.json.encode(exc.to_dict())
            return status, "", body
        finally:
            if status == 200 and body:
                self._receive(run, body)
            kept = arguments
            if size > LOGGED_ARGUMENTS:  # kept trimmed: identified by its digest for replay
                key = key or digest(qualified, arguments)
                kept = _trimmed(arguments, self._secrets_of())
            if outcome not in _NOT_ANSWERED and run.resumable:
                # the name too: a resource's holds its URI, as long as the request was
                added = len(body) + min(size, LOGGED_ARGUMENTS) + len(qualified)
                run.kept_bytes += added
                if run.kept_bytes > REPLAY_BYTES or self.answers_held + added > REPLAY_TOTAL:
                    run.resumable = False
                    self._drop_answers(run)
                else:
                    run.held += added
                    self.answers_held += added
                    run.answers_count += 1
                    run.answered.append(
                        {
                            "seq": run.answers_count,  # those a prompt wrote are dropped
                            "tool": qualified,
                            "digest": key,  # "" until the run's answers are kept
                            "arguments": kept,
                            "status": status,
                            "shape": shape,
                            "body": body,
                        }
                    )
            self._record(
                run,
                seq,
                qualified,
                kept,
                size,
                len(body),
                started,
                clock,
                outcome,
                body if status != 200 else b"",
            )

    def _receive(self, run: Run, body: bytes) -> None:
        """Note the secrets a result handed to ``run`` holds whole (a server that sends its
        token back): the script may pass them on in pieces, which no longer show as written."""
        known = [secret for secret in self._secrets_of() if secret not in run.received]
        if known:
            run.received |= held_secrets(body, known)

    def _drop_answers(self, run: Run) -> None:
        self.answers_held -= run.held
        run.held, run.answered = 0, []

    def _stop(self, run: Run, error: PolicyError) -> PolicyError:
        if run.stopped is None:
            run.stopped = error
            self._dirty[run.id] = run
        return error

    async def _replayed(self, run: Run, qualified: str, key: str) -> Answered | None:
        """The logged answer of this call, None when it is to be made; raises when the call
        is not the one the log holds at this point."""
        if run.replayed < len(run.replay):
            entry = run.replay[run.replayed]
            if entry["tool"] == qualified and entry["digest"] == key:
                run.replayed += 1
                return int(entry["status"]), str(entry["shape"] or ""), bytes(entry["body"])
            expected = entry["tool"]
        elif run.resume_call is not None:
            if run.resume_call == (qualified, key):
                return None  # the call the resumed run stopped at: made now, if approved
            expected = run.resume_call[0]
        else:
            return None
        message = (
            f"run {run.id} resumed {run.resumed_from}, whose log holds a call of {call_named(expected)} "
            f"at this point, but the script called {call_named(qualified)} (or other arguments); "
            "nothing more was called"
        )
        hint = (
            "the script or what its tools return changed: run it again without "
            "--resume (earlier calls will be made again)"
        )
        if run.masked_answers:
            message += (
                f". {run.masked_answers} of the answers it replayed held a secret, which the "
                "run log keeps as *** and only the gateway that ran it kept whole (it has "
                "stopped since): the script read *** in their place"
            )
            hint = (
                "run it again without --resume: earlier calls will be made again, and the "
                "call it stopped at asked again"
            )
        raise self._stop(run, ReplayDivergedError(message, hint=hint))

    async def _approval(
        self, run: Run, seq: int, qualified: str, arguments: dict[str, Any], key: str
    ) -> None:
        """Returns when the call may be made; raises when it may not. An approval holds for
        the server its call was shown with (its identity): a server whose config entry was
        repointed since (``IDENTITY_PARTS``) is asked about again."""
        identity = self.identity(qualified)
        why = ""  # why a call approved before asks again
        if run.resume_call == (qualified, key):
            if await anyio.to_thread.run_sync(
                self.runlog.use_call_approval, run.resumed_from, qualified, key, run.id, identity
            ):
                run.resume_call = None
                return
            given = await anyio.to_thread.run_sync(
                self.runlog.call_approval_server, run.resumed_from, qualified, key
            )
            if given is not None:
                why = _approved_elsewhere(run.resumed_from, qualified, given)
        if await anyio.to_thread.run_sync(self.runlog.tool_approved, qualified, identity):
            return
        known = self._secrets_of()
        shown = redact_value(arguments, known, written=sent_text(arguments), received=run.received)
        size = len(msgspec.json.encode(shown))
        call = {
            "seq": seq,
            "tool": qualified,
            "arguments": shown,
            "digest": key,
            "run": run.id,
            "server_identity": identity,  # what approving this call approves it for
        }
        if size > APPROVAL_ARGUMENTS:  # kept with the run trimmed: it cannot be shown whole
            raise self._stop(run, self._unshowable(run, call, arguments, size))
        while run.interactive:
            if why:
                call = call | {"why": why}  # the prompt says why it asks again
            answer = await self._ask(run, call)
            now = self.identity(qualified)
            if answer in ("yes", "always") and now != identity:
                # repointed while the person was asked: what they allowed is not what runs
                identity = now
                call = call | {"server_identity": now}
                why = (
                    f"server {qualified.partition('__')[0]!r} changed in the config "
                    f"({IDENTITY_PARTS}) while you were asked, so that answer did not hold"
                )
                continue
            if answer == "yes":
                return
            if answer == "always":
                await anyio.to_thread.run_sync(self.runlog.approve_tool, qualified, identity)
                return
            if answer == "no":
                raise CallRefusedError(
                    f"{call_named(qualified)}: the user refused this call", hint="do not retry it"
                )
            break
        view = shown_arguments(shown, MESSAGE_ARGUMENTS, one_line=True)
        arguments_text = view.text
        if view.shortened:
            arguments_text += f" ({shortened_notice(view, run.id)})"
        hint = approve_commands(run.id, qualified)
        if not run.resumable:
            hint = approve_commands(None, qualified) + (
                f", then run the script again (run {run.id}'s results outgrew what a resume "
                "keeps: earlier calls will be made again)"
            )
        again = f" again ({why})" if why else ""
        raise self._stop(
            run,
            ApprovalRequiredError(
                f"{call_named(qualified)} needs approval before it runs{again}; the call was not "
                f"made and run {run.id} stopped. Arguments: {arguments_text}",
                hint=hint,
                call=call,
            ),
        )

    def _lighten_stop(self, run: Run) -> None:
        """An ended run, kept in memory (ENDED_KEPT), holds the call it stopped at trimmed
        past LOGGED_ARGUMENTS: the log has it whole, for `runs show` and `approve`."""
        stopped = run.stopped
        if not isinstance(stopped, ApprovalRequiredError):
            return
        arguments = stopped.call.get("arguments")
        size = len(msgspec.json.encode(arguments))
        if isinstance(arguments, dict) and size > LOGGED_ARGUMENTS:
            run.stop_logged = True
            stopped.call = stopped.call | {
                "arguments": _trimmed(arguments, self._secrets_of(), run.received),
                "arguments_whole": False,  # never written: ``Run.row`` leaves the log's
                "arguments_bytes": stopped.call.get("arguments_bytes", size),
            }

    def _unshowable(
        self, run: Run, call: dict[str, Any], arguments: dict[str, Any], size: int
    ) -> ApprovalRequiredError:
        """The stop of a call too large to show whole: approvable only as its tool."""
        qualified = call["tool"]
        kept = call | {
            "arguments": _trimmed(arguments, self._secrets_of(), run.received),
            "arguments_whole": False,
            "arguments_bytes": size,
        }
        after = f"`toolscript exec --resume {run.id}`" if run.resumable else "run the script again"
        return ApprovalRequiredError(
            f"{call_named(qualified)} needs approval before it runs, and its arguments ({size} bytes) are "
            f"more than an approval can show whole ({APPROVAL_ARGUMENTS} bytes), so this call "
            f"cannot be approved by itself; the call was not made and run {run.id} stopped",
            hint=f"{approve_commands(None, qualified)} if every call of it may run unseen, "
            f"then {after}; or make the script pass smaller arguments",
            call=kept,
        )

    async def _ask(self, run: Run, call: dict[str, Any]) -> str:
        """The user's answer through whoever started the run (its prompt watcher)."""
        while run.prompt is not None:  # one question at a time
            with contextlib.suppress(Exception):
                await asyncio.shield(run.prompt.answer)
        prompt = Prompt(call, asyncio.get_running_loop().create_future())
        run.prompt = prompt
        run.prompted.set()
        self._dirty[run.id] = run
        with contextlib.suppress(Exception):  # kept as it asks: a gateway gone meanwhile
            await self.flush(replay_of=run)  # leaves the run approvable and resumable
        try:
            return await asyncio.wait_for(asyncio.shield(prompt.answer), PROMPT_LIMIT)
        except TimeoutError:
            return "stop"
        finally:
            if run.prompt is prompt:  # unless its answer cleared it already
                self._clear_prompt(run)

    def _withdraw_question(self, run: Run, server: str) -> None:
        """The question ``server`` is asking, once its calls of ``run`` ended: cancelled (it
        is about a call no longer under way; the person is not asked on)."""
        prompt = run.prompt
        if (
            prompt is not None
            and prompt.call.get("kind") == ELICITATION
            and prompt.call.get("tool") == server
            and not prompt.answer.done()
        ):
            prompt.answer.set_result({"action": "cancel"})
            self._clear_prompt(run)

    def _clear_prompt(self, run: Run) -> None:
        run.prompt = None
        run.prompted = asyncio.Event()
        self._dirty[run.id] = run

    def calling(self, server: str) -> list[Run]:
        """The live runs with a call of ``server`` under way."""
        return [r for r in self._by_token.values() if not r.ended and r.calling.get(server)]

    async def elicit(self, run: Run, server: str, message: str, schema: Any) -> dict[str, Any]:
        """A server's question (elicitation) during a call of ``run``, asked through whoever
        started it (its prompt watcher): ``{"action": "accept", "content"}``, ``decline`` or
        ``cancel`` (no answer within PROMPT_LIMIT). One question at a time, at most
        QUESTIONS_WAITING more held, and only while the run still calls ``server``: a server
        asking thousands at once held each (memory, a person asked on and on after its call
        ended, a shutdown of minutes); those are refused, the server hears why."""
        if run.prompt is not None and run.questions_waiting >= QUESTIONS_WAITING:
            raise UsageError(
                f"server {server!r} asked the user more questions at once than a person "
                f"answers ({QUESTIONS_WAITING} wait for the one asked): this one is refused"
            )
        run.questions_waiting += 1
        try:
            while run.prompt is not None:  # one question at a time
                with contextlib.suppress(Exception):
                    await asyncio.shield(run.prompt.answer)
        finally:
            run.questions_waiting -= 1
        if run.ended or not run.calling.get(server):
            raise UsageError(
                f"server {server!r} asked the user something after its call of run {run.id} "
                "ended: nobody is asked about a call no longer under way"
            )
        call = {"seq": run.seq, "kind": ELICITATION, "tool": server, "message": message}
        prompt = Prompt(call | {"schema": schema}, asyncio.get_running_loop().create_future())
        run.prompt = prompt
        run.prompted.set()
        try:
            answered: dict[str, Any] = await asyncio.wait_for(
                asyncio.shield(prompt.answer), PROMPT_LIMIT
            )
            return answered
        except TimeoutError:
            return {"action": "cancel"}
        finally:
            if run.prompt is prompt:
                self._clear_prompt(run)

    async def wait_prompt(self, run_id: str, wait: float) -> dict[str, Any] | None:
        """The call waiting for an answer in ``run_id`` (waiting up to ``wait`` s for one)."""
        run = self.get(run_id)
        if run.prompt is None and not run.ended:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.prompted.wait(), wait)
        return None if run.prompt is None else run.prompt.call

    def answer(self, run_id: str, seq: int, answer: str, content: Any = None) -> bool:
        """Answer the prompt of call ``seq`` (a server's question: ``accept`` with
        ``content``, ``decline`` or ``cancel``); False when no such prompt waits."""
        run = self.get(run_id)
        prompt = run.prompt
        asking = prompt is not None and prompt.call.get("kind") == ELICITATION
        allowed = ELICIT_ANSWERS if asking else ANSWERS
        if answer not in allowed:
            raise UsageError(f"answer one of {', '.join(allowed)}, not {answer!r}")
        if prompt is None or prompt.call["seq"] != seq or prompt.answer.done():
            return False
        if asking:
            given = content if answer == "accept" and isinstance(content, dict) else None
            prompt.answer.set_result({"action": answer} | ({"content": given} if given else {}))
        else:
            prompt.answer.set_result(answer)
        # Answered: no longer shown, though the run may still be flushing as it asks (a
        # watcher polling meanwhile would otherwise ask the person again).
        self._clear_prompt(run)
        return True

    # -- the log ---------------------------------------------------------------

    def _record(
        self,
        run: Run,
        seq: int,
        qualified: str,
        arguments: dict[str, Any],
        size: int,
        result_bytes: int,
        started: float,
        clock: float,
        outcome: str,
        error_body: bytes,
    ) -> None:
        ms = (time.perf_counter() - clock) * 1000
        if len(error_body) > LOGGED_ERROR:
            error_body = _short_error(error_body)
        name = _logged_name(qualified)  # a tool's fits CALL_RECORD_BYTES; a resource's may not
        cost = max(CALL_RECORD_BYTES, len(name)) + min(size, LOGGED_ARGUMENTS) + len(error_body)
        record = {
            "run_id": run.id,
            "seq": seq,
            "tool": name,
            "arguments": arguments,  # redacted when flushed: off the call's path
            "received": run.received,  # (its runs of these masked: ``Run.received``)
            "arguments_bytes": size,
            "result_bytes": result_bytes,
            "started": started,
            "ms": round(ms, 3),
            "outcome": outcome,
            "error": error_body,
        }
        self._dirty[run.id] = run
        if self.telemetry is not None:
            self.telemetry.call(run, record)
        if run.logged_bytes + cost > RUN_LOG_BYTES:
            if not run.unlogged:
                log.warning(
                    "runs: run %s made calls past the %d bytes of its calls the log keeps "
                    "itemized: the rest are counted only",
                    run.id,
                    RUN_LOG_BYTES,
                )
            run.unlogged += 1
            return
        run.logged_bytes += cost
        self._calls.append(record)
        run.records.append(record)

    async def run_flusher(self) -> None:
        """Write what runs did every FLUSH_SECONDS (the gateway's task group runs this), and
        end the runs whose exec went away."""
        while True:
            await anyio.sleep(FLUSH_SECONDS)
            try:
                await self.end_orphans()
                await self.flush()
            except Exception:  # nothing the log does takes the gateway down
                log.exception("runs: cannot write the run log")

    async def end_orphans(self, now: float | None = None) -> None:
        """End, as ``died``, each live run whose script's process is gone (an exec killed),
        and as ``expired`` each that no process claimed and that went silent."""
        now = time.monotonic() if now is None else now
        for run in list(self._runs.values()):
            if run.ended:
                continue
            if run.client:
                if not identity_alive(run.client):
                    run.died = True
                    await self.end(run.id, None)
            elif (
                not run.background
                and now - run.seen > UNCLAIMED_SILENCE
                and run.prompt is None
                and not any(run.calling.values())
            ):
                log.info("runs: run %s expired (no process claimed it, no call)", run.id)
                run.expired = True
                await self.end(run.id, None)

    async def flush(self, replay_of: Run | None = None) -> None:
        """Write what runs did. What cannot be written now (the log held by another process,
        its disk full) stays in memory, up to PENDING_CALLS calls, for the next flush."""
        async with self._flush_lock:
            if replay_of is not None:
                self._replays[replay_of.id] = replay_of
            calls, self._calls = self._calls, []
            runs, self._dirty = list(self._dirty.values()), {}
            replays, self._replays = self._replays, {}
            if not (calls or runs or replays):
                return
            secrets_now = self._secrets_of()

            def write() -> tuple[dict[str, dict[int, bytes]], list[str]]:
                # off the event loop: redaction and JSON cost per call, and the search of
                # each answer of a stopped run for a secret (up to REPLAY_BYTES of them)
                rows = [run.row(secrets_now) | {"owner": self.owner} for run in runs]
                call_rows = [_call_row(record, secrets_now) for record in calls]
                replay: list[dict[str, Any]] = []
                whole: dict[str, dict[int, bytes]] = {}  # the answers masked, as they came
                for run in replays.values():
                    for entry in list(run.answered):
                        kept = _kept(entry, run.id, secrets_now, run.received)
                        replay.append(kept)
                        if kept["body"] is not entry["body"]:
                            whole.setdefault(run.id, {})[int(entry["seq"])] = bytes(entry["body"])
                return whole, self.runlog.write(runs=rows, calls=call_rows, replay=replay)

            try:
                masked, dropped = await anyio.to_thread.run_sync(write)
            except ToolscriptError as exc:
                self._keep_unwritten(calls, runs, replays, exc)
                return
            for run_id, answers in masked.items():
                self._keep_secret_answers(run_id, answers)
            for run_id in dropped:  # no longer in the log: no resume can read its answers
                self._secret_answers.pop(run_id, None)
            for run in replays.values():
                self._drop_answers(run)  # written: a resume reads them from the log
            if self._unwritten_since is not None:
                log.warning("runs: the run log is written again; nothing was lost")
                self._unwritten_since = None

    def _keep_secret_answers(self, run_id: str, whole: dict[int, bytes]) -> None:
        """Keep in memory, as they came, the answers of run ``run_id`` the log keeps as
        ``***`` (``whole``, by seq): resumed through this gateway, the script sees what it saw
        (a server that sent its token back, passed on to a later call, would else make the
        resume diverge), with those kept at its earlier prompts. The oldest runs' go past
        SECRET_ANSWERS_TOTAL; a run's go when it can no longer be resumed (``end``, ``flush``)."""
        self._secret_answers[run_id] = self._secret_answers.pop(run_id, {}) | whole
        sizes = {key: sum(map(len, kept.values())) for key, kept in self._secret_answers.items()}
        for oldest in list(self._secret_answers)[:-1]:
            if sum(sizes.values()) <= SECRET_ANSWERS_TOTAL:
                break
            del self._secret_answers[oldest]
            del sizes[oldest]

    def _keep_unwritten(
        self, calls: list[dict[str, Any]], runs: list[Run], replays: dict[str, Run], exc: Exception
    ) -> None:
        self._calls = calls + self._calls
        dropped = len(self._calls) - PENDING_CALLS
        if dropped > 0:
            del self._calls[:dropped]
            log.warning(
                "runs: %d calls dropped from the run log (kept in memory too long)", dropped
            )
        for run in runs:
            self._dirty.setdefault(run.id, run)
        self._replays = replays | self._replays
        if self._unwritten_since is None:
            self._unwritten_since = time.time()
            later = "written later"
            if isinstance(exc, NewerRunLogError):  # (not by this toolscript: never)
                later = "not written: this gateway's are lost when it stops"
            log.warning("runs: %s; runs and calls are kept in memory, %s", exc, later)

    def trace(self, run: Run) -> list[dict[str, Any]]:
        """The run's calls as the run log shows them (redacted)."""
        secrets_now = self._secrets_of()
        return [_call_row(record, secrets_now) for record in run.records]


_NOT_ANSWERED = frozenset(
    {"approval_required", "replay_diverged", "too_many_calls", "call_refused"}
)


def _kept(
    entry: dict[str, Any], run_id: str, known: tuple[str, ...], received: Iterable[str] = ()
) -> dict[str, Any]:
    """An answer as the log keeps it for a resume: a configured secret in a result is kept
    as ``***`` (the log holds none), which is what a script resumed by another gateway sees
    (this one keeps the answer whole in memory: ``RunBook._keep_secret_answers``). Its body
    is the entry's own object unless it was masked. What it quotes of the call's arguments is
    kept as written (``redact``'s ``written``): masked, a resumed script read which of its
    guesses were runs of a secret (unless the run was handed it: ``Run.received``)."""
    body: bytes = entry["body"]
    if may_hold_secret(body, known):  # in any spelling (a base64 of it, a run of it)
        written = sent_text(entry["arguments"])
        text = body.decode("utf-8", "replace")
        body = redact(text, known, written=written, received=received).encode()
    kept = {key: value for key, value in entry.items() if key != "arguments"}
    key = entry["digest"] or digest(entry["tool"], entry["arguments"])
    masked = int(body is not entry["body"] or bool(entry.get("masked")))
    return kept | {"run_id": run_id, "body": body, "digest": key, "masked": masked}


def _approved_elsewhere(resumed: str, qualified: str, given: str) -> str:
    """Why the approval of the call run ``resumed`` stopped at does not hold for its server now
    (``given``: the identity it was approved for, '' when not bound to one)."""
    server = qualified.partition("__")[0]
    if not given:
        return (
            f"run {resumed}'s approval of this call was given before approvals were bound to "
            f"their server, so it is asked once more"
        )
    return (
        f"run {resumed}'s approval of this call was for server {server!r} as the config had it "
        f"when that run stopped; its entry changed since ({IDENTITY_PARTS})"
    )


def _trimmed(
    arguments: dict[str, Any], known: tuple[str, ...], received: Iterable[str] = ()
) -> Any:
    """Large arguments as the log keeps them: their first items and members, strings cut
    at ``ARGUMENT_LIMITS.string`` (after redaction: no piece of a secret is left)."""
    value, _ = shrunk(arguments, known, ARGUMENT_LIMITS, LOGGED_ARGUMENTS)
    limit = ARGUMENT_LIMITS.string

    def cut(item: Any) -> Any:
        if isinstance(item, str):
            return item if len(item) <= limit else item[:limit] + MORE
        if isinstance(item, list):
            return [cut(element) for element in item]
        if isinstance(item, dict):
            return {cut(key): cut(member) for key, member in item.items()}
        return item

    return cut(redact_value(value, known, written=sent_text(arguments), received=received))


def _logged_name(qualified: str) -> str:
    """A call's name as the log and ``--trace`` keep it: a resource's (``server__resource:
    URI``) cut at ``ARGUMENT_LIMITS.string`` as its arguments are, its URI being the script's
    to make as long as a request (a tool's name is 256 characters at most)."""
    limit = ARGUMENT_LIMITS.string
    return qualified if len(qualified) <= limit else qualified[:limit] + MORE


def _short_error(body: bytes) -> bytes:
    """A large error body as its message's first LOGGED_ERROR characters (what the log
    keeps of it is shorter still)."""
    try:
        message = str(msgspec.json.decode(body).get("message", ""))
    except (msgspec.DecodeError, AttributeError):
        message = body[:LOGGED_ERROR].decode("utf-8", "replace")
    return msgspec.json.encode({"message": message[:LOGGED_ERROR]})


def _call_row(record: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    error = ""
    if record["error"]:
        try:
            error = str(msgspec.json.decode(record["error"]).get("message", ""))
        except (msgspec.DecodeError, AttributeError):
            error = record["error"].decode("utf-8", "replace")  # LOGGED_ERROR at most
    # as written: runs of a secret in them were the script's guesses (unless it was handed
    # that secret: ``Run.received``, or the call holds it whole, as a person's script holding
    # the token does: a server's error quoting its start, 'key starts ghp_Zq8xR2mK', was kept
    # so in the run log's file, where the stderr and progress of that call masked it)
    written = sent_text(record["arguments"]) if known else ""
    received = record.get("received", ())
    if written and may_hold_secret(written, known, runs=False):
        received = {*received, *held_secrets(written, known)}
    row = {key: value for key, value in record.items() if key != "received"}
    return row | {
        "arguments": msgspec.json.encode(
            redact_value(record["arguments"], known, written=written, received=received)
        ).decode(),
        "error": cut_redacted(error, 2000, known, written=written, received=received),
    }
