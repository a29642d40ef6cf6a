"""The ``toolscript`` entry point: errors become a message and an exit code.

``exec`` (and ``toolscript FILE.ts``) skip typer entirely; everything else goes
through the typer app in ``toolscript.cli.main``.
"""

from __future__ import annotations

import contextlib
import os
import sys

from toolscript.errors import ToolscriptError
from toolscript.execution.source import SCRIPT_SUFFIXES

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
    if argv and not argv[0].startswith("-") and argv[0].endswith(SCRIPT_SUFFIXES):
        return ["exec", "--file", argv[0], *argv[1:]]
    return argv


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
    if not arguments or arguments[0] in ("hook", "--help", "-h", "--version"):
        return
    if os.environ.get("TOOLSCRIPT_CONFIG") or {"--config", "-c"} & {
        argument.partition("=")[0] for argument in arguments
    }:
        return
    from pathlib import Path

    from toolscript.paths import find_config_path

    with contextlib.suppress(OSError):
        here = Path.cwd().resolve()
        found = find_config_path(None, here)
        if found.parent != here:
            sys.stderr.write(f"toolscript: using {found}\n")


def main() -> None:
    """Entry point: run the app and turn toolscript errors into a message and exit code."""
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
        marked = _mark_gateway_start(arguments)
        try:
            from toolscript.cli.main import app

            app(args=arguments, prog_name="toolscript")
        finally:
            if marked:
                from toolscript.gateway.state import abandon_start

                abandon_start()
    except ToolscriptError as exc:
        if debug:
            raise
        sys.stderr.write(f"toolscript: error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"hint: {exc.hint}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:  # a folder that cannot be written: say which, and what moves it
        from toolscript.paths import is_storage_failure, storage_error

        if debug or not is_storage_failure(exc):
            raise
        error = storage_error(exc)
        sys.stderr.write(f"toolscript: error: {error.message}\nhint: {error.hint}\n")
        sys.exit(error.exit_code)
