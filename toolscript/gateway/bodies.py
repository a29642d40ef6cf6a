"""The JSON bodies the gateway's routes take, as msgspec Structs Litestar decodes.

A body Litestar cannot decode answers as a ``UsageError`` (400, ``usage_error``) of the
error tree: ``body_error`` reads Litestar's refusal and says it in the words a body
class gives for the field at fault (``problems``), or in msgspec's own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import msgspec
from litestar import Request
from litestar.exceptions import HTTPException, SerializationException, ValidationException

from toolscript.errors import UsageError

__all__ = [
    "MAX_BACKGROUND_OUTPUT",
    "BackgroundStart",
    "Body",
    "CheckRequest",
    "ProgressReport",
    "PromptAnswer",
    "PromptGet",
    "ResourceRead",
    "RunEnd",
    "RunRequest",
    "ScriptToSave",
    "body_error",
]


MIN_MEMORY_MB = 16  # exec's own floor (execution/command.py): V8 starts no script below it


class Body(msgspec.Struct, frozen=True):
    """A route's JSON object; unknown keys are ignored, as clients of other versions send."""

    not_an_object: ClassVar[str] = "expected a JSON object"
    problems: ClassVar[Mapping[str, str]] = {}  # field -> what to say when it is wrong


class RunRequest(Body, frozen=True):
    """``POST /runs``: a run to register; every field optional."""

    script_hash: str = ""
    origin: str = ""
    interactive: bool = False
    # None: the resumed run's, else DEFAULT_MAX_CALLS
    max_calls: Annotated[int, msgspec.Meta(ge=1)] | None = None
    resume: str | None = None
    script: str = ""
    script_name: tuple[str, str] = ("inline.ts", "inline.ts")
    pid: Annotated[int, msgspec.Meta(ge=1)] | None = None  # the process running the script
    # the limits exec enforces itself, kept with the run for its resume (None: not given)
    timeout: Annotated[float, msgspec.Meta(ge=0)] | None = None
    memory_mb: Annotated[int, msgspec.Meta(ge=MIN_MEMORY_MB)] | None = None
    max_output: Annotated[int, msgspec.Meta(ge=1)] | None = None

    problems: ClassVar[Mapping[str, str]] = {
        "max_calls": "max_calls must be a positive integer",
        "timeout": "timeout must be 0 (none) or more seconds",
        "memory_mb": f"memory_mb must be at least {MIN_MEMORY_MB}",
        "max_output": "max_output must be a positive integer",
        "pid": "pid is the id of the process running the script, a positive integer",
    }


class PromptAnswer(Body, frozen=True):
    """``POST /runs/{id}/prompt``: the answer to the prompt of call ``seq``."""

    seq: int
    answer: str | None = None
    content: dict[str, Any] | None = None  # what the user filled in for a server's question

    problems: ClassVar[Mapping[str, str]] = {"seq": "give seq, the number of the call answered"}


class ResourceRead(Body, frozen=True):
    """``POST /servers/{server}/resources/read``: the resource to read, by its ``uri`` or
    by one of the server's ``template``s (its URI template or name) and its ``params``."""

    uri: str = ""
    template: str = ""
    # Checked by the template read, which names the template and the parameter at fault.
    params: dict[str, Any] = msgspec.field(default_factory=dict)

    problems: ClassVar[Mapping[str, str]] = {
        "uri": "expected a JSON object with a string uri",
        "template": "expected a JSON object with a string template",
        "params": 'a template\'s params are an object: {"name": "text", ...}',
    }


class PromptGet(Body, frozen=True):
    """``POST /servers/{server}/prompts/get``: the prompt and its arguments (strings)."""

    name: str
    # Checked by the get, which names the prompt and the argument at fault.
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)

    problems: ClassVar[Mapping[str, str]] = {
        "name": "expected a JSON object with a string name",
        "arguments": 'a prompt\'s arguments are an object: {"name": "text", ...}',
    }


class RunEnd(Body, frozen=True):
    """``POST /runs/{id}/end``: the script's exit code."""

    exit: int | None = None


_NAME_AND_CODE = "expected a JSON object with strings name and code"


class ScriptToSave(Body, frozen=True):
    """``POST /scripts``: a script to keep in the project's toolscripts/ folder."""

    name: str
    code: str
    description: str | None = None
    force: bool = False

    problems: ClassVar[Mapping[str, str]] = {
        "name": _NAME_AND_CODE,
        "code": _NAME_AND_CODE,
        "description": "description must be a string",
    }


# Bytes a background run's output file may take (``--max-output``): its runner writes what
# the script prints there, in the gateway's state, for as long as it runs (what passes
# --max-output is kept apart, bounded by the kept outputs' own limit).
MAX_BACKGROUND_OUTPUT = 256 * 1024 * 1024


# A background run's limits when neither its start nor the run it resumes gives them
# (exec's own defaults: execution/command.py)
BACKGROUND_DEFAULTS: Mapping[str, float] = {
    "timeout": 300.0,
    "memory_mb": 512,
    "max_output": 10 * 1024 * 1024,
}


class BackgroundStart(Body, frozen=True):
    """``POST /runs/start``: a script to run in the background, with exec's limits."""

    script: str
    display_name: str = "inline.ts"
    file_name: str = "inline.ts"
    check: bool = True
    # None: the resumed run's, else BACKGROUND_DEFAULTS' (max_calls: DEFAULT_MAX_CALLS)
    timeout: Annotated[float, msgspec.Meta(ge=0)] | None = None
    memory_mb: Annotated[int, msgspec.Meta(ge=MIN_MEMORY_MB)] | None = None
    max_output: Annotated[int, msgspec.Meta(ge=1)] | None = None
    max_calls: Annotated[int, msgspec.Meta(ge=1)] | None = None
    resume: str | None = None
    script_hash: str = ""

    problems: ClassVar[Mapping[str, str]] = {
        "script": "give the script to run, a string",
        "timeout": "timeout must be 0 (none) or more seconds",
        "memory_mb": f"memory_mb must be at least {MIN_MEMORY_MB}",
        "max_output": "max_output must be a positive integer",
        "max_calls": "max_calls must be a positive integer",
    }


class ProgressReport(Body, frozen=True):
    """``POST /progress``: a script's ``progress(message, fraction)``."""

    message: str
    fraction: float | None = None

    problems: ClassVar[Mapping[str, str]] = {
        "message": "progress takes a message, a string",
        "fraction": "a progress fraction is a number from 0 to 1",
    }


_CHECK_FIELDS = "expected a JSON object with strings code, path, module and hash"


class CheckRequest(Body, frozen=True):
    """``POST /runtime/check``: a script exec prepared, for the warm checker."""

    code: str
    path: str
    module: str
    hash: str

    not_an_object: ClassVar[str] = _CHECK_FIELDS
    problems: ClassVar[Mapping[str, str]] = dict.fromkeys(
        ("code", "path", "module", "hash"), _CHECK_FIELDS
    )


def body_error(request: Request[Any, Any, Any], exc: HTTPException) -> UsageError | None:
    """The usage error a refused body is, or None when ``exc`` is not about the body."""
    if isinstance(exc.__cause__, SerializationException):  # Litestar could not decode it
        return UsageError(f"the request body is not JSON: {exc.detail}")
    if not isinstance(exc, ValidationException) or not isinstance(exc.extra, list):
        return None
    wrong = [item for item in exc.extra if isinstance(item, dict) and item.get("source") == "body"]
    if not wrong:
        return None
    body = _body_class(request)
    key, message = str(wrong[0].get("key")), str(wrong[0].get("message"))
    missing = _MISSING.search(message)
    if missing is not None:  # an object without a required field
        key = missing.group(1)
    elif key == "data" and not message.startswith("Expected"):  # no body: as {} reads
        key = next(iter(body.__struct_fields__[: _required(body)]), key)
    if key == "data":  # the body as a whole is not an object
        return UsageError(body.not_an_object)
    return UsageError(body.problems.get(key) or f"{key}: {message}")


_MISSING = re.compile(r"missing required field `([^`]+)`")


def _required(body: type[Body]) -> int:
    """How many of ``body``'s fields (the first ones) have no default."""
    return len(body.__struct_fields__) - len(body.__struct_defaults__)


def _body_class(request: Request[Any, Any, Any]) -> type[Body]:
    """The Body class the request's route takes (``Body`` itself when none is found)."""
    field = getattr(request.route_handler, "parsed_data_field", None)
    for candidate in (field, *(field.inner_types if field is not None else ())):
        annotation = getattr(candidate, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, Body):
            return annotation
    return Body
