"""Local Python tools: describe a file's functions as MCP tools, call them, and the worker loop.

This module is also the worker program: ``uv run ... python worker.py FILE``
imports FILE (with its PEP 723 dependencies installed by uv) and answers JSON
lines on stdin/stdout. It imports nothing from toolscript, only the standard
library and pydantic, so it runs in the tool's own environment.

Protocol, one JSON object per line:

- worker -> gateway, once imported: ``{"ready": true, "pid": N}``; with ``--describe``,
  ``{"tools": [...], "notes": [why a public function is not a tool, ...]}`` instead
- request: ``{"id": 1, "function": "name", "kwargs": {...}, "config": {...}, "secrets": {...}}``
- response: ``{"id": 1, "result": ..., "error": null}`` or ``{"id": 1, "result": null, "error": "message"}``

The tool's own ``print()`` goes to stderr (file descriptor 1 is moved away from
the protocol channel). Logs go to stderr as JSON lines ``{"level", "message", "logger"}``.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import inspect
import json
import logging
import os
import re
import sys
import threading
import traceback
import typing
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "ToolContext",
    "call_function",
    "describe_module",
    "load_module",
    "public_functions",
    "tool",
]

CONTEXT_PARAMETER = "context"
ANNOTATIONS_ATTRIBUTE = "__toolscript_annotations__"


def tool(
    function: Callable[..., Any] | None = None,
    *,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
) -> Any:
    """Give a tool function MCP annotations, which the policy reads (``destructive=True``
    asks before each call by default)::

        from toolscript import tool

        @tool(destructive=True)
        def drop_table(name: str) -> str: ...

    Works in tool files that run in a worker too (``toolscript`` need not be installed there).
    """
    hints = {
        key: value
        for key, value in (
            ("title", title),
            ("readOnlyHint", read_only),
            ("destructiveHint", destructive),
            ("idempotentHint", idempotent),
            ("openWorldHint", open_world),
        )
        if value is not None
    }

    def mark(target: Callable[..., Any]) -> Callable[..., Any]:
        setattr(target, ANNOTATIONS_ATTRIBUTE, hints)
        return target

    return mark(function) if function is not None else mark


@dataclass
class ToolContext:
    """What a tool function receives when it declares a ``context`` parameter.

    ``config`` and ``secrets`` are this file's entries from ``.toolscript.json``;
    ``log`` is a logger whose records reach the gateway's log with the tool's name;
    ``gateway`` is set for internal tools only (see toolscript.upstream.local.GatewayView).
    """

    config: Mapping[str, Any] = field(default_factory=dict)
    secrets: Mapping[str, str] = field(default_factory=dict)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("toolscript.tool"))
    gateway: Any = None


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (SystemExit, KeyboardInterrupt) as exc:
        # a script made a tool file (`sys.exit(main())`, argparse at the top): in the
        # gateway's process SystemExit took down its task group, every server's with it
        how = f"called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else "was interrupted"
        raise ImportError(
            f"{path.name} {how} while it was imported: a tool file defines functions; put "
            'what it runs as a script under `if __name__ == "__main__":`'
        ) from None
    return module


def public_functions(module: ModuleType) -> dict[str, Callable[..., Any]]:
    """Functions defined in the module, not starting with ``_``, with type hints."""
    found: dict[str, Callable[..., Any]] = {}
    for name, value in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        if value.__module__ != module.__name__ or not getattr(value, "__annotations__", None):
            continue
        found[name] = value
    return found


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:
        return dict(getattr(function, "__annotations__", {}))


@functools.cache
def _arguments_model(function: Callable[..., Any]) -> Any:
    """The pydantic model of the function's parameters (built once per function)."""
    import pydantic

    hints = _hints(function)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name == CONTEXT_PARAMETER or parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
        ):
            continue
        annotation = hints.get(name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (annotation, default)
    return pydantic.create_model(f"{function.__name__}_arguments", **fields)


def _returns(function: Callable[..., Any]) -> Any:
    hints = _hints(function)
    returned = hints.get("return", inspect.Signature.empty)
    return None if returned in (inspect.Signature.empty, None, type(None)) else returned


@functools.cache
def _result_adapter(function: Callable[..., Any]) -> Any:
    """What turns the function's return value into JSON (built once per function)."""
    import pydantic

    return pydantic.TypeAdapter(_returns(function) or Any)


def _output_schema(function: Callable[..., Any]) -> dict[str, Any] | None:
    """The return annotation's JSON Schema (any type: local tools answer with the value itself)."""
    import pydantic

    returned = _returns(function)
    if returned is None:
        return None
    schema: dict[str, Any] = pydantic.TypeAdapter(returned).json_schema()
    return schema


def _why_not_described(name: str, exc: Exception) -> str:
    """Why pydantic could not describe function ``name``, in its writer's terms: pydantic's
    own words for a class it has no schema for ask for ``arbitrary_types_allowed`` in a
    ``model_config`` that a tool file does not have."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    unknown = re.search(r"schema for <class '([\w.]+)'>", first)
    if unknown is None:
        return first
    return (
        f"its type hints use {unknown.group(1).rsplit('.', 1)[-1]}, a class JSON cannot carry "
        "(type its parameters and result with str, int, float, bool, list, dict, or a "
        f"dataclass, TypedDict or pydantic model of those), or name it _{name} to keep it a "
        "helper"
    )


def describe_module(module: ModuleType, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """MCP tool definitions for the module's public functions; why a public function of it is
    not a tool goes in ``notes``, which the gateway logs and shows in status (an unannotated
    one is skipped by rule, not by mistake, but its writer meant a tool more often than a
    helper)."""
    said = notes if notes is not None else []
    tools = []
    for name, function in public_functions(module).items():
        try:
            typing.get_type_hints(function, include_extras=True)
        except NameError as exc:  # pydantic's words for it ask for a model_rebuild() call
            said.append(
                f"{name}() is not a tool: its type hints name {exc.name or str(exc)!r}, which "
                "the file neither defines nor imports"
            )
            continue
        except Exception:  # pydantic may still make sense of them: it says below if not
            pass
        try:
            tools.append(_describe_function(name, function))
        except Exception as exc:  # one function pydantic cannot describe never hides the others
            said.append(f"{name}() is not a tool: {_why_not_described(name, exc)}")
            continue
        gathered = [
            ("*" if parameter.kind is parameter.VAR_POSITIONAL else "**") + parameter.name
            for parameter in inspect.signature(function).parameters.values()
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        ]
        if gathered:  # a call's arguments are named: those would get nothing, silently
            said.append(
                f"{name}() is a tool without its {' and '.join(gathered)}: a tool's arguments "
                f"are named, so they receive none; give each a parameter of its own (as in "
                f"`def {name}(items: list[str])`)"
            )
    for name, value in vars(module).items():
        if (
            not name.startswith("_")
            and inspect.isfunction(value)
            and value.__module__ == module.__name__
            and not getattr(value, "__annotations__", None)
        ):
            said.append(
                f"{name}() is not a tool: it has no type hints (annotate its parameters and "
                f"result, as in `def {name}(text: str) -> str`, or name it _{name} to keep it "
                "a helper)"
            )
    return tools


# A docstring's section of parameters (Google style) and its entries: "name: text" or
# "name (type): text", the text going on over the lines indented further.
_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters):\s*$")
_ARG_ENTRY = re.compile(r"^(\s+)\*{0,2}([A-Za-z_]\w*)(?:\s*\([^)]*\))?\s*:\s*(.*)$")


def docstring_arguments(doc: str) -> tuple[str, dict[str, str]]:
    """``doc`` without its ``Args:`` section, and that section's text for each parameter
    (a Google-style docstring: the parameters described where a Python writer describes
    them, as the input schema's descriptions the types show for each member)."""
    lines = doc.splitlines()
    start = next((i for i, line in enumerate(lines) if _ARGS_HEADER.match(line)), None)
    if start is None:
        return doc, {}
    described: dict[str, str] = {}
    current: str | None = None
    indent = ""
    end = start + 1
    while end < len(lines):
        line = lines[end]
        if line.strip() and not line[0].isspace():
            break  # the next section ("Returns:") or prose
        entry = _ARG_ENTRY.match(line)
        if entry and (current is None or len(entry[1]) <= len(indent)):
            indent, current = entry[1], entry[2]
            described[current] = entry[3].strip()
        elif current is not None and line.strip():
            described[current] = f"{described[current]} {line.strip()}".strip()
        end += 1
    kept = lines[:start] + lines[end:]
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept), {name: text for name, text in described.items() if text}


def _describe_function(name: str, function: Callable[..., Any]) -> dict[str, Any]:
    schema = _arguments_model(function).model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    description, arguments = docstring_arguments(inspect.getdoc(function) or "")
    for argument, text in arguments.items():
        member = schema["properties"].get(argument)
        if isinstance(member, dict) and not member.get("description"):
            member["description"] = text
    output = _output_schema(function)
    tool: dict[str, Any] = {
        "name": name,
        "description": description,
        "inputSchema": schema,
    }
    if output is not None:
        tool["outputSchema"] = output
    annotations = getattr(function, ANNOTATIONS_ATTRIBUTE, None)
    if isinstance(annotations, dict) and annotations:
        tool["annotations"] = dict(annotations)
    return tool


def call_function(
    function: Callable[..., Any], kwargs: dict[str, Any], context: ToolContext
) -> Any:
    """Validate the arguments, call (awaiting coroutines), return a JSON-able value."""
    model = _arguments_model(function)
    validated = model.model_validate(kwargs)
    arguments = {name: getattr(validated, name) for name in model.model_fields}
    if CONTEXT_PARAMETER in inspect.signature(function).parameters:
        arguments[CONTEXT_PARAMETER] = context
    try:
        result = function(**arguments)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
    except (SystemExit, KeyboardInterrupt) as exc:
        # in the gateway's process (an internal file) SystemExit stopped the gateway, and in
        # a worker's thread it left the call unanswered: one tool's error, like any other
        raise RuntimeError(_ended_message(function.__name__, exc)) from None
    import pydantic_core

    try:
        return _result_adapter(function).dump_python(result, mode="json")
    except pydantic_core.PydanticSerializationError as exc:
        # pydantic names the class by the module the gateway imported the file as
        named = re.search(r"<class '(?:[\w.]*\.)?(\w+)'>", str(exc))
        kind = named.group(1) if named else type(result).__name__
        raise TypeError(
            f"{function.__name__}() returned a value JSON cannot hold (a {kind}): return "
            "dicts, lists, strings, numbers, booleans and None (dataclasses and pydantic "
            "models too)"
        ) from None
    except UnicodeDecodeError:  # pydantic writes bytes as UTF-8 text, and these are not
        raise TypeError(
            f"{function.__name__}() returned bytes that are not UTF-8 text, which JSON cannot "
            "hold: return base64.b64encode(data).decode() (and say so in the docstring), or "
            "a str"
        ) from None


def _ended_message(name: str, exc: BaseException) -> str:
    """What a tool that tried to end the process is told (a script's habit in a function)."""
    how = (
        f"called sys.exit({exc.code!r})"
        if isinstance(exc, SystemExit)
        else "raised KeyboardInterrupt"
    )
    return (
        f"{name}() {how}: a tool returns its result or raises an exception, it does not end "
        "the process it runs in"
    )


async def _await(awaitable: Any) -> Any:
    return await awaitable


class _JsonLines(logging.Handler):
    def __init__(self, stream: Any) -> None:
        super().__init__()
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        line = {"level": record.levelname, "message": record.getMessage(), "logger": record.name}
        if record.exc_info:
            line["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        try:
            self.stream.write(json.dumps(line) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass


def _offer_decorator() -> None:
    """``from toolscript import tool`` in a worker's own environment, where toolscript is
    not installed: this module stands in for it."""
    if importlib.util.find_spec("toolscript") is None:
        stand_in = ModuleType("toolscript")
        stand_in.tool = tool  # type: ignore[attr-defined]
        sys.modules["toolscript"] = stand_in


def _exit_with_parent(pipe: int) -> None:
    """While describing, ``pipe`` (stdin as the worker started) is one the gateway never
    writes: its end means the gateway is gone (stopped or killed), and an import that hangs
    must not outlive it."""

    def watch() -> None:
        # os.read, not a file object: a daemon thread holding its lock would abort the
        # interpreter's exit after a describe that went well.
        try:
            while os.read(pipe, 4096):
                pass
        except OSError:
            pass
        os._exit(3)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


def main() -> None:
    _offer_decorator()
    path = Path(next(arg for arg in sys.argv[1:] if not arg.startswith("--"))).resolve()
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # the tool's print() (and any C library's) goes to stderr, not the protocol
    sys.stdout = sys.stderr
    # The gateway's requests (or, describing, the pipe whose end means it is gone) come on
    # a descriptor of their own: a tool's input() reads /dev/null (EOFError), where it took
    # the next request's line and the call waited for its timeout.
    requests = os.dup(0)
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    logging.basicConfig(level=logging.INFO, handlers=[_JsonLines(sys.stderr)], force=True)
    if "--describe" in sys.argv:
        _exit_with_parent(requests)
        module = load_module(path, "toolscript_tool")
        notes: list[str] = []
        described = describe_module(module, notes)
        protocol.write(json.dumps({"tools": described, "notes": notes}) + "\n")
        return
    module = load_module(path, "toolscript_tool")
    functions = public_functions(module)
    lock = threading.Lock()
    protocol.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")

    def answer(request: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"id": request.get("id"), "result": None, "error": None}
        try:
            function = functions.get(request.get("function", ""))
            if function is None:
                raise LookupError(f"no tool function {request.get('function')!r} in {path.name}")
            context = ToolContext(
                config=request.get("config") or {},
                secrets=request.get("secrets") or {},
                log=logging.getLogger(f"tool.{request.get('function')}"),
            )
            reply["result"] = call_function(function, request.get("kwargs") or {}, context)
        except Exception as exc:  # every failure becomes an error reply, never a dead worker
            reply["error"] = f"{type(exc).__name__}: {exc}"
            logging.getLogger(f"tool.{request.get('function')}").debug("failed", exc_info=True)
        with lock:
            protocol.write(json.dumps(reply) + "\n")

    with ThreadPoolExecutor(max_workers=16) as pool:
        for line in os.fdopen(requests, encoding="utf-8"):
            if line.strip():
                pool.submit(answer, json.loads(line))


if __name__ == "__main__":
    main()
