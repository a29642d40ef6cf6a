"""``toolscript mcp``: one MCP server standing in for all of the user's servers.

A client sees four small tools (``tools.py``) however many tools the servers have; the
agent writes TypeScript against the same typed client ``exec`` uses. Served over stdio,
or over streamable HTTP on 127.0.0.1 behind the gateway's guard (secret path, Host check).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server

from toolscript import __version__
from toolscript.errors import ToolscriptError, UsageError, tool_named
from toolscript.execution.lifeline import Lifeline
from toolscript.gateway.inprocess import InProcessGateway
from toolscript.mcpface.backend import (
    Answer,
    Approver,
    Backend,
    Reporter,
    error_answer,
)
from toolscript.mcpface.tools import (
    CONFIG_BROKEN,
    EXECUTE_TIMEOUT,
    INSTRUCTIONS,
    MAX_EXECUTE_TIMEOUT,
    TOOLS,
    YIELD_AFTER,
)
from toolscript.plumbing.paths import user_cache_dir
from toolscript.plumbing.privatefile import write_private
from toolscript.plumbing.processes import stop_tethered
from toolscript.store.outputs import visible_controls

__all__ = ["build_server", "serve"]

log = logging.getLogger("toolscript.mcp")

_TOOLS = {tool["name"]: tool for tool in TOOLS}


@functools.cache
def _validator(name: str) -> Any:
    """The validator of one of the face's tools, made at its first call (jsonschema is
    imported then, as the gateway's own validators are)."""
    import jsonschema

    return jsonschema.Draft202012Validator(_TOOLS[name]["inputSchema"])


def without_null_options(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the optional ones given as null: clients that turn tool schemas
    into OpenAI's strict mode make every optional argument nullable and send ``null`` for
    those the model leaves out ("timeout": null), which means the default, not an error."""
    schema = _TOOLS[name]["inputSchema"]
    required = set(schema.get("required", ()))
    return {
        key: value
        for key, value in arguments.items()
        if value is not None or key in required or key not in schema.get("properties", {})
    }


def _argument_problem(name: str, arguments: dict[str, Any]) -> str | None:
    """What is wrong with the arguments of a call of the face's tool ``name`` (None: nothing),
    at the first place with a problem. A property missing there is said with the unknown
    ones given instead: ``{"script": ...}`` for ``{"code": ...}`` is told both, and the
    names it may use, where "missing code" alone left the model guessing."""
    from toolscript.gateway.core import plain_message

    errors = list(_validator(name).iter_errors(arguments))
    if not errors:
        # run_script's timeout is execute's, said here (its schema would push the listing
        # past its size): 1e308 s made the run's timer fail, and the script had no limit
        timeout = arguments.get("timeout")
        too_long = isinstance(timeout, int | float) and timeout > MAX_EXECUTE_TIMEOUT
        if name == "run_script" and too_long:
            return (
                f"invalid timeout: {timeout:g} is greater than the maximum of "
                f"{MAX_EXECUTE_TIMEOUT:g} seconds"
            )
        return None
    place = errors[0].absolute_path
    rules = ("required", "additionalProperties")
    said = [plain_message(errors[0])]
    if errors[0].validator in rules:
        said += [
            plain_message(error)
            for error in errors[1:]
            if error.absolute_path == place and error.validator in rules
        ]
    where = "/".join(str(part) for part in place) or "arguments"
    return f"invalid {where}: {'; '.join(dict.fromkeys(said))}"


def _approver(context: Any) -> Approver | None:
    """How a run of this request asks the user to approve a call: MCP elicitation when the
    client supports it (None otherwise: the run stops and says how to approve)."""
    session = getattr(context, "session", None)
    capabilities = getattr(session, "client_capabilities", None)
    if session is None or capabilities is None or capabilities.elicitation is None:
        return None

    async def ask(prompt: dict[str, Any]) -> Any:
        if prompt.get("kind") == "elicitation":  # a server's question: the client asks it
            from toolscript.store.outputs import visible_controls

            # shown as exec's terminal shows it: the server's controls made visible, so its
            # question cannot erase, retitle or reorder what the person reads; the client
            # shows it as toolscript's (the face is its server), so the server is named as
            # who asks and who hears the answer, and each of its lines is indented: none
            # reads as toolscript's own (a forged approval, "toolscript needs your token")
            server = visible_controls(str(prompt.get("tool", "")))
            lines = visible_controls(str(prompt.get("message", ""))).splitlines() or [""]
            message = (
                f"The MCP server {server} asks you, during the script's call of it (your "
                f"answer goes to {server}, not to toolscript):\n"
                + "\n".join(f"  {line}" for line in lines)
            )
            try:
                asked = await session.elicit_form(
                    message,
                    _shown_schema(prompt.get("schema") or {"type": "object", "properties": {}}),
                    related_request_id=getattr(context, "request_id", None),
                )
            except Exception as exc:
                _asking_failed(exc, "the server's question is cancelled")
                return {"action": "cancel"}
            return {"action": asked.action, "content": asked.content}
        from toolscript.store.approvalview import shortened_notice, shown_arguments, visible_text
        from toolscript.store.outputs import visible_controls

        view = shown_arguments(prompt.get("arguments", {}))
        notice = ""
        if view.shortened:
            notice = visible_controls(shortened_notice(view, str(prompt.get("run") or "")))
            notice = notice[0].upper() + notice[1:] + ".\n"
        tool = visible_text(tool_named(str(prompt["tool"])))
        again = ""  # asked again: an earlier approval of it no longer holds
        if prompt.get("why"):
            again = f"Asked again: {visible_controls(str(prompt['why']))}.\n"
        try:
            result = await session.elicit_form(  # (the tool again where the person answers)
                f"A script calls {tool}, which needs your approval.\n{again}{notice}Arguments:\n"
                f"{view.text}\n{notice}Allow this call of {tool}?",
                APPROVAL_SCHEMA,
                related_request_id=getattr(context, "request_id", None),
            )
        except Exception as exc:  # the client did not ask: the run stops, approvable later
            _asking_failed(exc, "the run stops for approval")
            return "stop"
        if result.action == "accept":
            content = result.content or {}
            return "always" if content.get("always") else "yes"
        return "no" if result.action == "decline" else "stop"

    return ask


def _asking_failed(exc: Exception, outcome: str) -> None:
    """Log an elicitation that got no answer. The client gone (a cancelled execute, a
    closed connection: the SDK ends the question with CONNECTION_CLOSED) is normal: one
    line at info; anything else is the client failing, with its traceback."""
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
        log.info("the client went away while the person was asked; %s", outcome)
        return
    log.warning("elicitation failed; %s", outcome, exc_info=True)


_SHOWN_KEYS = frozenset({"title", "description", "enumNames"})


def _shown_schema(schema: Any) -> Any:
    """A server's question's schema with the text the client shows (titles, descriptions,
    an enum's names) made visible; the values answered (``enum``, ``const``, ``default``)
    and the fields' names stay as the server wrote them, but a field a client would label
    with a name holding controls is given that name made visible as its title."""
    from toolscript.store.outputs import visible_controls

    def shown(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            if key == "properties":
                return {k: shown(_titled(str(k), v)) for k, v in value.items()}
            return {k: shown(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [shown(item, key if key == "enumNames" else "") for item in value]
        if isinstance(value, str) and key in _SHOWN_KEYS:
            return visible_controls(value)
        return value

    def _titled(name: str, field: Any) -> Any:
        if not isinstance(field, dict) or "title" in field or visible_controls(name) == name:
            return field
        return {**field, "title": name}  # (made visible as every title is)

    return shown(schema)


def _client(context: Any) -> object | None:
    """Who makes this request, the same object for each request of one client: the MCP
    SDK's connection (its session is made anew for each request). A yielded run is its."""
    session = getattr(context, "session", None)
    return getattr(session, "_connection", session)


def _reporter(context: Any) -> Reporter | None:
    """How a run of this request shows its progress: MCP progress notifications, when the
    client asked for them (a progress token in the request's ``_meta``)."""
    session = getattr(context, "session", None)
    meta = getattr(context, "meta", None) or {}
    token = (
        meta.get("progress_token", meta.get("progressToken")) if isinstance(meta, dict) else None
    )
    if session is None or token is None:
        return None
    reported = [0.0]  # MCP progress must increase with each notification

    async def report(progress: dict[str, Any]) -> None:
        from toolscript.execution.runhandle import format_progress

        fraction = progress.get("fraction")
        value = float(fraction) if isinstance(fraction, int | float) else None
        reported[0] = max(reported[0] + 1e-6, value if value is not None else reported[0] + 1)
        message = format_progress(progress).removeprefix("toolscript: progress: ").strip()
        try:
            await session.send_progress_notification(
                token,
                reported[0],
                1.0 if value is not None else None,
                message,
                related_request_id=getattr(context, "request_id", None),
            )
        except Exception:  # the client went away: the run goes on regardless
            log.debug("progress notification failed", exc_info=True)

    return report


APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {
        "always": {
            "type": "boolean",
            "title": "Always allow this tool in this project",
            "default": False,
        }
    },
}


def _dispatch(
    backend: Backend, name: str, arguments: dict[str, Any], context: Any = None
) -> Awaitable[Answer]:
    if name == "search_tools":
        return backend.search_tools(
            arguments["query"],
            int(arguments.get("limit", 8)),
            arguments.get("server"),
            arguments.get("kind", "tool"),
        )
    if name == "read_resource":
        return backend.read_resource(
            arguments["server"],
            arguments.get("uri"),
            arguments.get("prompt"),
            dict(arguments.get("arguments") or {}),
        )
    if name == "get_types":
        return backend.get_types(list(arguments["tools"]), bool(arguments.get("example")))
    if name == "execute":
        return backend.execute(
            arguments["code"],
            float(arguments.get("timeout", EXECUTE_TIMEOUT)),
            ask=_approver(context),
            yield_after=backend.yield_after,
            report=_reporter(context),
            owner=_client(context),
        )
    if name == "wait_run":
        return backend.wait_run(
            str(arguments["run"]),
            backend.yield_after,
            report=_reporter(context),
            owner=_client(context),
            ask=_approver(context),
        )
    if name == "run_script":
        return backend.run_script(
            arguments["name"],
            dict(arguments.get("input") or {}),
            float(arguments.get("timeout", EXECUTE_TIMEOUT)),
            ask=_approver(context),
            report=_reporter(context),
            owner=_client(context),
        )
    if name == "save_script":
        return backend.save_script(
            arguments["name"],
            arguments["code"],
            arguments.get("description"),
            bool(arguments.get("force")),
        )
    return backend.list_servers()


def _result(answer: Answer) -> types.CallToolResult:
    links: list[Any] = [
        types.ResourceLink(
            type="resource_link",
            uri=uri,
            name=uri.rpartition("/")[2],
            description=(
                "the whole stderr of the script (it was cut)"
                if uri.endswith("/errors")
                else "the whole output of the script (it passed the cap)"
            ),
            mime_type="text/plain",
        )
        for uri in answer.outputs
    ]
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer.text), *links],
        structured_content=answer.structured,
        is_error=answer.is_error,
    )


def build_server(backend: Backend, *, config_broken: bool = False) -> Server[Any]:
    """The MCP server: its tools never change; what they answer follows the gateway.
    ``config_broken``: the project's config could not be used at the start (the
    instructions say so; each tool call says why)."""
    listed = types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in TOOLS])

    async def list_tools(context: Any, params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(context: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, dict(params.arguments or {})
        if name not in _TOOLS:
            return _result(
                Answer(f"unknown tool {name!r}; tools: {', '.join(_TOOLS)}", is_error=True)
            )
        arguments = without_null_options(name, arguments)
        problem = _argument_problem(name, arguments)
        if problem is not None:
            return _result(Answer(problem, is_error=True))
        try:
            return _result(await _dispatch(backend, name, arguments, context))
        except ToolscriptError as error:
            return _result(error_answer(error))
        except Exception as error:  # a tool result says what broke; the face lives on
            log.exception("%s failed", name)
            return _result(Answer(f"{name} failed: {type(error).__name__}: {error}", is_error=True))

    async def read_resource(context: Any, params: Any) -> types.ReadResourceResult:
        uri = str(params.uri)
        text = await anyio.to_thread.run_sync(backend.read_output, uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
        )

    async def list_resources(context: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])

    return Server(
        "toolscript",
        version=__version__,
        title="toolscript: MCP code mode",
        instructions=INSTRUCTIONS + (CONFIG_BROKEN if config_broken else ""),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


async def _first_signal(received: AsyncIterator[int], serving: anyio.CancelScope) -> int:
    """The signal (SIGTERM, SIGINT or SIGHUP) that ends a stdio face: its serving stops as
    when the client closes stdin. Later signals (Claude Code sends SIGINT, then SIGTERM
    0.1 s later) wait unread while the face stops what it started."""
    async for signum in received:
        serving.cancel()
        return signum
    return 0


@contextlib.asynccontextmanager
async def _stdio_unless(listener: socket.socket | None) -> AsyncIterator[tuple[Any, Any] | None]:
    """The SDK's stdio streams (fd 0 and 1 claimed for the wire), or None for the HTTP face."""
    if listener is not None:
        yield None
        return
    from mcp.server.stdio import stdio_server

    async with stdio_server() as streams:
        yield streams


def face_token(cache_dir: Path) -> str:
    """The HTTP face's secret for the project whose cache is ``cache_dir``, kept so its URL
    survives restarts: in the user's own 0700 cache (a 0600 file), never in the project,
    where a cloned repository could plant a secret it knows. An ``mcp-token`` file found
    in the project's cache (where earlier versions kept it) is ignored, with a warning."""
    planted = cache_dir / "mcp-token"
    if planted.exists():
        sys.stderr.write(
            f"toolscript: warning: ignoring {planted}: the face's secret is kept in your own "
            "cache now, never in a project (a repository could plant one it knows); delete "
            "that file\n"
        )
        sys.stderr.flush()
    path = face_token_file(cache_dir)
    try:
        token = path.read_text().strip()
    except OSError:
        token = ""
    if len(token) < 32:
        token = secrets.token_urlsafe(32)
        write_private(path, token + "\n")
    return token


def face_token_file(cache_dir: Path) -> Path:
    """Where the HTTP face's secret of the project whose cache is ``cache_dir`` is kept."""
    key = hashlib.sha256(str(cache_dir.resolve()).encode()).hexdigest()[:24]
    return user_cache_dir() / "mcp" / f"{key}.token"


def _listen(port: int) -> socket.socket:
    """The HTTP face's socket on 127.0.0.1, bound before anything starts: a port in use is a
    usage error, not a half-started face."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        listener.close()
        raise UsageError(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror}",
            hint="pick another --port, or 0 for a free one",
        ) from None
    return listener


async def _serve_http(
    server: Server[Any], listener: socket.socket, token: str, stdout: Any
) -> None:
    """Streamable HTTP on 127.0.0.1 until SIGINT or SIGTERM (uvicorn's own handling); the
    URL goes to ``stdout`` (the process's, taken before the gateway's thread could swap
    ``sys.stdout`` for a moment: its pipeline's steps capture their output)."""
    import uvicorn

    from toolscript.gateway.guard import TokenGuard

    bound = listener.getsockname()[1]
    app = TokenGuard(
        server.streamable_http_app(host="127.0.0.1"),
        token,
        [f"127.0.0.1:{bound}", f"localhost:{bound}"],
    )

    class Runner(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            self.should_exit = True  # no re-raised signal after shutdown: the face cleans up

    runner = Runner(
        uvicorn.Config(
            app, log_level="warning", lifespan="on", log_config=None, timeout_graceful_shutdown=2
        )
    )

    async def announce() -> None:
        while not runner.started:
            await anyio.sleep(0.02)
        stdout.write(f"http://127.0.0.1:{bound}/{token}/mcp\n")
        stdout.flush()

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        await runner.serve(sockets=[listener])
        group.cancel_scope.cancel()


def serve(
    *,
    config: str | None,
    cache: str | None,
    cache_dir: Path,
    http: bool,
    port: int,
    early: InProcessGateway | subprocess.Popen[str] | None = None,
    yield_after: float = YIELD_AFTER,
    lifeline: Lifeline | None = None,
) -> None:
    """Serve until the client disconnects (stdio) or a signal; then stop what was started.
    ``early``: the face's own gateway, begun before the face's imports; ``yield_after``:
    seconds before ``execute`` answers a run still going with its id; ``lifeline``: the
    face's, following what is tethered since before ``early`` spawned its servers (one is
    made here otherwise), ended here."""
    listener = _listen(port) if http else None
    stdout = sys.stdout

    async def main() -> None:
        # stdio is claimed before the backend starts its gateway's thread: that gateway's
        # build (doit) swaps sys.stdout for the whole process while a task runs, and the
        # SDK's stdio server takes the stream sys.stdout is when it starts.
        async with _stdio_unless(listener) as stdio:
            await _served(stdio)

    async def _served(stdio: tuple[Any, Any] | None) -> None:
        # (an HTTP face leaves its signals to uvicorn)
        signals = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if listener is None else ()
        ended: list[int] = []  # the signal that ended a stdio face, if one did
        # What its own gateway starts (servers, deno lsp, search workers, spares) dies with
        # the face however it dies: its watchdog stops them after a SIGKILL too.
        face_lifeline = lifeline
        if face_lifeline is None:
            face_lifeline = Lifeline(catch_signals=False)
            face_lifeline.follow_tethered()
        with anyio.open_signal_receiver(*signals) as received, face_lifeline:
            backend = Backend(config, cache, face_lifeline, early=early, yield_after=yield_after)
            broken = _config_problem(backend)
            server = build_server(backend, config_broken=broken)

            async def until_signalled(serving: anyio.CancelScope) -> None:
                ended.append(await _first_signal(received, serving))

            try:
                async with anyio.create_task_group() as group:
                    if not broken:  # (no gateway could start: the first call tries again)
                        group.start_soon(_warm_up, backend)
                    if listener is not None:
                        await _serve_http(server, listener, face_token(cache_dir), stdout)
                    elif stdio is not None:
                        group.start_soon(until_signalled, group.cancel_scope)
                        await server.run(*stdio, server.create_initialization_options())
                    group.cancel_scope.cancel()
            finally:
                with anyio.CancelScope(shield=True):
                    await backend.aclose()
                    # (what its gateway's stop left, as a gateway that did not stop in time)
                    await anyio.to_thread.run_sync(stop_tethered)
        if stdio is not None:
            # The SDK reads stdin in a worker thread no cancellation reaches: after a signal
            # its transport would wait for input for ever, so the face leaves from here.
            _leave(128 + ended[0] if ended and ended[0] else 0)

    anyio.run(main)


def _leave(code: int) -> None:
    """The client closed stdin (``code`` 0) or a signal came (128 + its number), and what
    the face started has stopped: exit now. Left to the interpreter, the exit waited for an
    idle thread of anyio's pool for seconds (3.3 s from the client's disconnect to the face
    gone, where the SDK's client sends SIGTERM after 2 s); nothing is left to finish but
    what the streams hold."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # (a client gone with its pipe)
            stream.flush()
    os._exit(code)


def _config_problem(backend: Backend) -> bool:
    """Whether the project's config cannot be used as the face starts (said on stderr, the
    client's log, once): the face serves all the same, and each tool call says why."""
    try:
        backend.check_config()
    except ToolscriptError as error:
        hint = f"\nhint: {error.hint}" if error.hint else ""
        log.warning(
            "%s%s\n(served all the same: each tool call says this until it is fixed)",
            visible_controls(error.message),
            visible_controls(hint),
        )
        return True
    except Exception:  # a fault of the loader: the tool calls say what broke
        log.warning("the project's config could not be read", exc_info=True)
        return True
    return False


async def _warm_up(backend: Backend) -> None:
    """Find or start the gateway at once, so the first tool call does not wait for it."""
    try:
        await anyio.to_thread.run_sync(backend.gateway_url, abandon_on_cancel=True)
    except ToolscriptError as error:
        log.warning("%s (tool calls will try again)", error.message)
    except Exception:  # the face serves on: each tool call says what broke
        log.warning("the gateway could not be found or started", exc_info=True)
