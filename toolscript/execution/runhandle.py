"""A run as exec and the MCP face see it: registered with the gateway before the sandbox
starts, its approval prompts answered while it runs, its end reported after.

Stdlib only, like the rest of the exec path.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from toolscript.errors import (
    GatewayError,
    GatewayResponseError,
    GatewayTimeoutError,
    tool_named,
)
from toolscript.execution.locate import gateway_request
from toolscript.execution.sandbox import Script
from toolscript.plumbing.processes import signal_quietly

__all__ = [
    "ENDED_AT_GATEWAY",
    "PROMPT_SECONDS",
    "ProgressWatcher",
    "PromptWatcher",
    "RunHandle",
    "SandboxOfRun",
    "end_run",
    "format_progress",
    "format_trace",
    "registered",
    "show_on_stderr",
    "show_within",
    "start_run",
    "stop_message",
    "stopped_script",
    "terminal_answer",
    "terminal_form",
]

PROMPT_SECONDS = 60.0  # how long the terminal prompt waits for an answer
_POLL = 20.0
# A script reporting progress in a tight loop (thousands a second) would flood the terminal
# or the MCP client: each look shows at most PROGRESS_SHOWN reports (the newest, after a
# line counting those skipped), and the next look waits PROGRESS_PACE seconds.
PROGRESS_SHOWN = 10
PROGRESS_PACE = 0.2
# seconds the progress watcher waits before asking again a gateway that still runs but cut
# its connection or refused one (busy, restarting its listener)
CUT_PAUSE = 1.0
# exec's code for a run its gateway ended first (as `runs stop` ends a background run's)
ENDED_AT_GATEWAY = 143


@dataclass(frozen=True)
class RunHandle:
    gateway_url: str  # what registered the run and ends it (the owner's URL when interactive)
    id: str
    script_url: str  # with the run's token: what the sandbox gets
    resumed_from: str | None
    interactive: bool = False  # its prompts wait for an answer (``PromptWatcher``)
    # the limits the gateway keeps with the run: those given, else the resumed run's
    # (timeout, memory_mb, max_output, max_calls; absent: exec's defaults)
    limits: Mapping[str, float] = field(default_factory=dict)
    # the gateway process's ``process_identity`` (its answer to the registration): whether
    # it still runs tells a gateway gone from one that cut a connection ('' not said)
    gateway_identity: str = ""


def script_hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()[:32]


def start_run(
    url: str,
    code: str,
    *,
    origin: str,
    display_name: str = "inline.ts",
    file_name: str = "inline.ts",
    interactive: bool = False,
    max_calls: int | None = None,
    resume: str | None = None,
    limits: Mapping[str, float | None] | None = None,
) -> RunHandle:
    """Register a run with the gateway at ``url`` (raises the gateway's error, for example
    for a ``resume`` that names no run stopped for approval).

    An ``interactive`` run's prompts are answered with the gateway's own token, which the
    agent's URL does not carry: it is looked for in this user's state and session files
    (``owner_url``); without it the run is not interactive, and a call that needs approval
    stops it as it does without a terminal."""
    if interactive:
        from toolscript.gateway.state import owner_url

        owner = owner_url(url)
        interactive = owner is not None
        url = owner or url
    request: dict[str, Any] = {
        "script": code,
        "script_name": [display_name, file_name],
        "script_hash": script_hash(code),
        "origin": origin,
        "interactive": interactive,
        "resume": resume,
        "pid": os.getpid(),  # the gateway ends the run as "died" if this process goes away
    }
    if max_calls is not None:
        request["max_calls"] = max_calls
    # those not given are left to the gateway: a resume keeps the resumed run's
    request |= {name: value for name, value in (limits or {}).items() if value is not None}
    body = gateway_request(url, "/runs", 30, json_body=json.dumps(request).encode(), answers=True)
    if body is None:
        raise GatewayError("the gateway stopped answering before the run started")
    return registered(url, json.loads(body), interactive)


def registered(url: str, answer: dict[str, Any], interactive: bool = False) -> RunHandle:
    """The run the gateway at ``url`` registered, from its answer (``POST /runs``'s): the
    script gets the gateway's URL with the run's token in place of the gateway's own."""
    base = url.rstrip("/").rsplit("/", 1)[0]
    limits = answer.get("limits")
    identity = answer.get("gateway")
    if not isinstance(identity, str) or identity.partition(":")[0] == str(os.getpid()):
        identity = ""  # a gateway served in this process (the face's) goes while it runs
    return RunHandle(
        url,
        answer["id"],
        f"{base}/{answer['token']}",
        answer.get("resumed_from"),
        interactive,
        limits=dict(limits) if isinstance(limits, dict) else {},
        gateway_identity=identity,
    )


def stopped_script(url: str, run_id: str) -> Script:
    """The script of a run that stopped for approval, as the gateway's log keeps it."""
    body = gateway_request(url, f"/runs/{run_id}/script", 30, answers=True)
    if body is None:
        raise GatewayError("the gateway stopped answering")
    found = json.loads(body)
    return Script(found["code"], found["display_name"], found["file_name"])


def end_run(handle: RunHandle, exit_code: int) -> dict[str, Any] | None:
    """Tell the gateway the run ended; its answer (status, stop, calls), None if it is gone."""
    try:
        body = gateway_request(
            handle.gateway_url,
            f"/runs/{handle.id}/end",
            30,
            json_body=json.dumps({"exit": exit_code}).encode(),
            answers=True,
        )
    except GatewayError:
        return None
    return None if body is None else dict(json.loads(body))


def stop_message(answer: dict[str, Any] | None) -> tuple[str, int] | None:
    """What to print, and the exit code, for a run the gateway stopped (None: it did not)."""
    stopped = (answer or {}).get("stopped")
    if not stopped:
        return None
    lines = [f"toolscript: error: {stopped.get('message', 'the run was stopped')}"]
    if stopped.get("hint"):
        lines.append(f"  hint: {stopped['hint']}")
    return "\n".join(lines) + "\n", int((answer or {}).get("exit_code") or 1)


def kept_resume_note(answer: dict[str, Any] | None) -> str | None:
    """What to say of a resume that called nothing (its script failed its check): the run it
    resumed waits still, its approval unused. None for any other run."""
    if not (answer or {}).get("resume_kept"):
        return None
    previous = (answer or {}).get("resumed_from")
    return (
        f"toolscript: run {previous} can still be resumed (this run called nothing, its "
        f"approval is not used): `toolscript exec --resume {previous} [FILE.ts]` once the "
        "script checks\n"
    )


def format_trace(answer: dict[str, Any] | None) -> str:
    """The run's calls, one line each, for ``exec --trace``."""
    if not answer:
        return "toolscript: trace: the gateway did not report the run's calls\n"
    calls = answer.get("calls") or []
    head = f"toolscript: run {answer['id']}: {len(calls)} call{'s' * (len(calls) != 1)}"
    if answer.get("resumed_from"):
        head += f", resumed {answer['resumed_from']} ({answer.get('replayed', 0)} answered from its log)"
    lines = [head]
    for call in calls:
        arguments = call.get("arguments", "")
        if len(arguments) > 120:
            arguments = arguments[:117] + "..."
        line = (
            f"  {call['seq']:>3}  {tool_named(call['tool'])}({arguments})  {call['outcome']}  "
            f"{call['ms']:.1f} ms  {call['arguments_bytes']} B in, {call['result_bytes']} B out"
        )
        if call.get("error"):
            line += f"  {call['error'][:200]}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def terminal_answer(
    prompt: dict[str, Any],
    *,
    stdin: IO[str] | None = None,
    stderr: IO[str] | None = None,
    timeout: float = PROMPT_SECONDS,
) -> Any:
    """Ask on the terminal: ``yes``, ``no``, ``always``, or ``stop`` when nobody answers; a
    server's question (``kind`` elicitation) is a form (``terminal_form``)."""
    source = stdin or sys.stdin
    out = stderr or sys.stderr
    _forget_typed_ahead(source)
    if prompt.get("kind") == "elicitation":
        return terminal_form(prompt, source, out, timeout)
    from toolscript.store.approvalview import shortened_notice, shown_arguments, visible_text
    from toolscript.store.outputs import visible_controls

    view = shown_arguments(prompt.get("arguments", {}))
    notice = ""
    if view.shortened:
        notice = f"  {visible_controls(shortened_notice(view, str(prompt.get('run') or '')))}\n"
    arguments = "\n".join(f"    {line}" for line in view.text.split("\n"))
    tool = visible_text(tool_named(str(prompt["tool"])))
    again = ""  # asked again: an earlier approval of it no longer holds
    if prompt.get("why"):
        again = f"  asked again: {visible_controls(str(prompt['why']))}\n"
    # The tool named again on the question's own line: long arguments scroll the first line
    # off the screen, and a long string wraps into rows that may read as any other question.
    out.write(
        f"\ntoolscript: the script calls {tool}, which "
        f"asks for approval.\n{again}{notice}  arguments:\n{arguments}\n{notice}"
        f"  allow it{' (its arguments are SHORTENED above)' if view.shortened else ''}? "
        f"(the call of {tool}) [y]es / [n]o / [a]lways (this tool, in this project) "
        f"[{timeout:g} s, then the run stops]: "
    )
    out.flush()
    ready, _, _ = select.select([source], [], [], timeout)
    if not ready:
        out.write("\ntoolscript: no answer; the run stops (approve it later)\n")
        out.flush()
        return "stop"
    line = source.readline().strip().lower()
    return {"y": "yes", "yes": "yes", "a": "always", "always": "always", "n": "no", "no": "no"}.get(
        line, "stop" if not line else "no"
    )


def _forget_typed_ahead(source: IO[str]) -> None:
    """Drop what was typed on the terminal before a question is shown: only what is typed
    after it answers it. The script prints to the same terminal, and a "y" typed at a
    question it forged waited there for the next real one."""
    import termios

    try:
        if source.isatty():
            termios.tcflush(source.fileno(), termios.TCIFLUSH)
    except (OSError, ValueError, termios.error):  # not a terminal after all, or closed
        pass


def _read_line(source: IO[str], timeout: float) -> str | None:
    """One line typed on ``source`` (None: nothing within ``timeout`` s), read a byte at a
    time from its descriptor: lines typed ahead stay there for the next question."""
    try:
        descriptor = source.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO)
        return source.readline()
    line = b""
    while True:
        ready, _, _ = select.select([descriptor], [], [], timeout)
        if not ready:
            return None
        byte = os.read(descriptor, 1)
        if byte in (b"", b"\n"):
            return line.decode("utf-8", "replace").rstrip("\r")
        line += byte


def _typed_value(text: str, spec: dict[str, Any]) -> Any:
    """What the user typed as the JSON type of the field ``spec``; raises ValueError."""
    kind = spec.get("type")
    if kind == "boolean":
        if text.lower() in ("y", "yes", "true"):
            return True
        if text.lower() in ("n", "no", "false"):
            return False
        raise ValueError("answer yes or no")
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "array":
        return [part.strip() for part in text.split(",") if part.strip()]
    return text


def _choices(spec: dict[str, Any]) -> list[str]:
    listed = spec.get("enum") or (spec.get("items") or {}).get("enum") or []
    titled = spec.get("oneOf") or spec.get("anyOf") or (spec.get("items") or {}).get("anyOf")
    if not listed and isinstance(titled, list):
        listed = [str(option.get("const")) for option in titled if isinstance(option, dict)]
    return [str(choice) for choice in listed]


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def terminal_form(
    prompt: dict[str, Any], source: IO[str], out: IO[str], timeout: float = PROMPT_SECONDS
) -> dict[str, Any]:
    """A server's question on the terminal: accept or decline, then a line per field of
    its schema (empty: the field's default, or none). Everything the server sent is shown
    with its control characters made visible; what the user types is only ever data."""
    from toolscript.store.outputs import visible_controls

    given = prompt.get("schema")
    schema: dict[str, Any] = given if isinstance(given, dict) else {}
    listed = schema.get("properties")
    fields: dict[str, Any] = listed if isinstance(listed, dict) else {}
    required = set(schema.get("required") or [])
    # Each line of the server's message indented: none reads as a line of toolscript's own
    # (a forged approval question above the server's "answer it?").
    message = (
        "".join(
            f"  {line}\n" for line in visible_controls(str(prompt.get("message", ""))).splitlines()
        )
        or "  \n"
    )
    out.write(
        f"\ntoolscript: server {visible_controls(str(prompt.get('tool', '')))} asks you, "
        f"during the script's call:\n{message}"
        f"  answer it? [y]es / [n]o (decline) [{timeout:g} s, then it is cancelled]: "
    )
    out.flush()
    first = _read_line(source, timeout)
    if first is None:
        out.write("\ntoolscript: no answer; the question is cancelled\n")
        out.flush()
        return {"action": "cancel"}
    if first.strip().lower() not in ("y", "yes"):
        return {"action": "decline"}
    content: dict[str, Any] = {}
    for name, spec in fields.items():
        spec = spec if isinstance(spec, dict) else {}
        label = str(spec.get("title") or name)
        about = str(spec.get("description") or "")
        hints = [f"one of {', '.join(_choices(spec))}"] if _choices(spec) else []
        if "default" in spec:
            default = json.dumps(spec["default"], ensure_ascii=False)
            # a secret masked in it: Enter gives the server back its own value, unseen
            hidden = " (the server's own, hidden: Enter sends it)" if "***" in default else ""
            hints.append(f"default {default}{hidden}")
        if name in required:
            hints.append("required")
        for _attempt in range(3):
            # a field, a line: what the server wrote in it never starts another
            shown = _one_line(visible_controls(f"{label}{f' ({about})' if about else ''}"))
            tail = _one_line(visible_controls(f" [{'; '.join(hints)}]")) if hints else ""
            out.write(f"  {shown}{tail}: ")
            out.flush()
            typed = _read_line(source, timeout)
            if typed is None:
                out.write("\ntoolscript: no answer; the question is cancelled\n")
                out.flush()
                return {"action": "cancel"}
            typed = typed.strip()
            if not typed:
                if "default" in spec:
                    content[name] = spec["default"]
                if name in required and "default" not in spec:
                    out.write("  (required)\n")
                    continue
                break
            try:
                content[name] = _typed_value(typed, spec)
                break
            except ValueError as exc:
                out.write(f"  ({exc})\n")
        else:
            return {"action": "cancel"}
    return {"action": "accept", "content": content}


class PromptWatcher(threading.Thread):
    """While a run runs, waits for its approval prompts and answers them with ``ask``."""

    def __init__(self, handle: RunHandle, ask: Callable[[dict[str, Any]], Any]) -> None:
        super().__init__(daemon=True, name=f"prompts of {handle.id}")
        self.handle = handle
        self.ask = ask
        self.done = threading.Event()

    def run(self) -> None:
        route = f"/runs/{self.handle.id}/prompt"
        while not self.done.is_set():
            try:
                body = gateway_request(
                    self.handle.gateway_url, f"{route}?wait={_POLL:g}", _POLL + 10
                )
            except GatewayError:
                return
            if body is None:
                return
            found = json.loads(body)
            prompt = found.get("prompt")
            if prompt is None:
                if found.get("ended"):
                    return
                continue
            asking = prompt.get("kind") == "elicitation"  # a server's question
            try:
                answer = self.ask(prompt)
            except Exception:  # whoever asks failed: the run stops, approvable later
                answer = {"action": "cancel"} if asking else "stop"
            said: dict[str, Any] = {"seq": prompt["seq"], "answer": answer}
            if isinstance(answer, dict):
                said = {"seq": prompt["seq"], "answer": answer.get("action", "cancel")}
                said["content"] = answer.get("content")
            try:
                gateway_request(
                    self.handle.gateway_url, route, 30, json_body=json.dumps(said).encode()
                )
            except GatewayError:
                return

    def stop(self) -> None:
        self.done.set()


def format_progress(report: dict[str, Any]) -> str:
    """A progress report as stderr shows it: ``toolscript: progress: MESSAGE (33%)``; a
    server's names its tool."""
    from toolscript.store.outputs import visible_controls

    source = str(report.get("source") or "script")
    who = f"{tool_named(source)}: " if "__" in source else ""
    # one report, one line: a message cannot end it and forge a line of toolscript's own
    message = " ".join(str(report.get("message") or "").splitlines())
    fraction = report.get("fraction")
    if isinstance(fraction, int | float):
        share = f"{fraction * 100:.0f}%"
        message = f"{message} ({share})" if message else share
    elif report.get("progress") is not None and not message:
        message = f"{report['progress']:g}"
    return visible_controls(f"toolscript: progress: {who}{message}") + "\n"


class ProgressWatcher(threading.Thread):
    """While a run runs, hands each of its progress reports (its script's ``progress()``,
    its servers' notifications) to ``show``; ``stop`` hands over what is left and ends it."""

    def __init__(
        self,
        handle: RunHandle,
        show: Callable[[dict[str, Any]], None],
        ask: Callable[[str, int, float], dict[str, Any] | None] | None = None,
        on_gone: Callable[[], None] | None = None,
    ) -> None:
        """``ask(run_id, after, wait)``: what ``GET /runs/{id}/progress`` answers, asked
        another way (the MCP face, on its own gateway's loop); None: nobody answers.

        ``on_gone``: called once (``gone`` set) when the run ends at its gateway while its
        script still runs (``runs stop``, or the gateway stopped or went away): the caller
        stops the sandbox. A script that no longer calls tools never learned it, and lived on
        to its timeout: long enough to listen on the gone gateway's port and answer, as the
        gateway, whoever still used its address (their tokens, their scripts' calls)."""
        super().__init__(daemon=True, name=f"progress of {handle.id}")
        self.handle = handle
        self.show = show
        self.ask = ask or self._ask_over_http
        self.on_gone = on_gone
        self.done = threading.Event()
        self.gone = threading.Event()
        self.next = 0
        # the gateway's last answer when it said the run ended (None: it went unanswering)
        self.ending: dict[str, Any] | None = None

    def _ask_over_http(self, run_id: str, after: int, wait: float) -> dict[str, Any] | None:
        route = f"/runs/{run_id}/progress?after={after}&wait={wait:g}"
        body = gateway_request(self.handle.gateway_url, route, wait + 10, answers=True)
        return None if body is None else dict(json.loads(body))

    def _ended_at_gateway(self) -> None:
        if self.done.is_set():  # the script ended first: nothing to stop
            return
        self.gone.set()
        if self.on_gone is not None:
            self.on_gone()

    def _look(self, wait: float) -> tuple[dict[str, Any] | None, str]:
        """The gateway's answer, else why none: ``busy`` (no answer in time), ``failed``
        (an error that says nothing of the run), ``gone`` (a gateway there that knows neither
        the token nor the run: another, or one restarted) or ``cut`` (no answer: nothing
        listens, or a connection closed unanswered or garbled)."""
        try:
            found = self.ask(self.handle.id, self.next, wait)
        except GatewayTimeoutError:
            return None, "busy"
        except GatewayResponseError as exc:
            return None, "gone" if exc.status_code in (401, 404) else "failed"
        except (GatewayError, ValueError):
            return None, "cut"
        return found, "" if found is not None else "cut"

    def _gateway_gone(self, cuts: int) -> bool:
        """After ``cuts`` + 1 looks in a row without an answer: whether the run's gateway
        is gone. Its process, when known, says (no request that a script squatting its port
        would get: the poll's path holds the token); else two looks without an answer do."""
        identity = self.handle.gateway_identity
        if not identity:
            return cuts >= 1  # asked again at once: a connection a busy gateway dropped
        from toolscript.plumbing.processes import identity_alive

        if not identity_alive(identity):
            return True
        # Still listed: busy, or killed while its sockets closed (a process closes them
        # before it ends): looked at again after a pause, before the port is asked again.
        self.done.wait(CUT_PAUSE)
        return not identity_alive(identity)

    def run(self) -> None:
        cuts = 0
        while True:
            wait = 0.0 if self.done.is_set() else _POLL
            found, why = self._look(wait)
            if found is None:
                if self.done.is_set() or why == "failed":
                    return
                if why == "busy":  # a long poll a slow gateway held past its timeout
                    continue
                if why == "gone" or self._gateway_gone(cuts):
                    self._ended_at_gateway()
                    return
                cuts += 1
                continue
            cuts = 0
            reports = list(found.get("progress", []))
            following = int(found.get("next", self.next))
            skipped = following - self.next - min(len(reports), PROGRESS_SHOWN)
            shown = reports[-PROGRESS_SHOWN:]
            if skipped > 0:
                shown.insert(0, {"message": f"({skipped} reports skipped)", "source": "script"})
            for report in shown:
                try:
                    self.show(report)
                except Exception:  # whoever shows it failed: the run goes on regardless
                    return
            self.next = following
            if found.get("ended"):
                self.ending = found
                self._ended_at_gateway()
                return
            if self.done.is_set():
                return
            if reports:
                self.done.wait(PROGRESS_PACE)  # the reports of a flood gather meanwhile

    def stop(self, wait: float = 2.0) -> None:
        """The run ended: what was reported before is shown (waiting up to ``wait`` s)."""
        self.done.set()
        self.join(wait)


class SandboxOfRun:
    """The sandbox of one run, as exec and the MCP face start it (``started`` is its
    ``on_start``, after ``then``): ``stop`` (``ProgressWatcher``'s ``on_gone``) kills it,
    or it once it starts, unless ``finish`` said it ended."""

    @staticmethod
    def message(ending: dict[str, Any] | None, again: str, *, stopped: bool = True) -> str:
        """Why the script was stopped, from the gateway's last answer (``ProgressWatcher``'s
        ``ending``; None: the gateway went without one): a gateway that stopped says how many
        calls the run asked for and how many were still under way; ``again``: what to do.
        ``stopped``: False for a script that ended by itself (a call cut) as the gateway went."""
        if ending is not None and not ending.get("closing"):
            return (
                "the run was ended at its gateway (`toolscript runs stop`) and its script was "
                "stopped with it"
            )
        said = (
            "the gateway stopped while the script ran (`toolscript gateway stop`, or its "
            "process ended)"
        )
        if stopped:
            said += " and the script was stopped with it"
        calls, calling = (ending or {}).get("calls"), (ending or {}).get("calling")
        if not isinstance(calls, int) or not isinstance(calling, int):
            said += "; whether its tool calls were made is not known"
        else:
            said += f"; it had asked for {calls} tool call{'s' * (calls != 1)}"
            if calling:
                said += (
                    f", {calling} still under way: whether the server did "
                    f"{'it' if calling == 1 else 'them'} is not known"
                )
        return f"{said}. {again}"

    def __init__(self, then: Callable[..., None] | None = None) -> None:
        self._then = then
        self._lock = threading.Lock()
        self._pids: list[int] = []
        self._asked = False
        self._finished = False
        self.stopped = False  # the script was stopped for it

    def started(self, pid: int, **how: Any) -> None:
        if self._then is not None:
            self._then(pid, **how)
        with self._lock:
            self._pids.append(pid)
            if self._asked and not self._finished:
                self._kill()

    def stop(self) -> None:
        with self._lock:
            if self._finished:
                return
            self._asked = True
            self._kill()

    def _kill(self) -> None:
        for pid in self._pids:
            signal_quietly(pid, signal.SIGKILL, group=True)
            self.stopped = True

    def finish(self) -> None:
        """The sandbox exited (and was waited for): its pid is nobody's to signal now."""
        with self._lock:
            self._finished = True


def show_on_stderr(report: dict[str, Any]) -> None:
    """``ProgressWatcher``'s ``show`` for exec: a line on stderr."""
    sys.stderr.write(format_progress(report))
    sys.stderr.flush()


def show_within(limit: int) -> Callable[[dict[str, Any]], None]:
    """``show_on_stderr`` for at most ``limit`` bytes of lines, then one line saying the
    rest is not shown: where stderr is a file (a background run's), a script reporting
    progress in a loop would fill the disk past its ``--max-output``."""
    shown = [0]

    def show(report: dict[str, Any]) -> None:
        if shown[0] > limit:
            return
        line = format_progress(report)
        shown[0] += len(line.encode())
        if shown[0] > limit:
            line = (
                f"toolscript: progress: more than {limit} bytes of progress reports; "
                "the rest are not shown (`--max-output` bounds them)\n"
            )
        sys.stderr.write(line)
        sys.stderr.flush()

    return show
