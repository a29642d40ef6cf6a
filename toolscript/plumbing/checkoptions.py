"""The compiler options a script's type check uses: Deno's libs without Node's types.

Deno's default lib (``deno.window``) pulls in all of ``@types/node`` through its shared
globals: a warm checker held 206 MB with it, 124-141 MB without. A script's check (the
gateway's warm checker, ``deno run --check`` and the saved scripts' ``deno check`` alike)
reads one config file of toolscript's own, written in its cache: the web and ``Deno``
libs (``SCRIPT_LIBS``) and a globals file (``globals-<tag>.d.ts``) holding what the shared
globals and the window declare (``console``, ``fetch``, ``performance``,
``queueMicrotask``, ``WebAssembly``, ``self``, ``navigator``...: Deno's own text, read
from ``deno types``, their references dropped), and the timers, which Deno types with
Node's (``setTimeout`` returns a ``Timeout`` object, as it does at run time).

A script that uses Node (a ``node:`` module, or one of Node's globals: ``process``,
``Buffer``..., which run in the sandbox) is checked as before, with Deno's default lib
(``uses_node``); so is every script of a module one of whose saved scripts does (its
``node:`` import would bring Node's types into every check of the module anyway).
``check_tag`` names these options: every cache of a verdict keys on it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from toolscript.errors import ExecutionError
from toolscript.plumbing.denobinary import deno_binary, deno_environment
from toolscript.plumbing.paths import user_cache_dir
from toolscript.plumbing.privatefile import write_private

__all__ = [
    "REFUSED_FILE_URL",
    "SCRIPT_LIBS",
    "check_imports",
    "check_tag",
    "shared_check_config",
    "uses_node",
    "write_check_config",
]

log = logging.getLogger("toolscript.checker")

# Where an import map sends every ``file:`` URL (exact entries let the module and the
# check's own files through): a script reads no file of the disk, neither when it runs nor
# when it is type-checked (a type-only import is read by the checker alone).
REFUSED_FILE_URL = "https://local-files-are-not-available-to-toolscripts.invalid/"

SCRIPT_LIBS = (
    "esnext",
    "deno.ns",
    "deno.console",
    "deno.url",
    "deno.web",
    "deno.fetch",
    "deno.crypto",
    "deno.websocket",
    "deno.broadcast_channel",
    "deno.webstorage",
    "deno.cache",
    "deno.webgpu",  # `navigator.gpu`
    # Not `deno.unstable`: its APIs (`Deno.openKv`, `Deno.cron`...) are undefined in the
    # sandbox, which gives no --unstable flag; without their types a script naming one
    # fails its check rather than its run, and the checker holds 4 MB less.
)

# Node's own globals a script may use in the sandbox (Deno defines them), and the
# namespace and types of theirs: a script naming one is checked with Node's types (naming
# one otherwise, a variable called `global`, only costs it the warm checker). Not
# CommonJS's (`require`, `module`, `__dirname`...): undefined in the sandbox, their check
# fails before the run, not in it.
NODE_GLOBALS = (
    "process",
    "Buffer",
    "global",
    "setImmediate",
    "clearImmediate",
    "NodeJS",
    "BufferEncoding",
    "BufferConstructor",
    "AllowSharedBuffer",
    "NonSharedBuffer",
)
_NAMES = "|".join(NODE_GLOBALS)
_NODE_GLOBAL = re.compile(r"(?<![\w$])(?:" + _NAMES + r")(?![\w$])")
_NODE_SPECIFIER = re.compile(r"""["'`]node:""")
# A global named by a string: `globalThis["process"]`.
_NODE_INDEXED = re.compile(r"""\[\s*(["'`])(?:""" + _NAMES + r""")\1\s*\]""")
# What is not code, found left to right: a comment, a quoted string, a template literal's
# text up to its end or its next `${` (a `//` in a string is no comment, a quote in a
# template's text opens no string).
_NOT_CODE = re.compile(
    r"""//[^\n]*|/\*[\s\S]*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'"""
    r"""|`(?:\\[\s\S]|\$(?!\{)|[^`\\$])*(?:`|\$\{)"""
)
# Where something not code may start, or a template's `${...}` end.
_MARK = re.compile(r"[/\"'`{}]")
# A regular expression literal (its quotes, backticks and slashes open nothing), where one
# may stand: not after a value (`a / b / c` divides), but after an operator, a keyword, `(`,
# `{`, `}` or the start.
_REGEX = re.compile(r"/(?![/*])(?:\\[^\n]|\[(?:\\[^\n]|[^\]\\\n])*\]|[^/\\\n\[])+/[\w$]*")
_REGEX_AFTER_WORDS = frozenset(
    [
        "await",
        "case",
        "delete",
        "do",
        "else",
        "extends",
        "in",
        "instanceof",
        "new",
        "of",
        "return",
        "throw",
        "typeof",
        "void",
        "yield",
    ]
)
# In a template's `${...}`: the rest of its text once the braces close.
_TEMPLATE_REST = re.compile(r"""(?:\\[\s\S]|\$(?!\{)|[^`\\$])*(?:`|\$\{)""")

# The two files of `deno types` that reference Node's types (the shared globals) or the
# file that does (the window: `self`, `navigator`...), each named by a line of its head;
# their text is kept, their references dropped.
_FILE_HEADS = ('/// <reference lib="node" />\n', '/// <reference lib="deno.shared_globals" />\n')
_FILE_START = "// Copyright "
_REFERENCE = re.compile(r"^/// <reference [^\n]*\n", re.MULTILINE)

# The timers, typed as Deno runs them (a Timeout object, a number as a primitive); with
# Node's types loaded too (a `node:` import) these merge with Node's own declarations.
TIMERS = """
declare namespace NodeJS {
  interface Timeout {
    ref(): this;
    unref(): this;
    hasRef(): boolean;
    refresh(): this;
    close(): this;
    [Symbol.toPrimitive](): number;
    [Symbol.dispose](): void;
  }
}
declare function setTimeout<TArgs extends any[]>(
  callback: (...args: TArgs) => void,
  ms?: number,
  ...args: TArgs
): NodeJS.Timeout;
declare function setTimeout(callback: (_: void) => void, ms?: number): NodeJS.Timeout;
declare function setInterval<TArgs extends any[]>(
  callback: (...args: TArgs) => void,
  ms?: number,
  ...args: TArgs
): NodeJS.Timeout;
declare function setInterval(callback: (_: void) => void, ms?: number): NodeJS.Timeout;
declare function clearTimeout(timeout: NodeJS.Timeout | string | number | undefined): void;
declare function clearInterval(interval: NodeJS.Timeout | string | number | undefined): void;
"""
_VERSION = "1"  # of what this module writes: a change here is a new tag


def uses_node(code: str) -> bool:
    """Whether ``code`` names a ``node:`` module or one of Node's globals (outside comments
    and strings): then it is checked as before, with Deno's default lib and Node's types.
    Where it cannot tell, it says yes: a wrong no fails a script Node's types would pass."""
    if _NODE_SPECIFIER.search(code) or _NODE_INDEXED.search(code):
        return True
    kept = _code_only(code)
    return kept is None or _NODE_GLOBAL.search(kept) is not None


def _code_only(code: str) -> str | None:
    """``code`` with its comments, strings and templates' text left out (``${...}`` kept,
    and regular expression literals); None where a ``/`` that may begin one begins none
    (``i++ / 2``: which it is would take a parser)."""
    kept: list[str] = []
    depths: list[int] = []  # per open `${`: the braces opened inside it
    value = False  # whether what came last is a value (a `/` after it divides)
    at = 0
    while (next_mark := _MARK.search(code, at)) is not None:
        between = code[at : next_mark.start()]
        kept.append(between)
        if between.strip():
            value = _ends_in_value(between)
        at = next_mark.start()
        char = code[at]
        if char in "{}":
            value = False
            if not depths:
                kept.append(char)
                at += 1
            elif char == "{":
                depths[-1] += 1
                kept.append(char)
                at += 1
            elif depths[-1]:
                depths[-1] -= 1
                kept.append(char)
                at += 1
            else:  # the `${` closes: the template's text goes on
                depths.pop()
                rest = _TEMPLATE_REST.match(code, at + 1)
                at += 1
                if rest is not None:  # (never closed: the rest is read as code)
                    if rest.group().endswith("${"):
                        depths.append(0)
                    else:
                        value = True
                    kept.append(" ")
                    at = rest.end()
            continue
        if char == "/" and code[at + 1 : at + 2] not in ("/", "*"):
            if not value:
                regex = _REGEX.match(code, at)
                if regex is None:
                    return None
                kept.append(regex.group())  # (its text may name a global: a yes, harmless)
                at = regex.end()
                value = True
                continue
            kept.append(char)  # a division
            at += 1
            value = False
            continue
        found = _NOT_CODE.match(code, at)
        if found is None:
            kept.append(char)
            at += 1
            continue
        if char in "\"'":
            value = True
        elif char == "`":
            opens = found.group().endswith("${")
            if opens:
                depths.append(0)
            value = not opens
        kept.append(" ")
        at = found.end()
    kept.append(code[at:])
    return "".join(kept)


def _ends_in_value(code: str) -> bool:
    """Whether ``code`` (of a script, not a comment or string) ends in a value: a name, a
    number, ``)`` or ``]``, not a keyword a regular expression may follow."""
    code = code.rstrip()
    if code[-1] in ")]":
        return True
    start = len(code)
    while start and (code[start - 1].isalnum() or code[start - 1] in "_$"):
        start -= 1
    return start < len(code) and code[start:] not in _REGEX_AFTER_WORDS


@functools.cache
def check_tag() -> str:
    """A short name for these options with this Deno binary: verdicts keep it in their keys."""
    try:
        binary = deno_binary()
        stat = os.stat(binary)
        seen = f"{stat.st_size}:{stat.st_mtime_ns}"
    except (OSError, ExecutionError):  # no Deno: its check fails and says so
        binary, seen = "", ""
    text = json.dumps([_VERSION, SCRIPT_LIBS, TIMERS, binary, seen])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def write_check_config(
    path: Path | None = None, lock: object = False, dependencies: dict[str, str] | None = None
) -> Path:
    """The config file a check reads: at ``path`` (the warm checker's, with its ``lock`` as
    Deno reads it), else the one of this tag (and these ``dependencies``) in the cache,
    written once; its globals file first. Private, as everything there. ``ExecutionError``
    when Deno's types cannot be read.

    ``dependencies``: a module's packages as their fetch declared them (name to specifier):
    Deno compares a config's imports with the ``workspace`` part of a frozen lock, and
    the lock was written with these."""
    globals_file = _globals_file()
    if path is None:
        name = f"deno-{check_tag()}"
        if dependencies:
            listed = json.dumps(sorted(dependencies.items())).encode()
            name += "-" + hashlib.sha256(listed).hexdigest()[:12]
        path = user_cache_dir() / "check" / f"{name}.json"
        if _mark_used(path):
            return path
    options = {"lib": list(SCRIPT_LIBS), "types": [globals_file.as_uri()]}
    config: dict[str, Any] = {"lock": lock, "compilerOptions": options}
    if dependencies:
        config["imports"] = dependencies
    return write_private(path, json.dumps(config) + "\n")


def shared_check_config(dependencies: dict[str, str] | None = None) -> Path | None:
    """``write_check_config``'s file in the cache; None when Deno's types cannot be read:
    then Deno checks with its default lib, as before (the warm checker does not start)."""
    try:
        return write_check_config(dependencies=dependencies)
    except ExecutionError as exc:
        if not isinstance(exc.__cause__, OSError):  # a Deno that does not start: its run says so
            log.warning("type checks: %s; checking with Deno's default lib", exc)
        return None


def check_imports() -> dict[str, str]:
    """Import map entries the check needs: its globals file, by its exact URL (a map that
    sends every other ``file:`` URL elsewhere must let this one through)."""
    url = _globals_file().as_uri()
    return {url: url}


def _globals_file() -> Path:
    path = user_cache_dir() / "check" / f"globals-{check_tag()}.d.ts"
    if not _mark_used(path):
        write_private(path, _globals_text())
    return path


def mark_check_files_used() -> None:
    """This tag's shared config and globals file marked used (a running gateway's warm
    checker reads the globals file through its own config: ``store/cacheprune.py`` keeps
    what was used within a day)."""
    root, tag = user_cache_dir() / "check", check_tag()
    for path in (root / f"deno-{tag}.json", root / f"globals-{tag}.d.ts"):
        _mark_used(path)


def _mark_used(path: Path) -> bool:
    """Whether ``path`` is there; if so it is marked used now (its modification time:
    the cache's prune removes what went unused for ``--older-than`` days)."""
    try:
        os.utime(path)
    except FileNotFoundError:
        return False
    except OSError:
        return path.exists()
    return True


def _globals_text() -> str:
    try:
        types = subprocess.run(
            [deno_binary(), "types"],
            capture_output=True,
            env=deno_environment(),
            timeout=60,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError) as exc:
        raise ExecutionError(f"`deno types` failed: {exc}") from exc
    parts = ["// toolscript: Deno's shared and window globals without Node's types\n"]
    for head in _FILE_HEADS:
        found = types.find(head)
        start = types.rfind(_FILE_START, 0, found)
        end = types.find(_FILE_START, found)
        if found < 0 or start < 0:
            raise ExecutionError(f"`deno types` has no file with {head.strip()}")
        parts.append(_REFERENCE.sub("", types[start : end if end >= 0 else len(types)]))
    return "".join(parts) + TIMERS
