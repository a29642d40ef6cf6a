"""What the MCP face's tools do, free of MCP: a gateway to ask, and scripts run as exec runs them.

The gateway is the project's running one (or ``TOOLSCRIPT_GATEWAY_URL``'s) when there is
one; otherwise the face starts one of its own, with no state file, served in a thread of
the face's own process (``gateway/inprocess.py``; a ``gateway start`` process with
``TOOLSCRIPT_FACE_GATEWAY=process``), and stops it when it exits. A gateway that stops
answering is looked for (or started) again on the next call, so a face outlives the
gateway it borrowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import io
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

from toolscript.codegen.naming import check_type_names, without_namespace
from toolscript.errors import (
    ConfigError,
    ExecutionError,
    GatewayError,
    GatewayResponseError,
    GatewayUnreachableError,
    ToolscriptError,
    TooManyRunsError,
    UntrustedConfigError,
    UsageError,
)
from toolscript.execution.background import stop_background
from toolscript.execution.command import (
    missing_import,
    require_saved,
    require_script_size,
    saved_script_call,
)
from toolscript.execution.lifeline import Lifeline
from toolscript.execution.locate import (
    BUILD_WAIT_MESSAGE,
    built_module_hash,
    current_module,
    face_gateway_args,
    face_gateway_in_process,
    gateway_request,
    module_hash,
    prove_gateway,
    running_gateway,
    unavailable_servers,
    wait_for_connecting_servers,
)
from toolscript.execution.runhandle import (
    ENDED_AT_GATEWAY,
    PROMPT_SECONDS,
    ProgressWatcher,
    PromptWatcher,
    RunHandle,
    SandboxOfRun,
    end_run,
    registered,
    script_hash,
    start_run,
)
from toolscript.execution.sandbox import (
    ERRORS_CUT,
    EXIT_MEMORY,
    EXIT_OUTPUT,
    EXIT_TIMEOUT,
    Advice,
    Limits,
    Script,
    policy_denial,
    run_toolscript,
)
from toolscript.execution.spare import Spare
from toolscript.gateway.inprocess import InProcessGateway
from toolscript.gateway.launch import LaunchedGateway, start_gateway, wait_for_url
from toolscript.gateway.local import LocalGateway
from toolscript.mcpface.configwatch import ConfigWatch
from toolscript.mcpface.tools import YIELD_AFTER
from toolscript.plumbing.boundedread import read_state_file
from toolscript.plumbing.paths import find_config_path, project_state_dir, user_state_dir
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.processes import signal_quietly
from toolscript.store.outputs import errors_file, output_file, visible_controls
from toolscript.store.packages import offered_note

# Asks the user to approve a call of a run: "yes", "no", "always" or "stop".
Approver = Callable[[dict[str, Any]], Coroutine[Any, Any, Any]]  # an answer, or a form's result

__all__ = [
    "YIELD_AFTER",
    "Answer",
    "Approver",
    "Backend",
    "FaceRun",
    "Reporter",
    "execution_answer",
    "read_result_marker",
    "result_marker",
    "search_answer",
    "servers_answer",
]


def result_marker() -> str:
    """The line holding a script's return value: its prefix names a nonce of the user's, so
    a server's text the script prints (a page, a file) cannot pass for the value. Kept in the
    user's state folder (0600), not drawn per process: the marker is part of the source a
    script is checked as, and a nonce of each face's made every script new to each face (a
    seen script checked again, the first result 0.5 s later). A kept output a face with
    another nonce wrote holds its own (``_ANY_MARKER``, taken out of it). Read on first use,
    then kept for the process (per state folder): importing this module touches no file."""
    return _kept_marker(user_state_dir())


_MARKERS: dict[Path, str] = {}
_MARKERS_LOCK = threading.Lock()


def _kept_marker(state_dir: Path) -> str:
    # Drawn once per process: two executes of a face's first moments (two clients) each drew
    # a nonce of their own, and a run wrapped with one was read with the other (the value
    # lost, answered as null).
    with _MARKERS_LOCK:
        if state_dir not in _MARKERS:
            _MARKERS[state_dir] = read_result_marker(state_dir)
        return _MARKERS[state_dir]


def read_result_marker(state_dir: Path) -> str:
    """The marker kept in ``state_dir``, drawn (and kept there) when it has none or a damaged one."""
    path = state_dir / "result-marker"
    try:
        nonce = read_state_file(path, limit=64).strip()
    except (OSError, UnicodeError):
        nonce = ""
    if not re.fullmatch(r"[0-9a-f]{16}", nonce):
        nonce = secrets.token_hex(8)
        with contextlib.suppress(OSError):  # (a folder not writable: this process's own)
            write_private(path, nonce)
            # another process drawing at the same moment: the one kept is the one all use
            kept = read_state_file(path, limit=64).strip()
            if re.fullmatch(r"[0-9a-f]{16}", kept):
                nonce = kept
    return f"\x1etoolscript-result-{nonce}:"


_ANY_MARKER = re.compile(r"\x1etoolscript-result(?:-[0-9a-f]{16})?:")
SCRIPT_NAME = "script.ts"  # what type errors and stack frames call the agent's code
# Bytes of a script's output an answer holds (it all goes into the model's context); past
# them, what fit, a preview (at most 16 KB) and the whole as a resource. With the preview,
# under the 50,000 characters past which newer Claude Code puts a result in a file of its
# own, and the 10,000 tokens past which it warns (it refuses one past 25,000 tokens,
# MAX_MCP_OUTPUT_TOKENS); other clients take it all.
MAX_OUTPUT = 32_000
# Executes under way at once (yielded ones too): as many runs as a gateway holds of one URL
# (``gateway.runbook.MAX_LIVE_RUNS``, not imported: the face never loads the run book)
RUNS_AT_ONCE = 32
# Of them, the last bytes of stderr, kept apart: stderr past the rest never stops a script
# (exec's does, past --max-output); its first part, a note of what was cut and its end (the
# error a script ends with) are shown, the whole is a resource.
ERRORS_KEPT = 4_000
OWNED_START_WAIT = 120.0
# seconds the next spare waits after a run: its spawn (Python work and a fork) then competes
# with the answer's way out of the face for neither the GIL nor the CPU
SPARE_AFTER = 0.005
SAVE_TIMEOUT = 240.0  # seconds: saving type-checks every saved script
REQUEST_TIMEOUT = 120.0  # seconds for any other answer of the gateway's
FACE_ADVICE = Advice(
    timeout="pass a larger timeout, in seconds",
    output="print less: filter in the script and return only what is needed",
    memory="hold less in memory at once",
)
_TYPE_ERROR = re.compile(r"\bTS\d+ \[ERROR\]|error: Type checking failed")
# Deno's advice after a failed check names a flag the face does not have. Blanks within
# its line only: "\s*" crossed lines, quadratic in the blank lines a script printed.
_CHECK_ADVICE = re.compile(
    r"^[ \t]*(?:info: The program failed type-checking.*|hint: Re-run with --no-check.*)\n?",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Answer:
    """One tool result: text for the model, structured data when the tool declares a shape."""

    text: str
    structured: dict[str, Any] | None = None
    is_error: bool = False
    outputs: tuple[str, ...] = ()  # URIs of whole outputs kept as resources (cut output)


def _shown(answer: Answer) -> Answer:
    """A run's answer with the script's control characters in its text made visible (the
    client may show it on a terminal); the structured result stays as the script made it."""
    return dataclasses.replace(answer, text=visible_controls(answer.text))


# Hints the gateway words for the command line, as this face's tools do the same: an MCP
# client's model may have no shell to run them in.
_FACE_HINTS = (
    (re.compile(r"see `toolscript list-tools ([^`]+)`"), r'get_types with ["\1"] lists them'),
    (re.compile(r"`toolscript save NAME FILE\.ts`"), "save_script"),
    (re.compile(r"`toolscript list-scripts` lists them"), "search_tools finds them (script.NAME)"),
    (  # a saved script that no longer checks (execution/command.py, require_saved)
        re.compile(r"^edit .+ until it checks .*`toolscript save --force (\S+) FILE\.ts`$"),
        r"save_script with name \1, the fixed code and force: true",
    ),
    (  # the person trusts a config, never the model (a client with a shell would run it)
        re.compile(r"^read it(?: \([^)]*\))?, then run `toolscript trust` in (.+)$"),
        r"the user must read it and run `toolscript trust` in \1 themselves (not you: ask "
        r"them); tool calls then start its servers",
    ),
)


_CONFIG_NEXT = (
    "No tool can be used until the config file is fixed (by you or the user); the next tool "
    "call reads it again."
)


def error_answer(error: ToolscriptError) -> Answer:
    """The message, any errors it lists (a script that does not type-check), the hint."""
    listed = getattr(error, "errors", None)
    if listed is None and isinstance(error, GatewayResponseError):
        listed = error.body.get("errors")
    text = error.message + "".join(f"\n{line}" for line in listed or [])
    hint = error.hint or ""
    for cli, face in _FACE_HINTS:
        hint = cli.sub(face, hint)
    text += f"\nhint: {hint}" if hint else ""
    if isinstance(error, ConfigError):  # it quotes the file, which a repository may have made
        text = visible_controls(text)
        if not isinstance(error, UntrustedConfigError):
            text += f"\n{_CONFIG_NEXT}"
    return Answer(text, is_error=True)


def _one_line(text: str, width: int = 160, *, sentence: bool = True) -> str:
    """The first sentence (or, for an error, whose "#! " or "? " ends none, the first line)
    of ``text``, cut to ``width``."""
    first = (text or "").strip().split("\n", 1)[0]
    cut = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0] if sentence else first
    return cut if len(cut) <= width else cut[: width - 1] + "…"


def _both_ends(text: str, head: int = 160, tail: int = 240) -> str:
    """An error on one line, its start and its end kept when it is long: the end says what
    to do (the variable to pass, the file to fix), the start what happened."""
    whole = " ".join((text or "").split())
    if len(whole) <= head + tail + 3:
        return whole
    return f"{whole[:head]} … {whole[-tail:]}"


def _described(hit: dict[str, Any]) -> str:
    """A hit's first sentence, saying the tool is deprecated when the description said so
    after it ("Read a file as text. DEPRECATED: Use read_text_file instead.")."""
    shown = _one_line(hit.get("description") or "")
    return (
        f"{shown} (deprecated)"
        if hit.get("deprecated") and "deprecat" not in shown.lower()
        else shown
    )


def search_answer(answer: dict[str, Any], states: dict[str, str] | None = None) -> Answer:
    """Hits as one line each (``server.tool → tools.x.y: description``) and as data;
    ``states``: each server's state, a server of a hit not connected said to be."""
    hits = [
        {
            # A saved script has no server: it is called as scripts.<name> (or run_script).
            "server": hit["server"] if hit.get("kind") != "script" else "script",
            "tool": hit["tool"],
            "call": hit.get("call") or f"tools.{hit['server']}.{hit['tool']}",
            "description": _described(hit),
            "score": hit["score"],
        }
        for hit in answer.get("hits", [])
    ]
    if not hits:
        text = "No tool matches. Try other words, one need per search, or list_servers."
    else:
        text = "\n".join(
            f"{hit['server']}.{hit['tool']} → {hit['call']}: {hit['description']}" for hit in hits
        )
        if answer.get("weak") and answer.get("unsearched"):  # the answer may be theirs
            text = "Nothing matched well among the servers searched. The nearest tools:\n" + text
        elif answer.get("weak"):  # the nearest tools of a request none is close to
            text = (
                "Nothing matched well: no tool is close to this request in meaning, so likely "
                "no configured server does it (tell the user; list_servers shows what they "
                "offer). The nearest tools:\n" + text
            )
    if answer.get("mode") == "keyword":
        # why, as the gateway says it: loading, turned off, or not installed
        reason = (answer.get("search") or {}).get("reason") or "semantic search is still loading"
        text += f"\n(keyword search only: {reason}; a request no tool fits is not flagged)"
    listed = sorted({hit["server"] for hit in hits} & set(states or {}))
    for name in listed:
        state = (states or {})[name]
        if state not in ("connected", "disabled"):
            text += (
                f"\n({name} is {state}: its tools above are from its last listing, and a call"
                " of one fails until it connects; list_servers says why)"
            )
    if answer.get("unbuilt"):
        text += f"\n({answer['unbuilt']})"
    if answer.get("unsearched"):  # their tools may be the answer: not "none fits" yet
        named = ", ".join(f"{one['name']} ({one['state']})" for one in answer["unsearched"])
        text += (
            f"\n(not searched, no tools listed yet: {named}; search again once list_servers "
            "shows them connected)"
        )
    # None: keywords alone cannot tell (as `toolscript search --json` says it)
    weak = None if answer.get("weak") is None and "weak" in answer else bool(answer.get("weak"))
    data: dict[str, Any] = {"hits": hits, "weak": weak}
    if answer.get("unsearched"):
        data["unsearched"] = [
            {"name": str(one["name"]), "state": str(one["state"])} for one in answer["unsearched"]
        ]
    return Answer(text, data)


def resource_answer(read: dict[str, Any]) -> Answer:
    """A resource's text as text (bytes as their size and type; base64 in the data)."""
    parts = []
    for item in read.get("contents", []):
        if isinstance(item.get("text"), str):
            parts.append(item["text"])
        else:
            size = len(str(item.get("blob", ""))) * 3 // 4
            parts.append(f"({size} bytes of {item.get('mimeType') or 'binary data'})")
    return Answer(visible_controls("\n".join(parts)), read)


def prompt_answer(got: dict[str, Any]) -> Answer:
    """A prompt's messages, each as ``[role] text``."""
    lines = []
    for message in got.get("messages", []):
        content = message.get("content") or {}
        text = content.get("text")
        shown = text if isinstance(text, str) else json.dumps(content, ensure_ascii=False)
        lines.append(f"[{message.get('role', '')}] {shown}")
    return Answer(visible_controls("\n".join(lines)), got)


def offerings_answer(resources: dict[str, Any], prompts: dict[str, Any]) -> Answer:
    """What a server offers besides tools, a line each."""
    lines = [
        f"resource {item.get('uri', '')}: {_one_line(item.get('description') or item.get('name') or '')}"
        for item in resources.get("resources", [])
    ]
    lines += [
        f"template {item.get('uriTemplate', '')} ({', '.join(item.get('parameters', []))}): "
        f"{_one_line(item.get('description') or item.get('name') or '')}"
        for item in resources.get("templates", [])
    ]
    lines += [
        f"prompt {item.get('name', '')}"
        f"({', '.join(str(a.get('name', '')) for a in item.get('arguments') or [])}): "
        f"{_one_line(item.get('description') or item.get('title') or '')}"
        for item in prompts.get("prompts", [])
    ]
    data = {
        "resources": resources.get("resources", []),
        "templates": resources.get("templates", []),
        "prompts": prompts.get("prompts", []),
    }
    text = "\n".join(lines) or "This server offers no resources or prompts."
    return Answer(visible_controls(text), data)


def servers_answer(servers: list[dict[str, Any]]) -> Answer:
    rows = [
        {
            "name": server["name"],
            "state": server["state"],
            "tools": server.get("tools", 0),
            "description": server.get("description"),
            "error": server.get("error"),
        }
        # a server listing none now whose last listing search and get-types still serve
        | (
            {"last_known_tools": server["last_known_tools"]}
            if server.get("last_known_tools")
            else {}
        )
        for server in servers
    ]
    lines = []
    for row in rows:
        line = f"{row['name']}: {row['state']}, {row['tools']} tools"
        if row.get("last_known_tools") and not row["tools"]:  # still searchable and typed
            line += f" ({row['last_known_tools']} as last listed, by the last build)"
        if row["description"]:
            line += f" ({_one_line(row['description'], 100)})"
        if row["error"]:
            line += f"; error: {_both_ends(row['error'])}"
        lines.append(line)
    # its controls made visible, as every other answer's: a server's error is its own text
    return Answer(
        visible_controls("\n".join(lines)) or "No servers are configured.", {"servers": rows}
    )


def normalize_tool_name(name: str, servers: Collection[str] = ()) -> str:
    """``server.tool``, ``tools.server.fn`` or ``server__tool`` as the gateway's
    ``server__tool``; a bare server name stays as it is (all of its tools). A server
    name may hold dots (``acme.docs``): the longest of ``servers`` that ``name`` starts
    with is its server, not the text before its first dot."""
    name = without_namespace(name.strip(), servers)
    if "__" in name or name in servers:
        return name
    for server in sorted(servers, key=len, reverse=True):
        if name.startswith(server + ".") and len(name) > len(server) + 1:
            return f"{server}__{name[len(server) + 1 :]}"
    server, dot, tool = name.partition(".")
    return f"{server}__{tool}" if dot and tool else server


def in_their_words(error: GatewayResponseError, typed: dict[str, str]) -> GatewayResponseError:
    """``error`` naming each tool as the agent wrote it (``tools.time.nope``), not as the
    gateway's ``time__nope`` or ``time.nope``, which the agent never typed."""

    def spelled(text: str) -> str:
        for internal, own in typed.items():
            if "__" not in internal:
                continue
            for other in (internal, internal.replace("__", ".", 1)):
                if other != own:
                    # (``own`` is the agent's text: its "\1" or "\p" no template's escape)
                    verbatim = own.replace("\\", "\\\\")
                    text = re.sub(rf"(?<![\w.]){re.escape(other)}(?!\w)", verbatim, text)
        return text

    body = {**error.body, "message": spelled(error.message)}
    if error.hint:
        body["hint"] = spelled(error.hint)
    return GatewayResponseError(body["message"], status_code=error.status_code, body=body)


# A run that printed nothing and returned nothing: an agent's script ending on
# `await tools.x.y(...)` without `return` is told how to get the value back.
NO_OUTPUT = "(no output: nothing returned or printed; `return VALUE` gives VALUE back)"


def execution_answer(exit_code: int, stdout: bytes, stderr: bytes, calls: int | None = 0) -> Answer:
    """A finished run as a tool result: the return value as data, output and errors as text.
    ``calls``: the tool calls the script asked for, as its gateway counted them (None:
    unknown).
    A failed check is told from what was printed, which a script can print too: "nothing
    ran" is said only when no call was made, as an agent told so runs the script again."""
    printed_lines, result, has_result = [], None, False
    marker = result_marker()
    for line in stdout.decode("utf-8", "replace").split("\n"):
        if line.startswith(marker):
            try:
                result, has_result = json.loads(line[len(marker) :]), True
            except (ValueError, RecursionError):  # RecursionError: nested past Python's limit
                printed_lines.append(line[len(marker) :])
        else:
            printed_lines.append(line)
    printed = "\n".join(printed_lines).strip("\n")
    errors = stderr.decode("utf-8", "replace").strip("\n")
    if exit_code == 0:
        parts = [part for part in (printed, errors) if part]
        if has_result:
            parts.append(json.dumps(result, ensure_ascii=False))
        return Answer("\n".join(parts) or NO_OUTPUT, {"result": result})
    if calls == 0 and _TYPE_ERROR.search(errors):
        errors = _CHECK_ADVICE.sub("", errors).strip("\n")
        headline = (
            "The script does not type-check, so nothing ran. Fix these errors "
            f"({SCRIPT_NAME}:line:column) and call execute again; get_types shows the declarations."
        )
    elif exit_code in (EXIT_TIMEOUT, EXIT_OUTPUT, EXIT_MEMORY):
        headline = "The script was stopped at a limit."
    else:
        headline = f"The script failed (exit code {exit_code})."
    if calls:
        headline += (
            f" It ran and asked for {calls} tool call{'s' * (calls != 1)} before it ended: "
            "check what they did before running it again."
        )
    elif calls is None and exit_code not in (EXIT_TIMEOUT, EXIT_OUTPUT, EXIT_MEMORY):
        headline += " Whether it made tool calls is not known: check before running it again."
    parts = [headline]
    if printed:
        parts.append("Output before the failure:\n" + printed)
    if errors:
        parts.append(errors)
    return Answer("\n".join(parts), is_error=True)


YIELDED_KEPT = 20  # runs execute yielded that the face keeps for wait_run once they ended
# How long a yielded run's question waits for a wait_run to ask it through (as exec's
# terminal question waits for its answer); then the run stops for approval, approvable later.
ASKER_WAIT = PROMPT_SECONDS
# What the client of the face's first run is told while its gateway's first build waits
# for another build of the project (a standalone `doit`) to end.
BUILD_WAIT_REPORT = {"message": BUILD_WAIT_MESSAGE}

# Sends a progress report (``gateway/runbook.py``'s shape) to the client of one request.
Reporter = Callable[[dict[str, Any]], Coroutine[Any, Any, None]]


class _Wakeup:
    """A flag a run's threads raise for the face's event loop, without blocking and without
    a thread of the loop's kept waiting for them (a worker thread blocked on the run's end
    was one more thread to wake per execute)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._raised = asyncio.Event()

    def __call__(self) -> None:
        """Raise it (from any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self._loop.call_soon_threadsafe(self._raised.set)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Return once ``condition()`` holds, looked at again each time the flag is raised
        (whoever makes it hold raises the flag after)."""
        while True:
            self._raised.clear()
            if condition():
                return
            await self._raised.wait()


@dataclass(eq=False)
class FaceRun:
    """A script the face runs in a thread of its own: what it printed, how it ended, and
    where its progress goes (the request waiting for it, if any)."""

    loop: Any  # the face's event loop, as anyio.from_thread reaches it
    report: Reporter | None = None
    # how the request waiting for it (execute, then each wait_run) asks the person: a
    # request answered can no longer ask (its client has no request to relate a question to)
    ask: Approver | None = None
    asker: threading.Condition = field(default_factory=threading.Condition)
    id: str = ""
    out: io.BytesIO = field(default_factory=io.BytesIO)
    err: io.BytesIO = field(default_factory=io.BytesIO)
    pids: list[int] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    registered: threading.Event = field(default_factory=threading.Event)
    outcome: tuple[int, bytes, bytes, dict[str, Any] | None] | None = None
    failure: BaseException | None = None
    shown: tuple[int, int] = (0, 0)  # bytes of stdout and stderr already answered
    spill: Path | None = None  # where its output past the cap is kept (once registered)
    # the client's session that started it: only that one continues it (an HTTP face has
    # many clients, and a run's id is in the run log any of them can read)
    owner: object | None = None
    calls: int | None = None  # tool calls the script asked for, as its gateway counted them
    code: str = ""  # the script, for a hint when it failed
    interrupted: bool = False  # the client cancelled the request waiting for it, or left
    # the requests waiting for it (execute, wait_run), each woken once it is registered or ended
    waiters: list[_Wakeup] = field(default_factory=list)

    def started(self, run_id: str) -> None:
        self.id = run_id
        self.registered.set()
        self._wake()

    def ended(self) -> None:
        """The run is over (its outcome or failure set): whoever waits for it sees it."""
        self.done.set()
        self._wake()

    def _wake(self) -> None:
        for waiter in list(self.waiters):
            waiter()

    async def ended_within(self, seconds: float) -> bool:
        """Whether the run ended within ``seconds`` (a run not registered by then, whose
        gateway is slow, is waited for: a yielded answer needs its id)."""
        wakeup = _Wakeup()
        self.waiters.append(wakeup)
        try:
            with anyio.move_on_after(seconds):
                await wakeup.until(self.done.is_set)
            if not self.done.is_set():
                await wakeup.until(lambda: self.registered.is_set() or self.done.is_set())
        finally:
            self.waiters.remove(wakeup)
        return self.done.is_set()

    def forward(self, report: dict[str, Any]) -> None:
        """``ProgressWatcher``'s ``show``: to the client of the request waiting, if any."""
        send = self.report
        if send is not None:
            anyio.from_thread.run(send, report, token=self.loop)

    def asked_by(self, ask: Approver | None) -> None:
        """The request now waiting for the run asks its questions (None: none waits)."""
        with self.asker:
            self.ask = ask
            self.asker.notify_all()

    def approve(self, prompt: dict[str, Any]) -> Any:
        """``PromptWatcher``'s ``ask``: the question through the request waiting for the run;
        while none waits (execute answered, no wait_run yet), through the next wait_run, up
        to ``ASKER_WAIT`` seconds; then the run stops for approval (a server's question is
        cancelled)."""
        with self.asker:
            self.asker.wait_for(lambda: self.ask is not None or self.done.is_set(), ASKER_WAIT)
            ask = self.ask
        if ask is None:
            return {"action": "cancel"} if prompt.get("kind") == "elicitation" else "stop"
        return anyio.from_thread.run(ask, prompt, token=self.loop)

    def kill(self) -> None:
        self.interrupted = True
        for pid in self.pids:
            signal_quietly(pid, signal.SIGKILL, group=True)

    def is_interrupted(self) -> bool:
        return self.interrupted

    def yielded_answer(self) -> Answer:
        """What it printed since the last answer, and how to go on waiting."""
        out, err = self.out.getvalue(), self.err.getvalue()
        new_out, new_err = out[self.shown[0] :], err[self.shown[1] :]
        self.shown = (len(out), len(err))
        printed = new_out.decode("utf-8", "replace").replace(result_marker(), "").strip("\n")
        errors = new_err.decode("utf-8", "replace").strip("\n")
        text = (
            f"The script is still running as run {self.id}. Call wait_run with this run id "
            "to wait for more of its output and its result."
        )
        if printed:
            text += "\nOutput since the last answer:\n" + printed
        if errors:
            text += "\n" + errors
        return Answer(text, {"run": self.id, "running": True})


@dataclass
class Backend:
    """The face's link to a gateway, and the runs it started."""

    config: str | None
    cache: str | None
    lifeline: Lifeline
    cwd: Path = field(default_factory=Path.cwd)
    memory_mb: int = 512
    yield_after: float = YIELD_AFTER  # seconds before execute answers a run still going
    # the face's own gateway, begun before the face's imports (``spawn_owned_gateway``):
    # served in this process (its servers spawned), or a ``gateway start`` process
    early: InProcessGateway | subprocess.Popen[str] | None = None
    _url: str | None = None
    _owned: InProcessGateway | LaunchedGateway | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _yielded: dict[str, FaceRun] = field(default_factory=dict)  # runs wait_run may continue
    # a Deno spawned ahead for the next execute (``execution/spare.py``); None when off
    _spare: Spare | None = None
    _closed: bool = False
    _state_dir: Path | None = None  # the project's, once found (``state_dir``)
    _made: set[str] = field(default_factory=set)  # ids of the runs this face ran
    # the executes under way (yielded ones too), at most as many as the gateway holds runs
    _running: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(RUNS_AT_ONCE)
    )
    spares: bool = field(default_factory=lambda: not os.environ.get("TOOLSCRIPT_NO_SPARE"))
    config_watch: ConfigWatch = field(init=False)  # whether the project's config can be used

    def __post_init__(self) -> None:
        self.config_watch = ConfigWatch(self.config, self.cwd)
        if isinstance(self.early, InProcessGateway):
            self.early.start()  # the face has imported: the gateway's imports go in its thread
        elif self.early is not None:
            self.lifeline.watch(self.early.pid, group=False)

    # -- the gateway ---------------------------------------------------------------------
    def gateway_url(self, *, stale: str | None = None) -> str:
        """The URL of a gateway that answers (blocking: call it from a worker thread).

        ``stale`` is a URL that just failed: it is not trusted again without a check.

        A project config that cannot be used now raises its ConfigError, which the tool
        call answers, whatever gateway runs; the face serves on and reads the file again at
        the next call. Untrusted, it starts nothing, as in the Claude Code hook
        (TOOLSCRIPT_CONFIG is the user's own): a cloned repository's config names programs
        to run.
        """
        with self._lock:
            self.check_config()
            if self._url and self._url != stale:
                if os.environ.get("TOOLSCRIPT_GATEWAY_URL", "").strip():
                    prove_gateway(self._url)  # still it: its port may be another's since
                return self._url
            self._url = self._find() or self._start_owned()
            return self._url

    def check_config(self) -> None:
        """Raise the ConfigError of the project's config when it cannot be used now (not
        with TOOLSCRIPT_GATEWAY_URL: that gateway's config need not be this one)."""
        if not os.environ.get("TOOLSCRIPT_GATEWAY_URL", "").strip():
            self.config_watch.check()

    def _find(self) -> str | None:
        owned = self._owned
        if owned is not None and owned.url and _alive(owned):
            return owned.url
        # (a running gateway's first build waiting for a `doit` is waited for, unsaid)
        running = running_gateway(self.config, self.cache, told=lambda: None, told_start=None)
        return running[0] if running else None

    def _start_owned(self) -> str:
        early, self.early = self.early, None
        if early is not None:
            gateway: InProcessGateway | LaunchedGateway
            if isinstance(early, InProcessGateway):
                gateway = early
                gateway.wait_for_url(OWNED_START_WAIT)
            else:
                gateway = wait_for_url(early, OWNED_START_WAIT)
            if gateway.url:
                self._owned = gateway
                return gateway.url
            self._stop_owned(gateway, 5)  # it did not start: a new one says why
        if self._owned is not None:
            self._stop_owned(self._owned, 20)
            self._owned = None
        if face_gateway_in_process():
            return self._start_in_process()
        args = face_gateway_args(self.config, self.cache)
        env = dict(os.environ)
        env.setdefault("TOOLSCRIPT_LOG_LEVEL", "WARNING")
        gateway = start_gateway(
            *args,
            cwd=self.cwd,
            env=env,
            stderr=sys.stderr,  # the gateway's log joins the face's (an MCP client's log)
            wait=OWNED_START_WAIT,
            on_spawn=lambda process: self.lifeline.watch(process.pid, group=False),
        )
        if not gateway.url:
            self._stop_owned(gateway, 5)
            raise _not_started()
        self._owned = gateway
        return gateway.url

    def _start_in_process(self) -> str:
        """A gateway served in a thread of the face (``gateway/inprocess.py``)."""
        gateway = InProcessGateway(self.config, self.cache)
        gateway.start()
        if not gateway.wait_for_url(OWNED_START_WAIT):
            gateway.stop(5)
            if isinstance(gateway.error, ToolscriptError):
                raise gateway.error
            raise _not_started()
        self._owned = gateway
        return gateway.url

    def _stop_owned(self, owned: InProcessGateway | LaunchedGateway, grace: float) -> None:
        owned.stop(grace)
        if isinstance(owned, LaunchedGateway):
            self.lifeline.forget(owned.process.pid, group=False)

    def close(self) -> None:
        """Stop the runs still going (a yielded one no request waits for) and the gateway
        this face started (with its servers), if any."""
        for run in list(self._yielded.values()):
            if not run.done.is_set():
                run.kill()
        with self._lock:
            owned, self._owned, self._url = self._owned, None, None
            early, self.early = self.early, None
            spare, self._spare = self._spare, None
            self._closed = True
        discarding = None
        if spare is not None:  # beside the gateway's stop, not before it
            discarding = threading.Thread(target=spare.discard, name="spare discard")
            discarding.start()
        if isinstance(early, InProcessGateway):  # begun, never asked for
            owned = early
        elif early is not None:
            owned = LaunchedGateway(early, "")
        if owned is not None:
            self._stop_owned(owned, 20)
        if discarding is not None:
            discarding.join()

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self.close)

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return await self._request(path + (f"?{urlencode(params)}" if params else ""))

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        return await self._request(path, json.dumps(body).encode(), SAVE_TIMEOUT)

    async def _request(
        self, route: str, body: bytes | None = None, timeout: float = REQUEST_TIMEOUT
    ) -> Any:
        """The gateway's JSON answer to GET ``route`` (POST of ``body``), asked as exec asks
        it (``gateway_request``: straight to the gateway, whatever HTTP_PROXY says, since a
        proxy would be sent the owner's token; no HTTP client's 1.3 MB in the face), in a
        thread left behind should the client cancel. A gateway gone is looked for again."""
        stale: str | None = None
        for attempt in range(2):
            url = await anyio.to_thread.run_sync(functools.partial(self.gateway_url, stale=stale))
            answer = await anyio.to_thread.run_sync(
                functools.partial(
                    gateway_request, url, route, timeout, json_body=body, answers=True
                ),
                abandon_on_cancel=True,
            )
            if answer is not None:
                return json.loads(answer)
            if attempt:
                raise GatewayUnreachableError(
                    "the gateway stopped answering", hint="call the tool again"
                )
            stale = url
        raise AssertionError("unreachable")

    # -- the tools -----------------------------------------------------------------------
    async def search_tools(
        self, query: str, limit: int = 8, server: str | None = None, kind: str = "tool"
    ) -> Answer:
        params: dict[str, Any] = {"q": query, "limit": limit}
        if server:
            params["server"] = server
        if kind != "tool":
            params["kind"] = kind
        answer = await self._get("/search", params)
        states = None
        if answer.get("hits") and kind == "tool":
            listed = await self._get("/servers")
            states = {str(one.get("name")): str(one.get("state")) for one in listed}
        return search_answer(answer, states)

    async def read_resource(
        self, server: str, uri: str | None, prompt: str | None, arguments: dict[str, Any]
    ) -> Answer:
        """A resource's contents (``uri``), a prompt's messages (``prompt``), or, with
        neither, what the server offers."""
        where = f"/servers/{quote(server, safe='')}"
        if uri:
            return resource_answer(await self._post(f"{where}/resources/read", {"uri": uri}))
        if prompt:
            given = {key: str(value) for key, value in arguments.items()}
            body = {"name": prompt, "arguments": given}
            return prompt_answer(await self._post(f"{where}/prompts/get", body))
        return offerings_answer(
            await self._optional(f"{where}/resources"), await self._optional(f"{where}/prompts")
        )

    async def _optional(self, path: str) -> dict[str, Any]:
        """What ``path`` answers; {} where the server offers none of it."""
        try:
            answer: dict[str, Any] = await self._get(path)
        except GatewayResponseError as exc:
            if exc.status_code != 404 or exc.body.get("error") != "not_found":
                raise
            return {}
        return answer

    async def get_types(self, names: list[str], example: bool = False) -> Answer:
        servers: list[str] = []
        if any("." in name and "__" not in name for name in names):
            servers = [server["name"] for server in await self._get("/servers")]
        typed = {normalize_tool_name(name, servers): name.strip() for name in names if name.strip()}
        check_type_names(list(typed))
        try:
            # as the agent's URL would answer: the recent calls of the agent's runs alone
            answer = await self._get("/types", {"names": ",".join(typed), "agent": "true"})
        except GatewayResponseError as error:
            raise in_their_words(error, typed) from None
        text = answer["declarations"]
        if answer.get("packages"):
            text += "\n\n" + offered_note(answer["packages"]).rstrip("\n")
        if example:
            calls = "\n".join(f"await {expression};" for expression in answer["examples"])
            text += f'\n\n// Example\nimport {{ tools }} from "toolscript";\n{calls}'
        return Answer(text)

    async def list_servers(self) -> Answer:
        return servers_answer(await self._get("/servers"))

    async def run_script(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout: float,
        ask: Approver | None = None,
        report: Reporter | None = None,
        owner: object | None = None,
    ) -> Answer:
        """Run saved script ``name`` with ``arguments`` as its input, as ``execute`` runs code
        (yielding as it does, after the face's ``yield_after``)."""
        listing = await self._get("/scripts")
        require_saved(listing, name, policy_denial(self.config, self.cwd))
        signature = next(
            (str(s.get("signature")) for s in listing.get("scripts", []) if s["name"] == name),
            None,
        )
        code = saved_script_call(name, json.dumps(arguments), signature)
        return await self.execute(
            code, timeout, ask, yield_after=self.yield_after, report=report, owner=owner
        )

    async def save_script(
        self, name: str, code: str, description: str | None, force: bool
    ) -> Answer:
        """Keep ``code`` as saved script ``name`` when it type-checks."""
        body = {"name": name, "code": code, "description": description, "force": force}
        saved = await self._post("/scripts", body)
        text = (
            f"{'replaced' if saved['replaced'] else 'saved'} {saved['name']} ({saved['path']}): "
            f"{saved['signature']}\ncall it: run_script, or `await scripts.{saved['name']}(...)` "
            "in execute"
        )
        if not saved.get("description"):
            text += "\nno description: search finds it by its name alone (save it again with one)"
        for other, errors in saved["broken"].items():
            text += f"\nwarning: {other} no longer type-checks: {errors[0]}"
        return Answer(text)

    async def execute(
        self,
        code: str,
        timeout: float,
        ask: Approver | None = None,
        *,
        yield_after: float = YIELD_AFTER,
        report: Reporter | None = None,
        owner: object | None = None,
    ) -> Answer:
        """Run ``code`` as a run of the gateway; ``ask`` (the client's elicitation) answers
        approval prompts, else a call that needs approval stops the run. A run still going
        after ``yield_after`` seconds goes on: the answer is its id and what it printed so
        far, and ``wait_run`` continues it for ``owner`` (the client's session) only.
        ``report`` sends its progress to the client."""
        require_script_size(code, "the code")  # exec's limit (MAX_RUN_SCRIPT_BYTES)
        # Past the runs the gateway holds, refused before a thread or a Deno is spent on it:
        # a client's 1,000 executes at once each spawned a Deno before the gateway refused
        # its run (196 at once)
        loop = anyio.lowlevel.current_token()  # the watcher threads reach the client through it
        run = FaceRun(loop=loop, report=report, owner=owner, code=code, ask=ask)
        if not self._running.acquire(blocking=False):  # (given back as its thread ends)
            raise TooManyRunsError(
                f"this MCP face already runs {RUNS_AT_ONCE} scripts at once, as many runs "
                "as its gateway holds; this one was not started",
                hint="wait for a script to end (wait_run gives a running one's result), "
                "then execute it again",
            )

        def watch(pid: int, *, group: bool) -> None:
            # One Deno of a run at a time: one watched before was reaped (a script that the
            # checker could not judge, run again checked by Deno), and its pid may be another
            # process's by now.
            for reaped in run.pids:
                self.lifeline.forget(reaped, group=True)
            run.pids[:] = [pid]
            self.lifeline.watch(pid, group=group)
            if run.interrupted:  # cancelled while its check ran: the Deno started since stops
                signal_quietly(pid, signal.SIGKILL, group=group)

        def work() -> None:
            try:
                run.outcome = self._run(code, timeout, watch, ask, loop, run)
            except BaseException as exc:  # handed to whoever waits for the run
                run.failure = exc
            finally:
                for pid in run.pids:
                    self.lifeline.forget(pid, group=True)
                self._running.release()
                run.ended()
                run.asked_by(run.ask)  # a question waiting for an asker needs none now

        try:
            threading.Thread(target=work, daemon=True, name="face run").start()
        except BaseException:
            self._running.release()
            raise
        try:
            finished = await run.ended_within(yield_after)
        except BaseException:
            # The client went away or cancelled the call: the sandbox stops now (the
            # gateway then cancels the calls it was making).
            run.kill()
            raise
        if not finished:
            run.report = None  # that request is answered; a wait_run brings its own
            run.asked_by(None)
            self._keep_yielded(run)
            return _shown(run.yielded_answer())
        return self._finished(run)

    async def wait_run(
        self,
        run_id: str,
        wait: float = YIELD_AFTER,
        report: Reporter | None = None,
        owner: object | None = None,
        ask: Approver | None = None,
    ) -> Answer:
        """Wait up to ``wait`` seconds more for a run ``execute`` yielded to ``owner``: its
        result, or what it printed since the last answer; ``ask`` (this request's
        elicitation) asks the person the run's questions meanwhile. Another client's run is
        answered as no run at all (its output and result are that client's)."""
        run = self._yielded.get(run_id)
        if run is None or run.owner is not owner:
            raise UsageError(
                f"no running script with run id {run_id!r}",
                hint="wait_run continues a run that execute answered as still running, "
                "until its result is given once",
            )
        run.report = report
        run.asked_by(ask)
        try:
            finished = await run.ended_within(wait)
        finally:
            run.report = None
            run.asked_by(None)
        if not finished:
            return _shown(run.yielded_answer())
        self._yielded.pop(run_id, None)  # a second wait_run of the same run may end too
        return self._finished(run)

    def _keep_yielded(self, run: FaceRun) -> None:
        """Keep ``run`` for wait_run; the oldest ended runs nobody waited for are dropped
        past ``YIELDED_KEPT``."""
        self._yielded[run.id] = run
        ended = [key for key, kept in self._yielded.items() if kept.done.is_set()]
        for key in ended[: max(0, len(self._yielded) - YIELDED_KEPT)]:
            del self._yielded[key]

    def _finished(self, run: FaceRun) -> Answer:
        if run.failure is not None:
            raise run.failure
        assert run.outcome is not None
        exit_code, out, err, stopped = run.outcome
        if stopped is not None:
            return _shown(stopped_answer(stopped, out))
        spill = run.spill or self.output_path(run.id)
        err, errors = errors_named(err, errors_file(spill), output_uri(run.id, "errors"))
        kept = spill if exit_code == EXIT_OUTPUT else None
        if kept is not None and kept.exists():
            cut = cut_answer(out, err, output_uri(run.id), kept.stat().st_size)
            if result_marker().encode() not in out:  # its value was past what fit
                returned = result_at_end(kept)
                if returned is not None:
                    shown = json.dumps(returned[0], ensure_ascii=False)
                    cut = dataclasses.replace(
                        cut,
                        text=f"{cut.text}\nThe script returned (the last line of its output):\n{shown}",
                        structured={"result": returned[0]},
                    )
            return _shown(dataclasses.replace(cut, outputs=cut.outputs + errors))
        answer = dataclasses.replace(
            execution_answer(exit_code, out, err, run.calls), outputs=errors
        )
        missing = missing_import(run.code) if exit_code == 1 else None
        if missing is not None:  # Deno says only "Cannot find name 'tools'"
            answer = dataclasses.replace(
                answer,
                text=f"{answer.text}\n`{missing}` comes from toolscript's module: begin the "
                f'script with import {{ {missing} }} from "toolscript";',
            )
        return _shown(answer)

    def _local(self, url: str) -> LocalGateway | None:
        """The gateway at ``url`` as calls on its loop, when it is the face's own served in
        this process (``gateway/local.py``); None for any other (asked over HTTP)."""
        owned = self._owned
        if isinstance(owned, InProcessGateway) and owned.url == url:
            return owned.local
        return None

    @staticmethod
    def _start_run(
        url: str, local: LocalGateway | None, code: str, *, interactive: bool
    ) -> RunHandle:
        """The run registered: on the loop of the face's own gateway, else over HTTP (and
        when that gateway is gone meanwhile: nothing listens, as its error says)."""
        if local is not None:
            answer = local.register(
                code,
                script_hash=script_hash(code),
                origin="mcp",
                script_name=(SCRIPT_NAME, SCRIPT_NAME),
                interactive=interactive,  # its URL is the owner's: prompts are answered
            )
            if answer is not None:
                return registered(url, answer, interactive)
        return start_run(
            url,
            code,
            origin="mcp",
            display_name=SCRIPT_NAME,
            file_name=SCRIPT_NAME,
            interactive=interactive,
        )

    def _take_spare(self, url: str, module: Path) -> Spare | None:
        """The spare spawned after the last execute when it fits this run, else a new one
        (its start then overlaps the run's registration and check); None when spares are off."""
        if not self.spares:
            return None
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and spare.fits(url, module, self.memory_mb):
            return spare
        if spare is not None:
            spare.discard()
        try:
            return Spare(url, module, self.memory_mb, tidy_later=True)
        except (OSError, ToolscriptError):  # a fresh Deno runs it instead
            return None

    def _spawn_spare(self, url: str, module: Path) -> None:
        time.sleep(SPARE_AFTER)
        try:
            spare = Spare(url, module, self.memory_mb, tidy_later=True)
        except (OSError, ToolscriptError):  # never fatal: the next run spawns its own
            return
        with self._lock:
            old, self._spare = self._spare, spare
            closing = self._closed
        if old is not None:
            old.discard()
        if closing:  # the face closed meanwhile
            self.close()

    def state_dir(self) -> Path:
        """The project's state directory (where cut outputs are kept): found once (the face
        serves one project; finding it again was about 0.5 ms of CPU an execute), and made
        again as at first if it went."""
        found = self._state_dir
        if found is None or not found.is_dir():
            found = project_state_dir(find_config_path(self.config, self.cwd).parent)
            self._state_dir = found
        return found

    def output_path(self, run_id: str) -> Path:
        return output_file(self.state_dir(), run_id)

    def read_output(self, uri: str) -> str:
        """The whole output a ``toolscript://runs/ID/output`` resource names (its stderr, cut:
        ``toolscript://runs/ID/errors``)."""
        found = _OUTPUT_URI.fullmatch(uri)
        path = self.output_path(found[1]) if found and self._agents(found[1]) else None
        if found and path is not None and found[2] == "errors":
            path = errors_file(path)
        if path is None or not path.is_file():
            raise UsageError(f"no such output: {uri}", hint="the URI comes from a cut result")
        text = _ANY_MARKER.sub("", path.read_text(encoding="utf-8", errors="replace"))
        return visible_controls(text)

    def _agents(self, run_id: str) -> bool:
        """Whether the run ``run_id`` is the agent's (this face's, another face's, one
        registered through the agent's URL): the state folder keeps a person's ``exec``
        output past its cap beside them, and the face reads none of a person's runs."""
        if run_id in self._made:
            return True
        from toolscript.errors import ToolscriptError
        from toolscript.store.runlog import RunLog, runlog_path

        path = runlog_path(self.state_dir())
        try:
            run = RunLog(path).run(run_id) if path.is_file() else None
        except (ToolscriptError, OSError):  # (an id matching several runs: none of them)
            return False
        return (
            run is not None
            and run["id"] == run_id
            and (run.get("origin") == "mcp" or bool(run.get("by_agent")))
        )

    def _run(
        self,
        code: str,
        timeout: float,
        watch: Callable[..., None],
        ask: Approver | None,
        loop: Any,
        face_run: FaceRun,
    ) -> tuple[int, bytes, bytes, dict[str, Any] | None]:
        url = self.gateway_url()
        local = self._local(url)
        told = functools.partial(face_run.forward, BUILD_WAIT_REPORT)
        if local is not None:
            local.tell_if_first_build_waits(told)
        # a gateway process of the face's own, whose routes wait for that build
        digest = local.module_hash() if local is not None else built_module_hash(url, told)
        if digest is None:
            url = self.gateway_url(stale=url)
            local = self._local(url)
            digest = local.module_hash() if local is not None else module_hash(url)
            if digest is None:
                raise GatewayUnreachableError("the gateway stopped answering")
        out, err = face_run.out, face_run.err
        # A server the script names still connecting (a slow first start, or added by a
        # config edit a moment ago) joins the module when connected: waited for, as exec
        # does (the check would fail at once on its tools).
        if local is None or not local.servers_up():
            with contextlib.suppress(ToolscriptError, ValueError):  # the run then says what is
                said = functools.partial(_say_as_progress, face_run)
                given_up = face_run.is_interrupted
                digest = wait_for_connecting_servers(url, code, said, given_up) or digest
        if face_run.interrupted:
            # The client cancelled (or left) while it waited: a run started now would make
            # its calls for nobody (a write the person cancelled was made seconds later).
            raise ExecutionError("the client cancelled the execute before its run began")
        digest, module = current_module(url, digest)
        spare = self._take_spare(url, module)
        try:
            run = self._start_run(url, local, code, interactive=ask is not None)
        except BaseException:
            if spare is not None:
                spare.discard()
            raise
        face_run.started(run.id)
        # A run its gateway ends first (`runs stop`, the gateway stopped) stops its script.
        sandbox = SandboxOfRun(watch)
        progress = ProgressWatcher(
            run, face_run.forward, local.progress if local else None, on_gone=sandbox.stop
        )
        progress.start()
        watcher = None
        if ask is not None and run.interactive:
            watcher = PromptWatcher(run, face_run.approve)
            watcher.start()
        exit_code = 1
        try:
            face_run.spill = self.output_path(run.id)
            self._made.add(run.id)
            exit_code = run_toolscript(
                Script(code, SCRIPT_NAME, SCRIPT_NAME, result_marker=result_marker()),
                url,
                digest,
                module=module,
                on_start=sandbox.started,
                limits=Limits(
                    timeout=timeout,
                    memory_mb=self.memory_mb,
                    max_output=MAX_OUTPUT - ERRORS_KEPT,
                    errors_kept=ERRORS_KEPT,
                ),
                stdout=out,
                stderr=err,
                advice=FACE_ADVICE,
                warm_check=True,
                script_url=run.script_url,
                spill=face_run.spill,
                spare=spare,
                denial=policy_denial(self.config, self.cwd),
                checker=local.check if local is not None else None,
                gate=_HeldRequests(local, run) if local is not None else None,
            )
        finally:
            sandbox.finish()
            if sandbox.stopped:
                exit_code = ENDED_AT_GATEWAY
                again = "Call execute again: it uses the project's gateway, or starts its own."
                why = SandboxOfRun.message(progress.ending, again)
                err.write(f"toolscript: error: {why}\n".encode())
            elif face_run.interrupted:
                # The client cancelled (or left): the run is stopped as `runs stop` stops one,
                # not failed by the kill, and a call it stopped at meanwhile, its question
                # unanswered, is left for nobody to approve.
                with contextlib.suppress(GatewayError, ValueError):
                    stop_background(url, run.id)
            if watcher is not None:
                watcher.stop()
            ended = local.end(run.id, exit_code) if local is not None else None
            if ended is None:  # not the face's own gateway, or it went (as over HTTP, then)
                ended = end_run(run, exit_code)
            progress.stop()
            if self.spares:  # for the next execute, while this one's answer goes out
                threading.Thread(target=self._spawn_spare, args=(url, module), daemon=True).start()
        if exit_code != 0 and not sandbox.stopped and ended is None:
            # The script failed first, its call cut, before the watcher saw the gateway gone.
            again = "Call execute again: it uses the project's gateway, or starts its own."
            why = SandboxOfRun.message(progress.ending, again, stopped=False)
            err.write(f"toolscript: error: {why}\n".encode())
        if exit_code != 0 and not sandbox.stopped:
            # `tools.slow` undefined (type check or run): say why that server is not there
            with contextlib.suppress(ToolscriptError, ValueError):
                missing = unavailable_servers(url, code, *_SEE_SERVERS)
                if missing is not None:
                    err.write(f"toolscript: warning: {missing}\n".encode())
        stopped = (ended or {}).get("stopped")
        calls = (ended or {}).get("call_count")
        if ended is None and progress.ending is not None:  # the gateway said, as it stopped
            calls = progress.ending.get("calls")
        face_run.calls = calls if isinstance(calls, int) else None
        return exit_code, out.getvalue(), err.getvalue(), stopped


# Where the face's client reads why a server is not there, and what to do when it is only
# still connecting (``unavailable_servers``' ``see_why`` and ``see_connecting``).
_SEE_SERVERS = (
    "list_servers shows why",
    "it joins when connected: call execute again then (list_servers shows its state)",
)


def _say_as_progress(run: FaceRun, line: str) -> None:
    run.forward({"message": line})


class _HeldRequests:
    """A run's requests held by the face's own gateway while its script is checked (the
    sandbox's ``Gate``: ``RunBook.hold``)."""

    def __init__(self, local: LocalGateway, run: RunHandle) -> None:
        self.local, self.run = local, run

    def hold(self) -> bool:
        try:
            return self.local.hold(self.run.id)
        except GatewayError:  # it did not answer: the script is checked first, as without
            return False

    def settle(self, passed: bool) -> None:
        self.local.settle(self.run.id, passed)

    def reissue(self) -> str | None:
        token = self.local.settle(self.run.id, False, reissue=True)
        if token is None:
            return None
        return registered(self.run.gateway_url, {"id": self.run.id, "token": token}).script_url


def _alive(owned: InProcessGateway | LaunchedGateway) -> bool:
    if isinstance(owned, InProcessGateway):
        return owned.alive()
    return owned.process.poll() is None


def _not_started() -> ExecutionError:
    return ExecutionError(
        "no gateway runs for this project and one could not be started",
        hint="run `toolscript gateway start` in the project to see why",
    )


_OUTPUT_URI = re.compile(r"toolscript://runs/([0-9A-Za-z-]+)/(output|errors)")
_ERRORS_NOTE = re.compile(
    rf"^{re.escape(ERRORS_CUT)}(\d+) bytes of its (\d+) are left out here; (.*)$", re.MULTILINE
)


def output_uri(run_id: str, stream: str = "output") -> str:
    return f"toolscript://runs/{run_id}/{stream}"


def errors_named(err: bytes, path: Path, uri: str) -> tuple[bytes, tuple[str, ...]]:
    """A run's stderr with the sandbox's note on what of it was cut naming the resource
    ``uri`` where it names the file (``path``) that holds it; the resource too, when it is.
    The note is the sandbox's: it carries the nonce of this process (``ERRORS_CUT``), which
    no line a script prints spells (the end shown after the note is the script's own)."""
    text = err.decode("utf-8", "replace")
    found = _ERRORS_NOTE.search(text)
    if found is None:
        return err, ()
    where = found[3]
    kept = path.is_file() and where.endswith(f" in {path}")
    if kept:
        where = where[: -len(str(path))] + f"the resource {uri} (read it)"
    note = f"[{found[1]} bytes of the {found[2]} the script printed to stderr are left out here; {where}]"
    text = text[: found.start()] + note + text[found.end() :]
    return text.encode(), (uri,) if kept else ()


RETURNED_KEPT = 16_000  # bytes: a return value up to this size is given beside a cut output


def result_at_end(path: Path, limit: int = RETURNED_KEPT) -> tuple[Any] | None:
    """The value a script returned, as the last line of its kept output ``path`` holds it
    (after this user's ``result_marker``), when that line is at most ``limit`` bytes: a
    script that printed past the cap and returned a small value still answers with it (a
    larger one is what the output's preview shows). None when there is none."""
    marker = result_marker().encode()
    with path.open("rb") as kept:
        size = kept.seek(0, os.SEEK_END)
        start = max(0, size - limit - len(marker) - 2)
        kept.seek(start)
        tail = kept.read().rstrip(b"\n")
    line_start = tail.rfind(b"\n") + 1
    if line_start == 0 and start > 0:  # the last line began before what was read
        return None
    line = tail[line_start:]
    if not line.startswith(marker):
        return None
    try:
        return (json.loads(line[len(marker) :]),)
    except (ValueError, RecursionError):
        return None


def cut_answer(stdout: bytes, stderr: bytes, uri: str, size: int) -> Answer:
    """Output past the cap: what was printed and the preview, and the whole as a resource."""
    answer = execution_answer(0, stdout, b"")
    errors = "\n".join(
        line
        for line in stderr.decode("utf-8", "replace").splitlines()
        if not line.startswith("toolscript: output cut:")
    ).strip()
    text = (
        f"The output ({size} bytes) passed the {MAX_OUTPUT}-byte cap, so it was cut: below is "
        f"what fit and a preview of the rest (arrays and objects shortened, with counts). "
        f"The whole output is the resource {uri} (read it), or filter inside the script and "
        f"return only what is needed.\n{answer.text}"
    )
    if errors:
        text += "\n" + errors
    return Answer(text, answer.structured, is_error=False, outputs=(uri,))


def stopped_answer(stopped: dict[str, Any], stdout: bytes) -> Answer:
    """A run the gateway stopped (a call needing approval, too many calls) as a tool result:
    the same message exec prints, and what the script printed before."""
    text = stopped.get("message", "the run was stopped")
    if stopped.get("hint"):
        text += f"\nhint: {stopped['hint']}"
    if stopped.get("error") == "approval_required":
        text += (
            "\nA person must approve it (do not run `toolscript approve` yourself); then call "
            "execute again with the same code: calls already made are not made again."
        )
    printed = stdout.decode("utf-8", "replace").replace(result_marker(), "").strip("\n")
    if printed:
        text += "\nOutput before the stop:\n" + printed
    return Answer(text, {"stopped": stopped}, is_error=True)
