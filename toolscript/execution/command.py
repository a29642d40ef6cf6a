"""``exec`` without typer: parse, read the script, find a gateway, run it in the sandbox.

Kept free of typer (which imports pydantic): the exec path starts 100 ms sooner.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from toolscript.errors import ToolscriptError, UsageError
from toolscript.execution.execoptions import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_MEMORY_MB,
    DEFAULT_TIMEOUT,
    EXEC_OPTIONS,
    ExecOption,
)
from toolscript.execution.sandbox import Denial, Limits, Script
from toolscript.execution.source import SCRIPT_SUFFIXES
from toolscript.store.savedscripts import (
    MAX_RUN_SCRIPT_BYTES,
    require_script_size,
    script_too_large,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_MEMORY_MB",
    "DEFAULT_TIMEOUT",
    "EXEC_OPTIONS",
    "MAX_RUN_SCRIPT_BYTES",
    "ExecOption",
    "exec_parser",
    "fast_exec",
    "missing_import",
    "require_saved",
    "require_script_size",
    "run_exec",
    "saved_script_call",
    "silent_script",
    "uncalled_default_export",
]

INTERRUPTED = 130  # exit code of a run stopped by Ctrl+C (128 + SIGINT), as cli/entry.py exits


def run_exec(
    code: str | None,
    file: Path | None,
    check: bool,
    timeout: float | None,
    memory: int | None,
    max_output: int | None,
    config: str | None,
    cache: str | None,
    *,
    max_calls: int | None = None,
    resume: str | None = None,
    trace: bool = False,
    saved: str | None = None,
    background: bool = False,
    as_json: bool = False,
) -> int:
    """Read the script, find (or start) a gateway, run the script as a run of the gateway
    (see ``execution/runhandle.py``); the exit code. With ``saved``, ``code`` calls that saved
    script (``saved_script_call``), which must be in the gateway's module. With
    ``background`` the running gateway runs it (``execution/background.py``): its id is
    printed at once (``{"run": ID}`` with ``as_json``). A limit left None is the resumed
    run's (a run that resumes one: ``--resume``, or the same script once its call is
    approved), else its ``EXEC_OPTIONS`` fallback."""
    from toolscript.execution.lifeline import Lifeline
    from toolscript.execution.locate import gateway_for_run, uses_gateway
    from toolscript.execution.sandbox import run_toolscript
    from toolscript.store.runlog import new_run_id, require_run_id

    if resume is not None:
        require_run_id(resume)
    from_run = resume is not None and code is None and file is None
    if saved is not None:
        script = Script(
            code or "", f"<run {saved}>.ts", "run.ts", run_command=f"toolscript run {saved}"
        )
    else:
        script = Script("", "") if from_run else _read_script(code, file)
    given = {"timeout": timeout, "memory_mb": memory, "max_output": max_output}
    limits = _limits(given, {})
    if as_json and not background:
        raise UsageError(
            "--json goes with --background (the run's id as JSON); a script prints its own output",
            hint="`return VALUE` prints VALUE as JSON",
        )
    if background:
        return _start_in_background(
            script, config, cache, check, given, max_calls, resume, saved, trace, as_json
        )
    found: list[str] = []
    called = _called_code(script, saved, config)
    with (
        Lifeline() as lifeline,
        gateway_for_run(
            config,
            cache,
            needed=uses_gateway(script.code) or resume is not None,
            on_start=lifeline.watch,
            code=called,
            found=found,
        ) as (url, module_hash),
    ):
        if saved is not None:
            if found == ["running"]:  # its servers still connecting: as the run's own wait
                module_hash = _wait_for_connecting(url, called) or module_hash
            _require_saved(url, saved, config)
        if from_run:
            from toolscript.execution.runhandle import stopped_script

            assert resume is not None
            script = stopped_script(url, resume)
        if module_hash == "none":  # no gateway, and the script needs none: no run either
            ran = run_toolscript(
                script,
                url,
                module_hash,
                on_start=lifeline.watch,
                check=check,
                limits=limits,
                spill=_spill_file(config, new_run_id()),
            )
        else:
            ran = _run_in_gateway(
                script,
                url,
                module_hash,
                lifeline,
                check,
                given,
                code != "-",
                max_calls=max_calls,
                resume=resume,
                trace=trace,
                config=config,
                # A gateway that runs already has a warm checker: a new script is likely to
                # need no Deno check, and a spare Deno starts while the run is registered
                # and checked.
                spare=found == ["running"],
                # a running gateway's server still connecting joins it: wait for it (one
                # started for this run stops the server after it: nothing to wait for)
                wait_for_servers=found == ["running"],
            )
        missing = missing_import(script.code) if ran == 1 and saved is None else None
        if missing is not None:  # Deno says only "Cannot find name 'tools'"
            sys.stderr.write(
                f"hint: `{missing}` comes from toolscript's module: begin the script with "
                f'import {{ {missing} }} from "toolscript";\n'
            )
        if ran == 0 and saved is None and silent_script(script.code):
            sys.stderr.write(
                "note: the script neither returns nor prints anything, so nothing is shown: "
                "`return VALUE` prints VALUE as JSON (`return await tools.x.y(...)`), "
                "console.log prints as it goes\n"
            )
        if ran == 0 and saved is None and uncalled_default_export(script.code):
            # quoted as the shell needs it: the line is for copying ("my script.ts")
            shown = "FILE.ts" if script.display_name.startswith("<") else script.display_name
            shown = shlex.quote(shown)
            sys.stderr.write(
                "note: the script's default export is a function that nothing called: exec "
                "runs a file's top level. Save it and run it with its input: `toolscript save "
                f"NAME {shown}`, then `toolscript run NAME --input '{{...}}'`\n"
            )
        return ran


_CALLS_TOOLS = re.compile(r"\btools\s*[.[]")


def no_config_note(config: str | None, script: Script) -> str | None:
    """What to say of a failed script that calls tools where no config is found (so no
    server is there to call): the config of the script file's own project, when it has one,
    and how to run it with that; None when a config was found or named."""
    if config or os.environ.get("TOOLSCRIPT_GATEWAY_URL") or not _CALLS_TOOLS.search(script.code):
        return None
    from toolscript.plumbing.paths import CONFIG_FILENAME, find_config_path

    found = find_config_path(None)
    if found.is_file():
        return None
    note = (
        f"note: no {CONFIG_FILENAME} in {found.parent} or a folder above it, so no server is "
        "configured (a script file's folder does not choose the project)"
    )
    own = None
    if not script.display_name.startswith("<"):
        with contextlib.suppress(OSError, RuntimeError):
            beside = find_config_path(None, Path(script.display_name).resolve().parent)
            own = beside if beside.is_file() else None
    if own is None:
        return note + "; run it from the project's folder, or name its config with --config PATH"
    shown = shlex.quote(script.display_name)
    return (
        f"{note}; the script's project has one: `toolscript --config {shlex.quote(str(own))} "
        f"{shown}`, or run it from {shlex.quote(str(own.parent))}"
    )


def _start_in_background(
    script: Script,
    config: str | None,
    cache: str | None,
    check: bool,
    limits: dict[str, Any],
    max_calls: int | None,
    resume: str | None,
    saved: str | None,
    trace: bool,
    as_json: bool,
) -> int:
    """``exec --background``: the running gateway runs the script; its id printed."""
    import json

    from toolscript.execution.background import background_gateway, start_background

    if trace:
        raise UsageError(
            "--trace lists a run's calls as it ends; a background run's are in its log",
            hint="`toolscript runs show RUN_ID` once it ended",
        )
    called = _called_code(script, saved, config)
    url = background_gateway(config, cache, code=called)
    if resume is not None and not script.code:
        from toolscript.execution.runhandle import stopped_script

        script = stopped_script(url, resume)
        called = script.code
    _wait_for_connecting(url, called)
    if saved is not None:
        _require_saved(url, saved, config)
    run_id = start_background(
        url, script, check=check, limits=limits, max_calls=max_calls, resume=resume
    )
    sys.stdout.write(json.dumps({"run": run_id}) + "\n" if as_json else run_id + "\n")
    sys.stdout.flush()
    if not as_json and sys.stderr.isatty():
        sys.stderr.write(
            f"toolscript: run {run_id} runs in the gateway; `toolscript runs wait {run_id}` "
            "shows its output and result\n"
        )
    return 0


def _called_code(script: Script, saved: str | None, config: str | None) -> str:
    """The code whose ``tools.<namespace>`` say which servers a run calls (what it waits for
    of a gateway still starting): saved script ``saved``'s file for `toolscript run`, whose
    own code only calls it; "" (every server) when that file cannot be read."""
    if saved is None:
        return script.code
    from toolscript.plumbing.boundedread import read_regular_file
    from toolscript.plumbing.paths import find_config_path
    from toolscript.store.savedscripts import MAX_SCRIPT_BYTES, check_name, scripts_dir

    try:
        check_name(saved)
        path = scripts_dir(find_config_path(config).parent) / f"{saved}.ts"
        return read_regular_file(path, MAX_SCRIPT_BYTES, links=False).decode("utf-8")
    except (OSError, UnicodeDecodeError, ToolscriptError):
        return ""


def _wait_for_connecting(url: str, called: str) -> str | None:
    """Wait for the servers ``called`` names that still connect to the gateway at ``url``
    (``wait_for_connecting_servers``): the checks of a background run and of a saved script
    would otherwise fail at once on their namespaces. The module's new hash, if any."""
    from toolscript.execution.locate import wait_for_connecting_servers

    with contextlib.suppress(ToolscriptError, ValueError):  # the run then says what is
        return wait_for_connecting_servers(url, called)
    return None


def _limits(given: Mapping[str, Any], carried: Mapping[str, Any]) -> Limits:
    """The sandbox's limits: those ``given``, else ``carried`` (the gateway's word on the
    run: the resumed run's), else exec's defaults."""
    from toolscript.execution.sandbox import Limits

    def pick(name: str, option: str) -> Any:
        if given.get(name) is not None:
            return given[name]
        if isinstance(carried.get(name), int | float):
            return EXEC_OPTIONS[option].kind(carried[name])
        return EXEC_OPTIONS[option].fallback

    return Limits(
        timeout=pick("timeout", "timeout"),
        memory_mb=pick("memory_mb", "memory"),
        max_output=pick("max_output", "max_output"),
    )


def _spill_file(config: str | None, run_id: str) -> Path:
    """Where a run's whole output goes when it passes --max-output (made only then)."""
    from toolscript.plumbing.paths import find_config_path, project_state_dir
    from toolscript.store.outputs import output_file

    return output_file(project_state_dir(find_config_path(config).parent), run_id)


def _run_in_gateway(
    script: Script,
    url: str,
    module_hash: str,
    lifeline: Any,
    check: bool,
    given: dict[str, Any],
    stdin_available: bool,
    *,
    max_calls: int | None,
    resume: str | None,
    trace: bool,
    config: str | None = None,
    spare: bool = False,
    wait_for_servers: bool = False,
) -> int:
    from toolscript.execution.locate import current_module
    from toolscript.execution.runhandle import (
        ENDED_AT_GATEWAY,
        ProgressWatcher,
        PromptWatcher,
        SandboxOfRun,
        end_run,
        format_trace,
        kept_resume_note,
        show_on_stderr,
        start_run,
        stop_message,
        terminal_answer,
    )
    from toolscript.execution.sandbox import policy_denial, run_toolscript

    interactive = stdin_available and sys.stdin.isatty() and sys.stderr.isatty()
    if wait_for_servers:
        from toolscript.execution.locate import wait_for_connecting_servers

        with contextlib.suppress(ToolscriptError, ValueError):  # the run then says what is
            module_hash = wait_for_connecting_servers(url, script.code) or module_hash
    module_hash, module = current_module(url, module_hash)
    ahead = None
    # A spare pays off when Deno's start overlaps the warm checker's round trip (measured:
    # 140 ms less for a new script; 100 ms more for one checked before, which has none).
    from toolscript.execution.sandbox import checked_before

    if (
        spare
        and check
        and not os.environ.get("TOOLSCRIPT_NO_SPARE")
        and not checked_before(script, module_hash)
    ):
        from toolscript.execution.spare import Spare

        with contextlib.suppress(OSError, ToolscriptError):  # a fresh Deno runs it instead
            ahead = Spare(url, module, _limits(given, {}).memory_mb)
    try:
        run = start_run(
            url,
            script.code,
            origin="cli",
            display_name=script.display_name,
            file_name=script.file_name,
            interactive=interactive,
            max_calls=max_calls,
            resume=resume,
            limits=given,
        )
    except BaseException:
        if ahead is not None:
            ahead.discard()
        raise
    # a resumed run's, where this exec gives none (a spare of another heap does not fit)
    limits = _limits(given, run.limits)
    if run.resumed_from:
        sys.stderr.write(
            f"toolscript: resuming run {run.resumed_from}: calls it made are answered from its log\n"
        )
    from toolscript.execution.sandbox import TERMINAL

    def ask(prompt: dict[str, Any]) -> Any:
        """The person's answer on the terminal, the run's output held meanwhile."""
        TERMINAL.hold()
        try:
            return terminal_answer(prompt)
        finally:
            TERMINAL.release()

    watcher = PromptWatcher(run, ask) if run.interactive else None
    if watcher is not None:
        watcher.start()
    # A run its gateway ends first (`runs stop`, the gateway stopped) stops its script.
    sandbox = SandboxOfRun(lifeline.watch)
    progress = ProgressWatcher(
        run, lambda report: TERMINAL.show(lambda: show_on_stderr(report)), on_gone=sandbox.stop
    )
    progress.start()
    code = 1
    try:
        code = run_toolscript(
            script,
            url,
            module_hash,
            on_start=sandbox.started,
            module=module,
            check=check,
            limits=limits,
            warm_check=True,
            script_url=run.script_url,
            spill=_spill_file(config, run.id),
            spare=ahead,
            denial=policy_denial(config),
        )
    except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl+C, a signal (execution/lifeline.py)
        # The run's log says what the shell's $? says: 130 for Ctrl+C, 143 for SIGTERM.
        stopped_by = exc.code if isinstance(exc, SystemExit) else None
        code = stopped_by if isinstance(stopped_by, int) and stopped_by else INTERRUPTED
        raise
    finally:
        sandbox.finish()
        if sandbox.stopped:
            code = ENDED_AT_GATEWAY
        if watcher is not None:
            watcher.stop()
        # A run that ended while the person was asked (the script exited, or was stopped):
        # what it printed meanwhile is shown now, not lost with this process.
        TERMINAL.release()
        answer = end_run(run, code)
        progress.stop()
    again = "Run it again: exec uses the project's gateway, or starts one."
    if sandbox.stopped:
        sys.stderr.write(f"toolscript: error: {SandboxOfRun.message(progress.ending, again)}\n")
        return code
    if code != 0 and answer is None:
        # The script failed first, its call cut ("the gateway could not be reached:
        # Connection reset by peer"), before the watcher saw the gateway gone: said alike.
        said = SandboxOfRun.message(progress.ending, again, stopped=False)
        sys.stderr.write(f"toolscript: error: {said}\n")
    if code != 0:
        # `tools.baddep` undefined (type check or run): say why that server is not there.
        from toolscript.execution.locate import note_unavailable_servers

        with contextlib.suppress(ToolscriptError, ValueError):
            note_unavailable_servers(url, script.code)
        note = no_config_note(config, script)
        if note is not None:
            sys.stderr.write(note + "\n")
    from toolscript.store.outputs import visible_controls

    # Tool errors and arguments in these come from the script and its servers: a terminal
    # shows their control characters, it does not obey them.
    stopped = stop_message(answer)
    kept = kept_resume_note(answer)
    if kept is not None:
        sys.stderr.write(kept)
    if trace:
        sys.stderr.write(visible_controls(format_trace(answer)))
    if stopped is not None:
        sys.stderr.write(visible_controls(stopped[0]))
        return stopped[1]
    return code


# What toolscript's module exports that a script uses as ``NAME.member`` or ``NAME(``; a
# script that imports nothing from "toolscript" and uses one of them forgot its import.
_MODULE_NAMES = re.compile(
    r"(?<![\w$.])(tools|scripts|resources|prompts)\s*(?:\?\.|\.|\[)"
    r"|(?<![\w$.])(search|describe|progress)\s*\("
)
_DECLARED = r"(?:\b(?:const|let|var|function|class|import)\b[^;=]*?\b{name}\b)"


def missing_import(code: str) -> str | None:
    """The name of toolscript's module (``tools``, ``scripts``, ...) a script uses without
    importing or declaring it: the script that failed forgot ``import { tools } from
    "toolscript"``. None when it uses none, or declares what it uses."""
    for match in _MODULE_NAMES.finditer(code):
        name = match.group(1) or match.group(2)
        if not re.search(_DECLARED.format(name=name), code):
            return name
    return None


_DEFAULT_FUNCTION = re.compile(r"\bexport\s+default\s+(?:async\s+)?function\b\s*\*?\s*([\w$]*)")


def uncalled_default_export(code: str) -> bool:
    """Whether a script's default export is a function the script never names again (a saved
    script's shape, run with exec: its top level only defines it)."""
    found = _DEFAULT_FUNCTION.search(code)
    if found is None:
        return False
    name = found.group(1)
    if not name:  # anonymous: nothing in the script can call it
        return True
    elsewhere = code[: found.start()] + code[found.end() :]
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", elsewhere) is None


_OUTPUTS = re.compile(r"\breturn\b|\bconsole\s*\.|\bDeno\s*\.\s*std(?:out|err)\b|\bprogress\s*\(")


def silent_script(code: str) -> bool:
    """Whether a script has no way to show anything (no ``return``, ``console``, Deno's
    stdout or stderr, ``progress``): an agent's first script that ends on
    ``await tools.x.y(...)`` shows nothing, and nothing says why."""
    return not _OUTPUTS.search(code) and not _DEFAULT_FUNCTION.search(code)


def saved_script_call(name: str, input_text: str, signature: str | None = None) -> str:
    """A script calling saved script ``name`` with ``input_text`` (a JSON object): its
    return value is printed. The type check of the call checks the input. ``signature``:
    its default export's declaration, when known; one with no parameter is called with
    none (an empty input), as `{}` would not type-check."""
    import json

    from toolscript.store.savedscripts import check_name, takes_no_input

    check_name(name)
    try:
        value = json.loads(input_text)
    except ValueError as exc:
        raise UsageError(f"the input is not JSON: {exc}", hint="give a JSON object") from None
    if not isinstance(value, dict):
        raise UsageError("the input must be a JSON object (the script's one argument)")
    if signature is not None and takes_no_input(signature):
        if value:
            raise UsageError(
                f"saved script {name} takes no input ({' '.join(signature.split())}), "
                f"but it was given {', '.join(map(repr, list(value)[:5]))}",
                hint=f"run it without an input (`toolscript run {name}`), or give its default "
                "export a parameter: `(input: { ... })`",
            )
        return f'import {{ scripts }} from "toolscript";\nreturn await scripts.{name}();\n'
    literal = json.dumps(value, ensure_ascii=False, indent=2)
    if len(literal) * 4 > MAX_RUN_SCRIPT_BYTES:  # else it cannot be over, whatever it holds
        literal = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    code = f'import {{ scripts }} from "toolscript";\nreturn await scripts.{name}({literal});\n'
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > MAX_RUN_SCRIPT_BYTES:
        # the run is a script holding the input: its limit said "the script is N bytes"
        # to someone who had written no script
        raise UsageError(
            f"the input is too large: {len(input_text.encode('utf-8', 'surrogatepass')):,} "
            f"bytes, {size:,} with the call around it, over the {MAX_RUN_SCRIPT_BYTES:,} "
            f"bytes a run may be; {name} was not run",
            hint="give the script where the data is (a path, an id) and read it through a "
            "tool (a file server's read)",
        )
    return code


def _require_saved(url: str, name: str, config: str | None) -> None:
    import json

    from toolscript.execution.locate import gateway_request
    from toolscript.execution.sandbox import policy_denial

    body = gateway_request(url, "/scripts", 30.0, answers=True)
    require_saved(json.loads(body) if body else {}, name, policy_denial(config))


def require_saved(listing: dict[str, Any], name: str, denial: Denial | None = None) -> None:
    """A clear error for a saved script the gateway's module does not offer (``listing``:
    what ``GET /scripts`` answers); ``denial`` says when a tool it calls is one the policy
    denies."""
    from toolscript.errors import ExecutionError, NotFoundError

    scripts = {s["name"]: s for s in listing.get("scripts", [])}
    if name not in scripts:
        import difflib

        close = difflib.get_close_matches(name, list(scripts), n=3)
        hint = None  # the close names are the hint
        if not close:
            hint = (
                "`toolscript list-scripts` lists them"
                if scripts
                else "save one with `toolscript save NAME FILE.ts`"
            )
        raise NotFoundError(
            f"no saved script named {name} in {listing.get('directory', 'toolscripts/')}",
            suggestions=close,
            hint=hint,
        )
    if scripts[name]["status"] == "broken":
        from toolscript.execution.sandbox import with_denials

        said = [str(error) for error in scripts[name]["errors"]]
        errors = "\n".join(f"  {e}" for e in (with_denials(said, denial) if denial else said))
        raise ExecutionError(
            f"saved script {name} does not type-check against the current tools:\n{errors}",
            hint=f"edit {listing.get('directory', 'toolscripts')}/{name}.ts until it checks "
            "(the gateway checks it again at each edit; `toolscript list-scripts` shows it), "
            f"or save a fixed copy over it: `toolscript save --force {name} FILE.ts`",
        )


class _Refused(Exception):
    """The fast parser met something it leaves to typer, which explains it like every command."""


class _FastParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Refused(message)


def exec_parser() -> argparse.ArgumentParser:
    """The fast parser of ``exec``, built from EXEC_OPTIONS (``--help`` goes through typer)."""
    parser = _FastParser(prog="toolscript exec", add_help=False)
    parser.add_argument("code", nargs="?")
    parser.add_argument("--check", dest="check", action="store_true", default=True)
    parser.add_argument("--no-check", dest="check", action="store_false")
    parser.add_argument("--trace", dest="trace", action="store_true", default=False)
    parser.add_argument("--background", dest="background", action="store_true", default=False)
    parser.add_argument("--json", dest="as_json", action="store_true", default=False)
    for name, option in EXEC_OPTIONS.items():
        default = os.environ.get(option.envvar) if option.envvar else None
        parser.add_argument(
            *option.flags, dest=name, type=option.kind, default=default or option.default
        )
    return parser


def fast_exec(arguments: list[str]) -> int | None:
    """``exec`` without typer (and the pydantic it imports): 100 ms less per run.

    None for anything it does not take as it is (an unknown option, a value of the wrong
    type or out of range): the typer command then says what is wrong, like every command.
    """
    try:
        parsed, unknown = exec_parser().parse_known_args(arguments)
    except _Refused:
        unknown = ["?"]
    if unknown or not all(
        option.allows(getattr(parsed, name))
        for name, option in EXEC_OPTIONS.items()
        if option.minimum is not None or option.maximum is not None
    ):
        return None
    return run_exec(
        parsed.code,
        parsed.file,
        parsed.check,
        parsed.timeout,
        parsed.memory,
        parsed.max_output,
        parsed.config,
        parsed.cache_dir,
        max_calls=parsed.max_calls,
        resume=parsed.resume,
        trace=parsed.trace,
        background=parsed.background,
        as_json=parsed.as_json,
    )


FILE_SUFFIXES = (".ts", ".mts", ".js", ".mjs")  # an argument ending so, without spaces, is a path


def names_a_file(code: str) -> bool:
    """Whether exec's CODE argument is a path (``exec scripts/job.ts``), not code to compile."""
    if code == "-" or "\n" in code:
        return False
    if not any(character.isspace() for character in code) and code.endswith(FILE_SUFFIXES):
        return True
    try:
        return Path(code).is_file()
    except (OSError, ValueError):  # a name too long, or holding NUL: code it is
        return False


# How long exec given no CODE waits for a first byte on a piped standard input (a heredoc's or
# a pipe's is there at once) before saying there is nothing to run: an agent's shell may
# leave its stdin an open pipe no one writes to.
STDIN_WAIT = 2.0


def _stdin_piped() -> bool:
    """Whether standard input, not a terminal, holds a script (or its end) to read: exec
    given no CODE reads it as if given ``-`` (``toolscript exec <<'EOF'``)."""
    import select

    stdin = sys.stdin
    if stdin is None or stdin.closed:
        return False
    try:
        if stdin.isatty():
            return False
        readable, _, _ = select.select([stdin], [], [], STDIN_WAIT)
    except (OSError, ValueError):
        return False
    return bool(readable)


def _read_script(code: str | None, file: Path | None) -> Script:
    script = _script_read(code, file)
    if script.code.startswith("\ufeff"):  # an editor's byte order mark: no part of the code
        script = script._replace(code=script.code[1:])
    return script


def _script_read(code: str | None, file: Path | None) -> Script:
    if file is not None and str(file) == "-":  # `--file -`: standard input, as `exec -`
        if code is not None:
            raise UsageError("give either CODE or a file, not both")
        file, code = None, "-"
    if file is None and code is None and _stdin_piped():
        code = "-"
    if file is None and code is not None and names_a_file(code):
        file, code = Path(code), None
    if file is not None:
        if code is not None:
            raise UsageError("give either CODE or a file, not both")
        if file.suffix not in SCRIPT_SUFFIXES:
            # Type-check diagnostics quote the file: a mistaken or injected `--file .env`
            # would put its secrets into the agent's context.
            raise UsageError(
                f"not a TypeScript or JavaScript file: {file}",
                hint="toolscripts end in " + ", ".join(SCRIPT_SUFFIXES),
            )
        try:
            # Without blocking: opening a FIFO named x.ts waited for a writer for ever.
            descriptor = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                os.close(descriptor)
                raise UsageError(
                    f"cannot read {file}: not a regular file (a FIFO, a device or a folder)"
                )
            with open(descriptor, "rb") as handle:
                size = status.st_size
                if size > MAX_RUN_SCRIPT_BYTES:
                    raise script_too_large(f"{file} is {size} bytes")
                text = handle.read(MAX_RUN_SCRIPT_BYTES + 1).decode("utf-8")  # a file growing
        except FileNotFoundError:
            raise UsageError(
                f"file not found: {file}", hint="check the path (relative to the current directory)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {file}: {exc}") from exc
        require_script_size(text, str(file))
        return Script(code=text, display_name=str(file), file_name=_script_name(file))
    if code is None:
        raise UsageError(
            "nothing to run: give CODE, pipe it (or '-' for stdin), or a .ts file",
            hint="toolscript exec --help",
        )
    if code == "-":
        piped = sys.stdin.buffer.read(MAX_RUN_SCRIPT_BYTES + 1)
        if len(piped) > MAX_RUN_SCRIPT_BYTES:
            raise script_too_large("the script on standard input is over it")
        try:
            text = piped.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"standard input is not UTF-8 text: {exc}") from None
        script = Script(code=text, display_name="<stdin>.ts", file_name="stdin.ts")
    else:
        require_script_size(code, "CODE")
        script = Script(code=code, display_name="<inline>.ts", file_name="inline.ts")
    if not script.code.strip():  # an empty heredoc or pipe is a slip, not a script to run
        where = "standard input was empty" if code == "-" else "CODE is empty"
        raise UsageError(
            f"no script given: {where}",
            hint="pass the TypeScript as CODE, pipe it to `toolscript exec -`, or name a .ts file",
        )
    return script


def _script_name(path: Path) -> str:
    return path.name
