"""The ``toolscript`` entry point: errors become a message and an exit code.

A command pays for what it needs at start. ``exec`` (and ``toolscript FILE.ts``) skip
typer entirely; so do ``--version`` and the commands that only ask the gateway or the
run log something (search, get-types, list-tools, list-servers, gateway status, runs),
whose options a small parser here reads before calling the very functions the typer
app calls. Anything it does not take as it is (``--help``, an unknown option, a value
out of range) goes through the typer app in ``toolscript.cli.main``, which says what is
wrong like every command.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Any, NoReturn, cast

from toolscript.errors import InternalError, ToolscriptError, UsageError

__all__ = ["main"]


# Options that mean the same to every command, accepted before it as well as after it.
GLOBAL_OPTIONS = {"--config": "TOOLSCRIPT_CONFIG", "-c": "TOOLSCRIPT_CONFIG"}
GLOBAL_OPTIONS["--cache-dir"] = "TOOLSCRIPT_CACHE_DIR"


def leading_options(argv: list[str]) -> list[str]:
    """``toolscript --config other.json list-servers``: options before the command become
    the variables every command reads (an option after the command still wins)."""
    rest, index = list(argv), 0
    while index < len(rest):
        name, equals, value = rest[index].partition("=")
        if name == "--debug":
            index += 1
            continue
        if name not in GLOBAL_OPTIONS or (not equals and index + 1 >= len(rest)):
            break
        if equals:
            del rest[index]
        else:
            value = rest[index + 1]
            del rest[index : index + 2]
        os.environ[GLOBAL_OPTIONS[name]] = value
    return rest


def _script_arguments(argv: list[str]) -> list[str]:
    """``toolscript path/to/script.ts ...`` means ``toolscript exec --file path/to/script.ts ...``."""
    if not argv or argv[0].startswith("-") or "." not in argv[0]:
        return argv  # no command reads its suffixes (the module compiles regexes: 2 ms)
    from toolscript.execution.source import SCRIPT_SUFFIXES

    if argv[0].endswith(SCRIPT_SUFFIXES):
        return ["exec", "--file", argv[0], *argv[1:]]
    return argv


# The options of the commands the fast path takes: flag -> (parameter, kind). A kind is
# "flag", a type, or the choices; a range follows the type as the typer command has it.
_CONFIG_FILE = {"--config": ("config", str), "-c": ("config", str)}
_CONFIG = _CONFIG_FILE | {"--json": ("as_json", "flag")}
_LIMIT = ("limit", int, 1, 100)
_FAST_COMMANDS: dict[tuple[str, ...], tuple[tuple[str, ...], int, dict[str, tuple[Any, ...]]]] = {
    # command: (positional parameters, how many of them are required, options); a last
    # parameter written "*name" takes every further word, as a list
    ("list-servers",): ((), 0, _CONFIG),
    ("gateway", "status"): ((), 0, _CONFIG),
    ("runs",): ((), 0, _CONFIG | {"--limit": ("limit", int, 1), "-n": ("limit", int, 1)}),
    ("list-tools",): (
        ("server",),
        1,
        _CONFIG | {"--verbose": ("verbose", "flag"), "-v": ("verbose", "flag")},
    ),
    ("get-types",): (("server", "*tools"), 1, _CONFIG),
    ("search",): (
        ("query",),
        1,
        _CONFIG
        | {"--limit": _LIMIT, "-n": _LIMIT}
        | {"--threshold": ("threshold", float, 0, 1), "-t": ("threshold", float, 0, 1)}
        | {"--server": ("server", str), "-s": ("server", str)}
        | {"--output": ("output", ("table", "types")), "-o": ("output", ("table", "types"))}
        | {"--explain": ("explain", "flag"), "-e": ("explain", "flag")},
    ),
    # The face spawns its gateway first thing (cli/mcp.py): typer's parse (it loads
    # pydantic) would come before that.
    ("mcp",): (
        (),
        0,
        _CONFIG_FILE  # no --json: a server, not a report (typer says so)
        | {"--cache-dir": ("cache", str), "--http": ("http", "flag")}
        | {"--port": ("port", int, 0, 65535), "-p": ("port", int, 0, 65535)}
        | {"--yield-after": ("yield_after", float, 0)},
    ),
    # Its own start overlaps its servers' (cli/gateway.py): typer's parse (it loads pydantic)
    # would come before that.
    ("gateway", "start"): (
        (),
        0,
        _CONFIG_FILE
        | {"--cache-dir": ("cache", str), "--host": ("host", str)}
        | {"--port": ("port", int, 0, 65535), "-p": ("port", int, 0, 65535)}
        | {"--connect-timeout": ("connect_timeout", float, 0.1)}
        | {
            "--ready-wait": ("ready_wait", float, 0),
            "--max-request-mb": ("max_request_mb", float, 0.001),
        }
        | {"--search-alpha": ("search_alpha", float, 0, 1)}
        | {"--search-threshold": ("search_threshold", float, 0, 1)}
        | {"--search-model": ("search_model", str), "--search-device": ("search_device", str)}
        | {"--needs": ("needs", str)}
        | {
            flag: (flag[2:].replace("-", "_"), "flag")
            for flag in (
                "--search-no-cache",
                "--ephemeral",
                "--no-warm-checker",
                "--no-inferred",
                "--no-search-index",
                "--no-state",
                "--search-when-idle",
                "--allow-remote",
            )
        },
    ),
}
_NUMBER = {int: re.compile(r"[0-9]+"), float: re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")}


def fast_arguments(arguments: list[str]) -> tuple[tuple[str, ...], dict[str, Any]] | None:
    """The command and its parameters, for a command line the fast path takes as it is;
    None for anything else (typer then parses it, and explains what is wrong)."""
    found = [name for name in _FAST_COMMANDS if tuple(arguments[: len(name)]) == name]
    if not found:
        return None
    command = found[0]
    positional, required, options = _FAST_COMMANDS[command]
    values: dict[str, Any] = {"config": os.environ.get("TOOLSCRIPT_CONFIG") or None}
    if "--cache-dir" in options:
        values["cache"] = os.environ.get("TOOLSCRIPT_CACHE_DIR") or None
    given: list[str] = []
    rest = arguments[len(command) :]
    index = 0
    while index < len(rest):
        token = rest[index]
        index += 1
        if not token.startswith("-"):
            given.append(token)
            continue
        name, equals, value = token.partition("=")
        option = options.get(name) if name.startswith("--") or not equals else None
        if option is None:
            return None  # --help, --, -n5, -ev, an unknown option: typer's to read
        parameter, kind = option[0], option[1]
        if kind == "flag":
            if equals:
                return None
            values[parameter] = True
            continue
        if not equals:
            if index >= len(rest):
                return None
            value, index = rest[index], index + 1
        if value.startswith("-"):
            return None
        if isinstance(kind, tuple):
            if value not in kind:
                return None
        elif kind in _NUMBER:
            if not _NUMBER[kind].fullmatch(value):
                return None
            number = kind(value)
            low, high = (*option[2:], None, None)[:2]
            if (low is not None and number < low) or (high is not None and number > high):
                return None
            value = number
        values[parameter] = value
    rest_name = positional[-1][1:] if positional and positional[-1].startswith("*") else None
    most = len(given) if rest_name else len(positional)
    if not required <= len(given) <= most:
        return None
    if command == ("mcp",) and values.get("port") and not values.get("http"):
        return None  # typer says that --port needs --http
    if rest_name is not None:
        fixed = len(positional) - 1
        if len(given) > fixed:
            values[rest_name] = given[fixed:]
        given, positional = given[:fixed], positional[:fixed]
    values.update(zip(positional, given, strict=False))
    return command, values


def _run_fast(command: tuple[str, ...], values: dict[str, Any]) -> int:
    """Call the command's function as the typer app would; its exit code."""
    try:
        if command == ("list-servers",):
            from toolscript.cli.servers import list_servers

            list_servers(**values)
        elif command == ("gateway", "status"):
            from toolscript.cli.gateway import status

            status(**values)
        elif command == ("runs",):
            from types import SimpleNamespace

            from toolscript.cli.history import list_runs

            list_runs(cast(Any, SimpleNamespace(invoked_subcommand=None)), **values)
        elif command == ("list-tools",):
            from toolscript.cli.tools import list_tools

            list_tools(**values)
        elif command == ("mcp",):
            from toolscript.cli.mcp import mcp_command

            mcp_command(**values)
        elif command == ("gateway", "start"):
            from toolscript.cli.gateway import start

            start(**values)
        elif command == ("get-types",):
            from toolscript.cli.types import get_types

            get_types(**values)
        else:
            from toolscript.cli.search import Output, search

            if "output" in values:
                values["output"] = Output(values["output"])
            search(**values)
    except SystemExit as exc:  # typer.Exit, as cli/lazy.py makes it
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return 0


def _leave(code: int) -> None:
    """Exit at once after a finished exec: the run stopped and removed all it made, and
    the interpreter's own clean-up would add 15 ms to every exec."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):
            stream.flush()
    os._exit(code)


def _mark_gateway_start(arguments: list[str]) -> bool:
    """``gateway start``: record that this project's gateway is starting before anything
    else is imported, so a command run right after `gateway start &` waits for it (the
    command ``start`` marks the same project again, or makes its own mark)."""
    if arguments[:1] != ["gateway"]:
        return False
    from pathlib import Path

    from toolscript.gateway.state import mark_starting, start_cache_dir, start_options

    options = start_options(arguments)
    if options is None:
        return False
    with contextlib.suppress(OSError):  # the command itself says what is wrong
        mark_starting(start_cache_dir(options, Path.cwd(), os.environ))
        return True
    return False


def _note_config_elsewhere(arguments: list[str]) -> None:
    """One line on stderr when the config used is a parent folder's (found as git finds
    ``.git``), so nobody wonders which project a command ran in."""
    if not arguments or arguments[0] in ("hook", "init", "--help", "-h", "--version"):
        return
    if os.environ.get("TOOLSCRIPT_CONFIG") or {"--config", "-c"} & {
        argument.partition("=")[0] for argument in arguments
    }:
        return
    from pathlib import Path

    from toolscript.plumbing.paths import find_config_path

    with contextlib.suppress(OSError):
        here = Path.cwd().resolve()
        found = find_config_path(None, here)
        if found.parent != here:
            sys.stderr.write(f"toolscript: using {found}\n")


def _run_app(arguments: list[str]) -> None:
    """The typer app on ``arguments``; with ``--json``, a usage error click finds (a missing
    argument, an unknown option, a bad choice) is also one JSON object on stdout, as every
    other error is, beside click's own lines on stderr and its exit code (2)."""
    from toolscript.cli.main import app

    if "--json" not in arguments:
        app(args=arguments, prog_name="toolscript")
        return
    import typer

    # click's classes as this typer has them (typer 0.2x carries a click of its own)
    classes: dict[str, Any] = {k.__name__: k for k in typer.BadParameter.__mro__}
    click_error: type[Exception] = classes["ClickException"]
    try:
        # Not standalone: click raises its errors here instead of printing them itself
        code = app(args=arguments, prog_name="toolscript", standalone_mode=False)
    except click_error as caught:
        exc: Any = caught
        if isinstance(exc, classes["UsageError"]):
            from toolscript.cli.output import print_json

            where = exc.ctx.command_path if exc.ctx is not None else "toolscript"
            hint = f"run `{where} --help` for its arguments and options"
            print_json(UsageError(exc.format_message(), hint=hint).to_dict())
        exc.show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("Aborted!\n")
        sys.exit(1)
    if isinstance(code, int):  # a typer.Exit (click returns its code when not standalone)
        sys.exit(code)


# a gateway subcommand typed without `gateway` (click suggested nothing close)
_GATEWAY_COMMANDS = ("start", "stop", "status")

_HOOKS = {
    "session-start": "session_start",
    "session-end": "session_end",
    "pre-tool-use": "pre_tool_use",
}


def _open_closed_streams() -> None:
    """A standard stream the caller closed (``<&-``, ``>&-``, a service manager's) is the
    null device, as a pipe nobody writes or reads: Python left it None (``exec`` asked
    ``sys.stdin.isatty()``: a traceback), and the first file toolscript opened would take
    its number, which its children would inherit as their stdin or stdout."""
    for number, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_RDWR)
        if null != number:
            os.dup2(null, number)
            os.close(null)
        setattr(sys, name, open(number, mode, encoding="utf-8", closefd=False))  # noqa: SIM115


def main() -> None:
    """Entry point: run the app and turn toolscript errors into a message and exit code."""
    _open_closed_streams()
    if sys.platform == "win32":
        # Process groups, POSIX signals and Deno's sandbox flags are what the sandbox and
        # teardown rest on; WSL has them all.
        sys.stderr.write(
            "toolscript: error: toolscript runs on Linux and macOS\n"
            "hint: on Windows, install and run it inside WSL\n"
        )
        sys.exit(2)
    debug = "--debug" in sys.argv[1:] or os.environ.get("TOOLSCRIPT_DEBUG", "") not in ("", "0")
    arguments = _script_arguments(leading_options(sys.argv[1:]))
    _note_config_elsewhere(arguments)
    try:
        if arguments[:1] == ["exec"] and not {"--help", "-h"} & set(arguments):
            from toolscript.execution.command import fast_exec

            code = fast_exec(arguments[1:])
            if code is not None:
                _leave(code)
        command = arguments
        while command[:1] == ["--debug"]:
            command = command[1:]
        if command in (["--version"], ["-V"]):
            from toolscript import __version__

            sys.stdout.write(f"toolscript {__version__}\n")
            _leave(0)
        if len(command) == 2 and command[0] == "hook" and command[1] in _HOOKS:
            # Claude Code waits for these (PreToolUse on every Bash command) and gives
            # SessionEnd about 1.5 s in all, whatever its timeout says: no typer
            from toolscript.cli import hooks

            _leave(getattr(hooks, _HOOKS[command[1]])())
        if command[:1] == ["help"]:  # help COMMAND..., as git and pip take it
            options = [word for word in command[1:] if word.startswith("-")]
            if options:  # (click said "No such option: --json (Possible options: --version)")
                raise UsageError(
                    f"`toolscript help` takes command names, not options ({options[0]}): "
                    "help is text",
                    hint="`toolscript help exec`, or `toolscript exec --help`",
                )
            arguments = command = [*command[1:], "--help"]
        if command[:1] and command[0] in _GATEWAY_COMMANDS:
            raise UsageError(
                f"no command {command[0]!r}: it is a gateway's",
                hint=f"`toolscript gateway {command[0]}`",
            )
        fast = fast_arguments(command) if not {"--help", "-h"} & set(command) else None
        marked = _mark_gateway_start(arguments)
        if fast is not None:
            try:
                code = _run_fast(*fast)
            except BrokenPipeError:  # a reader that stopped early, as click takes it
                code = 1
            finally:
                if marked:
                    from toolscript.gateway.state import abandon_start

                    abandon_start()
            if fast[0] == ("gateway", "start"):  # see below
                from toolscript.plumbing.processes import reap_children

                reap_children()
            if fast[0] == ("mcp",):  # a long-lived server: the interpreter's own exit
                sys.exit(code)
            _leave(code)
        try:
            _run_app(arguments)
        except SystemExit as exit_:
            if arguments[:2] != ["gateway", "start"]:
                raise
            # A stopped gateway closed everything it opened before it logged "stopped";
            # waiting for the interpreter to join library threads (a pipeline step cut
            # short) would only delay the exit past SIGTERM's budget.
            if marked:
                from toolscript.gateway.state import abandon_start

                abandon_start()
            from toolscript.plumbing.processes import reap_children

            reap_children()
            status = exit_.code
            _leave(status if isinstance(status, int) else (0 if status is None else 1))
        finally:
            if marked:
                from toolscript.gateway.state import abandon_start

                abandon_start()
    except ToolscriptError as exc:
        if debug:
            raise
        _fail(exc, arguments)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:  # a folder that cannot be written: say which, and what moves it
        from toolscript.plumbing.paths import is_storage_failure, storage_error

        if debug:
            raise
        _fail(storage_error(exc) if is_storage_failure(exc) else _unexpected(exc), arguments)
    except Exception as exc:
        if debug:
            raise
        _fail(_unexpected(exc), arguments)


UNEXPECTED_HINT = (
    "this is a fault of toolscript's: run the command again with --debug (or "
    "TOOLSCRIPT_DEBUG=1) to see its traceback, and report it"
)


def _unexpected(exc: BaseException) -> InternalError:
    """A fault no code path expected (a bug, or an answer no gateway gives), as an error
    of the tree: said in one line as every error is; ``--debug`` shows the traceback."""
    message = f"toolscript failed unexpectedly: {type(exc).__name__}: {exc}"
    return InternalError(message, hint=UNEXPECTED_HINT)


def _fail(error: ToolscriptError, arguments: list[str]) -> NoReturn:
    """``error`` said and the command ended with its exit code: one line on stderr (and
    its hint), with ``--json`` one object on stdout too (what a script reads)."""
    from toolscript.store.outputs import error_lines

    output = sys.modules.get("toolscript.cli.output")
    if "--json" in arguments and not getattr(output, "json_printed", False):
        from toolscript.cli.output import print_json

        print_json(error.to_dict())
    # an error may quote what a server sent: shown on a terminal, not obeyed
    sys.stderr.write(error_lines(error.message, error.hint, sys.stderr.isatty()))
    _say_kind(arguments, error.kind)
    sys.exit(error.exit_code)


def _say_kind(arguments: list[str], kind: str) -> None:
    """For an ephemeral gateway's run (its stderr read by the run that started it, never
    shown whole): the error's kind after it, which that run answers with."""
    if arguments[:2] == ["gateway", "start"] and "--ephemeral" in arguments:
        from toolscript.store.outputs import KIND_PREFIX

        sys.stderr.write(f"{KIND_PREFIX}{kind}\n")
