"""The one error tree of toolscript.

Every error toolscript raises on purpose derives from ``ToolscriptError``; the
CLI turns it into a one-line message and ``exit_code``, the gateway into an
HTTP response with ``status_code``::

    ToolscriptError                     exit 1
    ├── ConfigError                     exit 2   invalid or unreadable .toolscript.json
    │   └── UntrustedConfigError                 a project's config the user has not trusted
    ├── UsageError                      exit 2   a wrong argument on the command line
    ├── NotFoundError                   HTTP 404
    │   ├── ServerNotFoundError                  no such server is configured
    │   └── ToolNotFoundError                    no such tool on a server
    ├── ArgumentValidationError         HTTP 400 tool arguments violate its inputSchema
    ├── RequestTooLargeError            HTTP 413 a tool call's body is over the gateway's limit
    ├── RequestError                    HTTP 4xx a request the gateway's routes refuse (no route, no q)
    ├── AccessDeniedError                        a request the gateway's guard refuses
    │   ├── UnauthorizedError           HTTP 401 missing or wrong gateway token
    │   └── ForbiddenHostError          HTTP 403 a Host that is not the gateway's address
    ├── AlreadyServingError                      a second `gateway start` of a project
    ├── GatewayError                             talking to the gateway from the CLI
    │   ├── GatewayUnreachableError              nothing answers at the gateway URL
    │   │   ├── NotAGatewayError                 another program answers there
    │   │   └── GatewayTimeoutError              it took the connection, no answer in time
    │   └── GatewayResponseError                 the gateway answered with an error
    ├── UpstreamError                   HTTP 502 talking to an MCP server
    │   ├── ServerUnavailableError      HTTP 503 the server is not connected
    │   ├── ToolTimeoutError            HTTP 504 the call took longer than its timeout
    │   └── ToolCallError               HTTP 422 the tool answered with isError: true
    ├── PolicyError                     HTTP 403 a call the policy or the run's limits stopped
    │   ├── ToolDeniedError                      the policy denies the tool
    │   ├── ApprovalRequiredError       exit 120 an "ask" tool has no approval: the run stops
    │   ├── CallRefusedError                     the user answered "no" to the prompt
    │   ├── ReplayDivergedError         exit 121 a resumed run asked for another call
    │   └── TooManyCallsError           exit 122 the run made more calls than --max-calls
    ├── ScriptExistsError               HTTP 409 a saved script of that name exists (save --force)
    ├── ScriptCheckError                HTTP 422 a script to save does not type-check
    ├── RunLogError                     HTTP 503 the run log cannot be read or written now
    │   └── NewerRunLogError                     a newer toolscript's run log (a downgrade)
    ├── TooManyRunsError                HTTP 429 as many runs are under way as a gateway holds
    ├── StorageError                             a folder toolscript keeps files in is not writable
    ├── SearchError                     HTTP 503 search could not use its embedding model
    │   ├── SemanticUnavailable                  the semantic extra or the model is missing
    │   └── EmbedderFailed                       the embedding worker failed or stopped
    ├── ExecutionError                           running a toolscript in Deno
    └── InternalError                   HTTP 500 a fault the gateway did not expect (logged)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = [
    "NOT_A_GATEWAY",
    "NOT_A_GATEWAY_HINT",
    "AccessDeniedError",
    "AlreadyServingError",
    "ApprovalRequiredError",
    "ArgumentValidationError",
    "CallRefusedError",
    "ConfigError",
    "EmbedderFailed",
    "ExecutionError",
    "ForbiddenHostError",
    "GatewayError",
    "GatewayResponseError",
    "GatewayTimeoutError",
    "GatewayUnreachableError",
    "InternalError",
    "ModuleChangedError",
    "NewerRunLogError",
    "NotAGatewayError",
    "NotFoundError",
    "PolicyError",
    "ReplayDivergedError",
    "RequestError",
    "RequestTooLargeError",
    "RunLogError",
    "ScriptCheckError",
    "ScriptExistsError",
    "SearchError",
    "SemanticUnavailable",
    "ServerNotFoundError",
    "ServerUnavailableError",
    "StorageError",
    "TooManyCallsError",
    "TooManyRunsError",
    "ToolCallError",
    "ToolDeniedError",
    "ToolNotFoundError",
    "ToolTimeoutError",
    "ToolscriptError",
    "UnauthorizedError",
    "UntrustedConfigError",
    "UpstreamError",
    "UsageError",
    "as_kind",
    "tool_named",
]


def tool_named(qualified: str) -> str:
    """A tool as messages name it, as users write it and `approve --tool` takes it
    (``time.get_time``), from the gateway's ``time__get_time``, which is an identifier
    (URLs, the run log, the generated module) and no spelling anyone types. A server's
    name holds no ``__``: the first one separates it from the tool's. A tool whose name
    holds a dot keeps the ``__``: a server's ``admin.delete`` as ``gh.admin.delete`` read as
    the tool ``delete`` of a server ``gh.admin`` (a server's name may hold a dot), in the
    question that approved it and the `approve --tool` command it named. (A resource's
    ``resource:URI`` and a prompt's ``prompt:NAME`` are read by their prefix.)"""
    server, separator, tool = qualified.partition("__")
    if not (separator and server and tool):
        return qualified
    return qualified if "." in tool.partition(":")[0] else f"{server}.{tool}"


class ToolscriptError(Exception):
    """Base of every error toolscript raises on purpose."""

    exit_code = 1
    status_code = 500
    kind = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, Any]:
        """The JSON body the gateway answers with for this error."""
        body: dict[str, Any] = {"error": self.kind, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        return body


class ConfigError(ToolscriptError):
    """The configuration file is unreadable, not JSON, or not valid."""

    exit_code = 2
    kind = "config_error"


class UntrustedConfigError(ConfigError):
    """A project's config that the user has not trusted (``toolscript trust``) as it is now."""

    status_code = 403
    kind = "untrusted_config"


class UsageError(ToolscriptError):
    """A command-line argument is wrong."""

    exit_code = 2
    status_code = 400
    kind = "usage_error"


class NotFoundError(ToolscriptError):
    """Something named by the caller does not exist."""

    status_code = 404
    kind = "not_found"

    def __init__(
        self, message: str, *, suggestions: Sequence[str] = (), hint: str | None = None
    ) -> None:
        if suggestions and hint is None:
            hint = "did you mean: " + ", ".join(suggestions) + "?"
        super().__init__(message, hint=hint)
        self.suggestions = list(suggestions)

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        body["suggestions"] = self.suggestions
        return body


class ServerNotFoundError(NotFoundError):
    """No server of that name is configured."""

    kind = "server_not_found"


class ToolNotFoundError(NotFoundError):
    """The server has no tool of that name."""

    kind = "tool_not_found"


class RequestTooLargeError(ToolscriptError):
    """A tool call's request body is larger than the gateway accepts."""

    status_code = 413
    kind = "request_too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the request body is larger than {limit} bytes",
            hint="pass large data in pieces, or raise the gateway's --max-request-mb",
        )


class RequestError(ToolscriptError):
    """An HTTP request the gateway's routes refuse: an unknown path, a missing parameter."""

    def __init__(self, message: str, *, status_code: int, kind: str) -> None:
        super().__init__(message)
        self.status_code, self.kind = status_code, kind


class AccessDeniedError(ToolscriptError):
    """A request the gateway's guard refuses before any route sees it."""

    status_code = 403
    kind = "forbidden"


class UnauthorizedError(AccessDeniedError):
    """The request does not start with the gateway's secret token."""

    status_code = 401
    kind = "unauthorized"

    def __init__(self) -> None:
        super().__init__(
            "missing or wrong gateway token",
            hint="use the whole TOOLSCRIPT_GATEWAY_URL, token included",
        )


class ForbiddenHostError(AccessDeniedError):
    """The request's Host header is not the gateway's address (DNS rebinding)."""

    kind = "forbidden_host"

    def __init__(self) -> None:
        super().__init__("this Host is not the gateway's address")


class ArgumentValidationError(ToolscriptError):
    """Tool arguments do not match the tool's inputSchema."""

    status_code = 400
    kind = "invalid_arguments"

    def __init__(self, message: str, *, errors: Sequence[dict[str, str]]) -> None:
        super().__init__(message)
        self.errors = list(errors)

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        body["errors"] = self.errors
        return body


class AlreadyServingError(ToolscriptError):
    """A gateway already serves the project: one per project (``--no-state`` for a private one)."""

    kind = "already_serving"


class GatewayError(ToolscriptError):
    """The CLI could not get what it needed from the gateway."""


class GatewayUnreachableError(GatewayError):
    """Nothing answers at the gateway URL."""

    kind = "gateway_unreachable"


class GatewayTimeoutError(GatewayUnreachableError):
    """The gateway took the connection but did not answer in time (busy, not gone)."""


class NotAGatewayError(GatewayUnreachableError):
    """Another program answers at a gateway's address (one that took a gone gateway's port)."""

    kind = "not_a_gateway"


class ModuleChangedError(GatewayUnreachableError):
    """The gateway rebuilt its module between its hash and its text (``current_module``
    asks again)."""


# An answer at a gateway's address that no gateway gives (``GatewayResponseError.body``'s
# "error"), and what to do then.
NOT_A_GATEWAY = "not_a_gateway"
NOT_A_GATEWAY_HINT = (
    "a gateway that ended left its address behind, or TOOLSCRIPT_GATEWAY_URL names the wrong "
    "port: start the project's gateway with `toolscript gateway start &` (or unset "
    "TOOLSCRIPT_GATEWAY_URL, or set it to the URL `gateway start` printed, token included)"
)


class GatewayResponseError(GatewayError):
    """The gateway answered with an error body."""

    def __init__(self, message: str, *, status_code: int, body: dict[str, Any]) -> None:
        super().__init__(message, hint=body.get("hint"))
        self.status_code = status_code
        self.body = body

    def to_dict(self) -> dict[str, Any]:
        """The error as the gateway said it: its kind (``tool_not_found``...), not this
        class's, and its details."""
        said = {**self.body, **super().to_dict()}  # its details (suggestions, errors) too
        if isinstance(self.body.get("error"), str):
            said["error"] = self.body["error"]
        return said

    @classmethod
    def from_response(
        cls, status_code: int, content: bytes, where: str = "that address"
    ) -> GatewayResponseError:
        """The error an error response of the gateway at ``where`` stands for (its JSON
        body's message).

        Every error a gateway answers is a JSON object naming its kind; any other answer
        (a web page, plain text) comes from another program that listens at that address,
        say one that took the port of a gateway that ended: that is said, not its page."""
        try:
            body = json.loads(content)
        except ValueError:
            body = None
        if not isinstance(body, dict) or not {"error", "message"} & body.keys():
            message = (
                f"what answers at {where} is not a toolscript gateway (HTTP {status_code}, "
                "and not a gateway's JSON): another program listens there"
            )
            body = {"error": NOT_A_GATEWAY, "message": message, "hint": NOT_A_GATEWAY_HINT}
            return cls(message, status_code=status_code, body=body)
        message = str(body.get("message") or f"HTTP {status_code}")
        return cls(message, status_code=status_code, body=body)


class UpstreamError(ToolscriptError):
    """Talking to an MCP server failed."""

    status_code = 502
    kind = "upstream_error"


class ServerUnavailableError(UpstreamError):
    """The server is not connected (failed to start, crashed, reconnecting)."""

    status_code = 503
    kind = "server_unavailable"


class ToolTimeoutError(UpstreamError):
    """The tool call took longer than the server's timeout."""

    status_code = 504
    kind = "timeout"

    @classmethod
    def after(cls, server: str, tool: str, seconds: float) -> ToolTimeoutError:
        """The one wording of a timed-out call, for MCP servers and local tool files alike."""
        return cls(
            f"{server}.{tool} timed out after {seconds:g} s",
            hint=f'raise "timeout" for server {server!r} in the config if it needs longer',
        )


class ToolCallError(UpstreamError):
    """The tool ran and reported an error (``isError: true``)."""

    status_code = 422
    kind = "tool_error"

    def __init__(self, message: str, *, content: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.content = content

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        body["content"] = self.content
        return body


class PolicyError(ToolscriptError):
    """A call that the policy, the user or the run's limits stopped before it reached a server."""

    status_code = 403
    kind = "policy"


class ToolDeniedError(PolicyError):
    """The config's policy denies the tool."""

    kind = "tool_denied"


class ApprovalRequiredError(PolicyError):
    """An ``ask`` tool was called with no approval on record: the call was not made and the run
    stops (resumable once approved)."""

    exit_code = 120
    kind = "approval_required"

    def __init__(self, message: str, *, hint: str | None = None, call: dict[str, Any]) -> None:
        super().__init__(message, hint=hint)
        self.call = call

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"call": self.call}


class CallRefusedError(PolicyError):
    """The user answered no when asked to approve the call."""

    kind = "call_refused"


class ReplayDivergedError(PolicyError):
    """A resumed run asked for a different call than its log holds at that point."""

    status_code = 409
    exit_code = 121
    kind = "replay_diverged"


class TooManyCallsError(PolicyError):
    """The run made more tool calls than its limit."""

    status_code = 429
    exit_code = 122
    kind = "too_many_calls"


class TooManyRunsError(ToolscriptError):
    """A run registered while as many runs are under way (registered, not ended) as the
    gateway holds at once."""

    status_code = 429
    kind = "too_many_runs"


class ExecutionError(ToolscriptError):
    """A toolscript could not be run."""


class ScriptExistsError(ToolscriptError):
    """A saved script of that name exists, and the save did not say --force."""

    status_code = 409
    kind = "script_exists"


class ScriptCheckError(ToolscriptError):
    """A script to save does not type-check (or is not a default-exported function)."""

    status_code = 422
    kind = "script_does_not_check"

    def __init__(self, message: str, *, errors: Sequence[str], hint: str | None = None) -> None:
        super().__init__(message, hint=hint or "fix the errors, then save it again")
        self.errors = list(errors)

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        body["errors"] = self.errors
        return body


class RunLogError(ToolscriptError):
    """The run log (``runs.sqlite``) cannot be read or written now: held by another process,
    or its folder cannot be reached."""

    status_code = 503
    kind = "run_log_unavailable"


class NewerRunLogError(RunLogError):
    """The run log has a schema newer than this toolscript's: a newer one wrote it (the user
    went back to an older toolscript). Nothing is read or written until one of them moves."""


class StorageError(ToolscriptError):
    """A folder toolscript keeps its files in cannot be written (read-only, full, not ours)."""

    kind = "storage_error"


class SearchError(ToolscriptError):
    """Search could not use its embedding model (keyword search still works)."""

    status_code = 503
    kind = "search_unavailable"


class SemanticUnavailable(SearchError):
    """The semantic extra is missing or no model could be loaded."""


class EmbedderFailed(SearchError):
    """The embedding worker failed, hung or stopped."""


class InternalError(ToolscriptError):
    """A fault the gateway did not expect: its traceback is in the gateway's log."""

    kind = "internal_error"

    @classmethod
    def of(cls, exc: BaseException) -> InternalError:
        return cls(
            f"the gateway failed unexpectedly: {type(exc).__name__}: {exc}",
            hint="the gateway's log has the traceback (`toolscript gateway status` shows the "
            "gateway and its pid; restart it: Ctrl+C or `kill PID`, then `gateway start`)",
        )


def as_kind(error: ToolscriptError, kind: str) -> ToolscriptError:
    """``error`` answering as an error of ``kind`` does (that kind, its exit and HTTP
    codes): a failure another toolscript process said, relayed (an ephemeral gateway's
    ``storage_error``); a kind no error has leaves ``error`` as it is."""
    classes: list[type[ToolscriptError]] = [ToolscriptError]
    while classes:
        cls = classes.pop()
        if cls.__dict__.get("kind") == kind:
            error.kind, error.exit_code, error.status_code = kind, cls.exit_code, cls.status_code
            return error
        classes.extend(cls.__subclasses__())
    return error
