"""One MCP server: a supervised connection, its tools, and tool calls over it."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import os
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import anyio
import mcp_types
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage

from toolscript.codegen.offered import PROMPTS, TEMPLATES, offered_entries
from toolscript.config import ServerConfig
from toolscript.errors import (
    NotFoundError,
    ServerUnavailableError,
    ToolscriptError,
    ToolTimeoutError,
    UpstreamError,
)
from toolscript.plumbing.processes import ProgramNotRunnable, missing_program_hint, pid_exists
from toolscript.plumbing.redact import held_secrets, may_hold_secret, redact, sent_text
from toolscript.plumbing.stderrfile import KEEP_EVERY, keep_end, new_stderr_file, read_end
from toolscript.policy import unmatched_rules
from toolscript.upstream.base import (
    CALL_PROGRESS,
    CALL_RECEIVED,
    Elicit,
    ProgressReport,
    ServerState,
    ToolsChanged,
)
from toolscript.upstream.early import (
    HURRIED,
    INHERITED_ENV,
    POLITE,
    EarlyServer,
    StopGraces,
)
from toolscript.upstream.limits import (
    LIST_CHANGED,
    NOTICE_RATE,
    QUESTION_LIMIT,
    REQUEST_RATE,
    NoticeFlood,
    RateWindow,
    RequestFlood,
    bound_listing,
    cut_text,
    form_refused,
)
from toolscript.upstream.sdk import TransportStreams
from toolscript.upstream.tolerant import (
    CAPABILITIES_REPAIRED,
    repair_call_result,
    repair_listing,
)

__all__ = ["ServerState", "UpstreamServer", "telling_line", "windows_shell_hint"]

log = logging.getLogger("toolscript.upstream")


class _SaidInTheError(logging.Filter):
    """Drops the SDK's warning of a redirect it did not follow: the same words end the
    request, so the server's error says them, once (the warning came again at each retry)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Redirect to ")


_SAID_IN_THE_ERROR = _SaidInTheError()
_NOTICES_DROPPED = f"sent over {NOTICE_RATE} notifications a second: those past it are dropped"
_REQUESTS_DROPPED = (
    f"sent over {REQUEST_RATE} requests a second (pings, questions): those past it are dropped "
    "unanswered"
)

STDERR_TAIL_LINES = 20
SENT_KEPT = 32  # the latest calls and requests whose arguments its stderr may echo as sent
SENT_CHARS = 65_536  # of each one's
# What a failing program prints after the line that says why: npm's pointer to its log, its
# note on other ways to install, an error line with no words but its code.
_AFTERWORDS = re.compile(
    r"A complete log of this run can be found in"
    r"|Note that you can also install from a"
    r"|tarball, folder, http url, or git url"
    r"|^npm (?:error|ERR!)(?: \d{3}| code \S+)?\s*$"
)


def telling_line(tail: list[str]) -> str:
    """Of a server's last stderr lines (not empty), the one that says why it exited: the
    last, but for the afterwords a package runner prints after it (``npx`` of a package that
    does not exist: "... could not be found", not "A complete log of this run ...")."""
    for line in reversed(tail):
        if not _AFTERWORDS.search(line):
            return line
    return tail[-1]


RAW_ID_PREFIX = "toolscript-"
METHOD_NOT_FOUND = -32601  # JSON-RPC's code for a method a server does not have
MAX_BACKOFF = 60.0
# A connection that stayed up this long before it was lost starts the backoff again at 1 s:
# a server that crashes now and then, hours apart, is not waited for a minute each time.
STAYED_UP = 30.0
# An OAuth sign-in's tokens masked, newest first: those sent now and a few refreshed away.
SIGN_IN_SECRETS_KEPT = 8
RELIST_INTERVAL = 1.0  # at least this many seconds between two tools/list of a server
# A server whose tools change at every listing (a list_changed storm with a new tool each
# time) had the gateway rebuild the module, the search index and the warm checker each
# second, for as long as it went on: 35-40% of a core, and every exec 3-5 s (the checker
# never warm). Each listing that changes again soon after the last doubles the wait before
# the next, up to this; a change after a quiet while (twice the wait) is listed at once.
RELIST_MAX_INTERVAL = 60.0
# Each listing of prompts or templates on connecting: a server that never answers it is
# typed as offering none, still connected.
OFFERED_LIST_TIMEOUT = 10.0
# kind kept in ``offered`` -> (its listing, the capability a server declares for it)
OFFERED_LISTS = {
    PROMPTS: ("prompts/list", "prompts"),
    TEMPLATES: ("resources/templates/list", "resources"),
}
SIGN_IN_POLL = 1.0  # seconds between looks at the token store while a server needs a sign-in
# Pages of one listing a server may answer with: a cursor that never ends (a loop, a server
# that makes up pages) would hold the server "connecting" while the gateway's memory grows.
MAX_PAGES = 1000


def backoff_after_loss(backoff: float, connected_at: float | None, now: float) -> float:
    """The wait before the next connection attempt once one failed or was lost: as it was
    (doubling after each wait, up to ``MAX_BACKOFF``), or 1 s again when the connection lost
    had stayed up ``STAYED_UP`` seconds (without it the backoff never went down while the
    gateway ran: a server crashing once an hour was waited for a minute each time)."""
    if connected_at is not None and now - connected_at >= STAYED_UP:
        return 1.0
    return backoff


class UpstreamServer:
    """Keeps one MCP server connected (with backoff) and forwards tool calls to it."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        connect_timeout: float = 30.0,
        on_tools_changed: ToolsChanged | None = None,
        on_elicit: Elicit | None = None,
        early: EarlyServer | None = None,
    ) -> None:
        """``early``: this server's process, spawned before the gateway's imports
        (``upstream/early.py``), for the first connection."""
        self.config = config
        self._on_elicit = on_elicit
        self._early = early
        self._hurried = False  # stopped by a program leaving with its gateway (``stop``)
        self.name = config.name
        self.connect_timeout = connect_timeout
        self.state = ServerState.DISABLED if config.disabled else ServerState.CONNECTING
        self.error: str | None = None
        self.remedy: str | None = None
        self.stderr_tail: list[str] = []
        self.tools: dict[str, dict[str, Any]] = {}
        # Its prompts and resource templates by kind (``OFFERED_LISTS``), for their types;
        # listed on connecting and again when the server says they changed.
        self.offered: dict[str, list[dict[str, Any]]] = {}
        self.attempts = 0
        self.connected_at: float | None = None
        # seconds of the wait before the next connection attempt, while it is waited out
        self.retry_wait: float | None = None
        self._on_tools_changed = on_tools_changed
        self._session: ClientSession | None = None
        self._raw_writer: Any = None
        self._raw_pending: dict[str, asyncio.Future[Any]] = {}
        # What its latest calls and requests sent (``sent_text``), for its stderr: a server
        # logging its requests (``got <text>``) echoes them there
        self._sent: deque[str] = deque(maxlen=SENT_KEPT)
        # What each call or request under way sent, by a key of its own: a question the
        # server asks meanwhile (elicitation) may echo it, shown as sent
        self._sending: dict[int, str] = {}
        self._sending_keys = itertools.count()
        self._raw_progress: dict[str, ProgressReport] = {}  # by request id: its progress goes
        self._raw_ids = itertools.count(1)
        self._courtesy: set[asyncio.Task[None]] = set()  # cancellations on their way out
        self._lost = anyio.Event()
        self._retry_now = anyio.Event()
        self._state_changed = anyio.Event()
        self._stopping = False
        self._connecting: anyio.CancelScope | None = None  # while initialize and tools/list run
        self.first_attempt_done = anyio.Event()
        # Set once the first listing of its prompts and templates is done (or gave up):
        # they are listed after it is connected, so a server slow to list them holds up
        # neither its state, its tools and calls, nor the gateway's URL.
        self.offered_listed = anyio.Event()
        self._stderr: IO[str] | None = None
        self.warnings: list[str] = []  # what this server sent that bends the spec, each once
        self._warned: set[str] = set()
        self._tools_seen: set[str] = set()  # every tool name of the listing, filtered or not
        # Its initialize held no capabilities object (repaired): what it offers besides tools
        # is not known, so prompts and resources are asked for, and served where they answer.
        self._undeclared = False
        # what the last listing's policy check said (rules naming none of its tools), and of
        # which names: withdrawn from the warnings once a later listing has the tool
        self._rules_said: tuple[frozenset[str], list[str]] = (frozenset(), [])
        # characters each listing under way kept and entries it held, its pages together
        # (upstream.limits)
        self._listing_spent: dict[str, tuple[int, int]] = {}
        self._relisting = False
        self._relist_again = False
        self._relist_hold = RELIST_INTERVAL  # the wait after the last listing that changed
        self._last_change: float | None = None  # (monotonic) when a listing last changed
        self._server_pid: int | None = None  # of a stdio server, while connected
        self._server_ended: Callable[[], bool] = lambda: False  # whether that process exited
        self._repairs: dict[Any, str] = {}  # request id -> method whose result gets repaired
        # Its notifications and requests a second, over HTTP or SSE (a stdio server's are
        # counted as its stdout is read: upstream/stdio.py); None for stdio.
        self._rates: tuple[RateWindow, RateWindow] | None = None
        self._unauthorized = False  # the server answered 401 since this connection began
        self._headers_refused = False  # the last attempt's 401 was to its entry's headers
        self._refused: tuple[int, str] | None = None  # its first other HTTP error, likewise
        self._signed_in = False  # whether this connection sends a kept OAuth sign-in
        self._provider: Any = None  # that sign-in's OAuth provider (its tokens), or None
        self._tokens_sent: dict[str, None] = {}  # the newest SIGN_IN_SECRETS_KEPT of them
        self._sign_in_stamp = 0.0  # the token store's stamp when this connection began
        self._failure_logged: str | None = None  # the failure warned of, till it connects

    # -- supervision ---------------------------------------------------------

    async def run(self) -> None:
        """Connect, stay connected, reconnect with backoff; returns after ``stop()``."""
        if self.config.disabled:
            self.first_attempt_done.set()
            return
        unset = self.config.unset_error()
        if unset is not None:
            # Never started with a value missing (a token sent empty), nor tried again: the
            # gateway's environment stays as it started. The config's warning said it once.
            self.error = unset
            self._set_state(ServerState.FAILED)
            self.first_attempt_done.set()
            return
        backoff = 1.0
        while not self._stopping:
            self.attempts += 1
            try:
                await self._connect_and_serve()
                backoff = 1.0
            except Exception as exc:
                up_since = self.connected_at
                self._fail(exc)
                backoff = backoff_after_loss(backoff, up_since, time.time())
            finally:
                self._session = None
                self.first_attempt_done.set()
            if self._stopping:
                break
            if self.state == ServerState.NEEDS_AUTH:
                await self._wait_for_sign_in()
            else:
                self.retry_wait = backoff
                with anyio.move_on_after(backoff):
                    if self._headers_refused:  # a `toolscript auth` may be the fix: seen at once
                        await self._wait_for_sign_in()
                    else:
                        await self._retry_now.wait()
                self.retry_wait = None
                backoff = min(backoff * 2, MAX_BACKOFF)
            self._retry_now = anyio.Event()
            if self.state not in (ServerState.FAILED, ServerState.NEEDS_AUTH):
                self._set_state(ServerState.RECONNECTING)
        self._set_state(ServerState.STOPPED)

    async def _connect_and_serve(self) -> None:
        self._lost = anyio.Event()
        self._unauthorized = False
        self._refused = None
        self._repairs.clear()
        self._undeclared = False
        self._rates = (
            None
            if self.config.transport == "stdio"
            else (RateWindow(NOTICE_RATE), RateWindow(REQUEST_RATE))
        )
        async with AsyncExitStack() as stack:
            read, raw_write = await stack.enter_async_context(self._transport())
            write = _RecordingWriter(raw_write, self._repairs)
            session = await stack.enter_async_context(
                ClientSession(
                    _WatchedStream(
                        read, self._lost, self._take_raw_reply, self._fail_raw_calls, self._repair
                    ),
                    write,
                    message_handler=self._on_message,
                    # Declared only where someone may answer: servers offer more tools then.
                    elicitation_callback=self._elicit if self._on_elicit is not None else None,
                )
            )
            # stop() cancels this: a server stuck in initialize never holds up a shutdown.
            with anyio.CancelScope() as self._connecting:
                with anyio.fail_after(self.connect_timeout):
                    await session.initialize()
                    tools = await self._list_tools(session)
            self._connecting = None
            if self._stopping:
                return
            self._session = session
            self._raw_writer = write if self.config.transport == "stdio" else None
            self.tools = tools
            self.error = self.remedy = None
            self.connected_at = time.time()
            self._set_state(ServerState.CONNECTED)
            self._failure_logged = None
            log.info("%s: connected, %d tools", self.name, len(tools))
            self.first_attempt_done.set()
            if self._on_tools_changed is not None:
                await self._on_tools_changed(self)
            async with anyio.create_task_group() as listing:  # left before any raise below
                listing.start_soon(self._offered_listing, session, name=f"{self.name} offered")
                if self._stderr is not None:
                    listing.start_soon(self._keep_stderr_end, self._stderr)
                await self._lost.wait()
                listing.cancel_scope.cancel()
            self._session = None
            self._raw_writer = None
            if not self._stopping:
                raise UpstreamError("connection lost (the server closed it or exited)")

    async def _keep_stderr_end(self, stderr: IO[str]) -> None:
        """While connected, the server's stderr file cut back to its end as it grows."""
        while True:
            await anyio.sleep(KEEP_EVERY)
            keep_end(stderr)

    def _stop_graces(self) -> StopGraces:
        """How long its process's stop waits at each step, read as it stops."""
        return HURRIED if self._hurried else POLITE

    def _spawned(self, pid: int, ended: Callable[[], bool] | None = None) -> None:
        """``ended``: whether the process exited, a zombie too; without it, whether its pid
        is gone (a child the event loop reaps as it exits)."""
        self._server_pid = pid
        self._server_ended = ended if ended is not None else lambda: not pid_exists(pid)

    @property
    def server_pid(self) -> int | None:
        """The stdio server's process id while connected (None for HTTP servers)."""
        return self._server_pid

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[TransportStreams]:
        config = self.config
        if config.transport == "stdio":
            from toolscript.upstream.stdio import early_transport, stdio_transport

            assert config.command is not None
            if self._stderr is not None:
                self._stderr.close()
            early, self._early = self._early, None
            if early is not None and early.usable(config):
                self._stderr = early.stderr
                process = early.process
                # Nobody reaps it until it is stopped: killed, it stays a zombie, and its pid
                # exists all that time. poll() tells (and reaps it).
                self._spawned(process.pid, lambda: process.poll() is not None)
                async with early_transport(early, self._stop_graces) as streams:
                    yield streams
                return
            if early is not None:  # it exited already, or the entry changed: a fresh one
                await anyio.to_thread.run_sync(early.stop)
            self._stderr = new_stderr_file()  # lives as long as the server process
            async with stdio_transport(
                config.command,
                list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
                errlog=self._stderr,
                on_spawn=self._spawned,
                graces=self._stop_graces,
            ) as streams:
                yield streams
        elif config.transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            from toolscript.upstream.bounded import MAX_MESSAGE
            from toolscript.upstream.sdk import create_mcp_http_client

            logging.getLogger("mcp.client.streamable_http").addFilter(_SAID_IN_THE_ERROR)
            assert config.url is not None
            http = create_mcp_http_client(headers=dict(config.headers), auth=self._auth())
            # The SDK turns an HTTP 401 into a generic JSON-RPC error: note it on the way in.
            http.event_hooks["response"] = [*http.event_hooks["response"], self._note_response]
            # Events bounded by bounded.py as a stdio line is (MAX_MESSAGE), not by the SDK's
            # 1 MiB default: a 1.1 MB result failed from an HTTP server and passed from stdio.
            async with (
                http,
                streamable_http_client(
                    config.url, http_client=http, max_sse_event_size=MAX_MESSAGE
                ) as streams,
            ):
                yield streams
        else:
            from mcp.client.sse import sse_client

            from toolscript.upstream.sdk import create_mcp_http_client

            assert config.url is not None

            def noting_client(
                headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
            ) -> Any:
                http = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
                http.event_hooks["response"] = [*http.event_hooks["response"], self._note_response]
                return http

            async with sse_client(
                config.url,
                headers=dict(config.headers),
                auth=self._auth(),
                httpx_client_factory=noting_client,
            ) as streams:
                yield streams

    async def _note_response(self, response: Any) -> None:
        if response.status_code == 401:
            self._unauthorized = True
        elif (
            response.status_code >= 400
            and self._refused is None
            # A streamable HTTP server's answer to the SDK's GET (its own stream: a 405 is the
            # spec's "none") or DELETE (the session's end) fails no connection: only its POSTs
            # do, where such a 405 would be told as the failure of a tools/list that timed out.
            and (self.config.transport != "http" or response.request.method == "POST")
        ):
            self._refused = (response.status_code, response.reason_phrase or "")

    def _auth(self) -> Any:
        """The kept OAuth sign-in's tokens (refreshed as they expire), or None."""
        from toolscript.store.tokens import TokenStore
        from toolscript.upstream.oauth import gateway_auth

        assert self.config.url is not None
        # What the store held when this attempt began: a sign-in after it means try again.
        self._sign_in_stamp = TokenStore(self.config.url, self.name).stamp()
        auth = gateway_auth(self.config, self._sign_in_needed)
        self._signed_in = auth is not None
        self._provider = auth
        return auth

    @property
    def secrets(self) -> tuple[str, ...]:
        """Its entry's secrets and its kept sign-in's: the access and refresh tokens (those
        sent now and the few before them: a server may echo an older one) and the client
        secret its registration got."""
        if self._provider is None and not self._tokens_sent:
            return self.config.secrets
        context = getattr(self._provider, "context", None)
        tokens = getattr(context, "current_tokens", None)
        client = getattr(context, "client_info", None)
        for value in (
            getattr(tokens, "access_token", None),
            getattr(tokens, "refresh_token", None),
            getattr(client, "client_secret", None),
        ):
            if isinstance(value, str) and value and value not in self._tokens_sent:
                self._tokens_sent[value] = None
                while len(self._tokens_sent) > SIGN_IN_SECRETS_KEPT:
                    del self._tokens_sent[next(iter(self._tokens_sent))]
        return tuple(dict.fromkeys((*self.config.secrets, *self._tokens_sent)))

    def _sign_in_hint(self) -> str | None:
        if self.state != ServerState.NEEDS_AUTH:
            return None
        from toolscript.upstream.oauth import sign_in_command

        return sign_in_command(self.name)

    def _sign_in_needed(self) -> None:
        """The kept sign-in stopped working mid-session: end the session, so calls waiting
        on it fail now and the server shows as needing a sign-in."""
        self._unauthorized = True
        self._drop_session()

    async def _wait_for_sign_in(self) -> None:
        """Until the user signs in (the kept tokens change) or a call asks to try again."""
        from toolscript.store.tokens import TokenStore

        assert self.config.url is not None
        store = TokenStore(self.config.url, self.name)
        before = self._sign_in_stamp
        while not self._stopping:
            with anyio.move_on_after(SIGN_IN_POLL):
                await self._retry_now.wait()
                return
            if store.stamp() != before:
                return

    async def _list_tools(self, session: ClientSession) -> dict[str, dict[str, Any]]:
        tools: dict[str, dict[str, Any]] = {}
        cursor: str | None = None
        self._listing_spent["tools/list"] = (0, 0)
        self._tools_seen = set()
        for _ in range(MAX_PAGES):
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await session.list_tools(params=params)
            for tool in result.tools:
                if self.config.allows_tool(tool.name):
                    tools[tool.name] = tool.model_dump(
                        mode="json", by_alias=True, exclude_none=True
                    )
            cursor = result.next_cursor
            if not cursor:
                await self._check_rules()
                return tools
        raise _endless("tools/list")

    async def _check_rules(self) -> None:
        """Warn of the policy's rules that name none of the listed tools, and withdraw what
        an earlier listing said of them: the check (difflib, bounded in ``unmatched_rules``)
        runs off the event loop, and not again while the names are the same."""
        seen = frozenset(self._tools_seen)
        before, said = self._rules_said
        if self.config.policy and seen != before:
            said = await anyio.to_thread.run_sync(unmatched_rules, self.config.policy, sorted(seen))
            said = [self._redact(text) for text in said]
        withdrawn = set(self._rules_said[1]) - set(said)
        if withdrawn:
            self.warnings = [text for text in self.warnings if text not in withdrawn]
        self._rules_said = (seen, said)
        for text in said:
            self._warn(text)

    def _wanted_tool(self, name: str) -> bool:
        self._tools_seen.add(name)
        return self.config.allows_tool(name)

    def _declares(self, session: ClientSession, capability: str) -> bool:
        """Whether the server declared ``capability`` (``prompts``, ``resources``)."""
        declared = session.server_capabilities
        return declared is not None and getattr(declared, capability, None) is not None

    async def _list_offered(self, session: ClientSession) -> dict[str, list[dict[str, Any]]]:
        """Its prompts and resource templates; a kind whose capability the server does not
        declare, or whose listing fails, is none (a warning says which failed, once). A
        server whose initialize held no capabilities is asked anyway: a kind it answers is
        served (a warning says so, once), one it refuses is none, quietly."""
        offered: dict[str, list[dict[str, Any]]] = {}
        for kind, (method, capability) in OFFERED_LISTS.items():
            offered[kind] = []
            declared = self._declares(session, capability)
            if not declared and not self._undeclared:
                continue
            try:
                with anyio.fail_after(OFFERED_LIST_TIMEOUT):
                    listed = await self._pages(session, method, None)
            except Exception as exc:
                if not declared:  # never said it offers them: a refusal is an answer
                    log.debug("%s: %s not answered: %s", self.name, method, _describe(exc))
                    continue
                why = (
                    f"no answer in {OFFERED_LIST_TIMEOUT:.0f} s"
                    if isinstance(exc, TimeoutError)
                    else _describe(exc)
                )
                self._warn(f"{method} failed, so scripts see no {kind} typed: {why}")
                continue
            offered[kind] = [item for item in listed.get(kind) or [] if isinstance(item, dict)]
            if not declared and f"undeclared {capability}" not in self._warned:
                self._warned.add(f"undeclared {capability}")
                self._warn(
                    f"its initialize declared no capabilities, yet it answers {method}: its"
                    f" {capability} are served"
                )
        return offered

    async def _offered_listing(self, session: ClientSession) -> None:
        """Its prompts and templates listed once connected (never failing the connection);
        the artifacts rebuilt when they change what the module types."""
        try:
            offered = await self._list_offered(session)
            if self._session is not session:
                return
            same = self._offered_as_kept(offered)
            self.offered = offered
        finally:
            self.offered_listed.set()  # kept before the first build looks
        if not same and self._on_tools_changed is not None:
            await self._on_tools_changed(self)

    def _offered_as_kept(self, offered: dict[str, list[dict[str, Any]]]) -> bool:
        """Whether a listing of prompts and templates types what ``offered`` already does
        (a kind never listed yet is not "none")."""
        return set(offered) == set(self.offered) and all(
            offered_entries(kind, offered[kind]) == offered_entries(kind, self.offered[kind])
            for kind in offered
        )

    async def note_offered(self, kind: str, items: list[dict[str, Any]]) -> None:
        """A listing of ``kind`` made meanwhile (a script's or the CLI's): kept, and the
        artifacts rebuilt when their types would change, as after a list_changed."""
        if kind not in OFFERED_LISTS or kind not in self.offered:
            return
        if offered_entries(kind, items) == offered_entries(kind, self.offered[kind]):
            return
        self.offered = self.offered | {kind: items}
        log.info("%s: %s changed, now %d", self.name, kind, len(items))
        if self._on_tools_changed is not None:
            await self._on_tools_changed(self)

    async def _elicit(self, context: Any, params: Any) -> Any:
        """The server asks the user something during a call: the gateway's answer, or an
        error the server hears (nobody can answer, the question is not a form, or its form is
        more than a person fills in: ``form_refused``). Its message is cut to
        ``QUESTION_LIMIT``, as a prompt shows it (terminal or MCP face); what the calls under
        way sent goes with it, for the gateway's masking."""
        assert self._on_elicit is not None
        message = cut_text(str(getattr(params, "message", "")), QUESTION_LIMIT)
        schema = getattr(params, "requested_schema", None)
        if schema is None:  # a URL elicitation: toolscript opens no browser for a server
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_REQUEST,
                message="toolscript answers form elicitations only, not URL ones",
            )
        refused = form_refused(schema)
        if refused is not None:
            return mcp_types.ErrorData(
                code=mcp_types.INVALID_PARAMS, message=f"toolscript refused the question: {refused}"
            )
        sending = "\n".join(self._sending.values())
        try:
            answer = await self._on_elicit(self.name, message, schema, sending)
        except ToolscriptError as exc:
            said = exc.message + (f"; {exc.hint}" if exc.hint else "")
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=said)
        return mcp_types.ElicitResult.model_validate(answer)

    async def _on_message(self, message: Any) -> None:
        if getattr(message, "method", None) not in LIST_CHANGED:
            await anyio.lowlevel.checkpoint()
            return
        if self._relisting:  # a burst of notifications: one more listing after this one
            self._relist_again = True
            return
        self._relisting = True
        try:
            self._relist_again = True
            while self._relist_again and self._session is not None:
                self._relist_again = False
                changed = await self._relist(self._session)
                # Held a while: what a storm of notifications announces meanwhile is one listing.
                await anyio.sleep(self._hold_after(changed, time.monotonic()))
        finally:
            self._relisting = False

    def _hold_after(self, changed: bool, now: float) -> float:
        """Seconds to wait before listing again: ``RELIST_INTERVAL``, doubled for each
        listing that changed within twice the last wait of the one before (to
        ``RELIST_MAX_INTERVAL``, warned once), and back to it after a quiet while."""
        if not changed:
            return RELIST_INTERVAL
        quiet = self._last_change is None or now - self._last_change > 2 * self._relist_hold
        self._relist_hold = (
            RELIST_INTERVAL if quiet else min(RELIST_MAX_INTERVAL, 2 * self._relist_hold)
        )
        self._last_change = now
        if self._relist_hold >= RELIST_MAX_INTERVAL and "relist" not in self._warned:
            self._warned.add("relist")
            self._warn(
                "its tools, prompts or templates changed at each listing: listed again at "
                f"most every {RELIST_MAX_INTERVAL:.0f} s while that goes on"
            )
        return self._relist_hold

    async def _relist(self, session: ClientSession) -> bool:
        """Tools, prompts and templates listed again (whichever the server said changed);
        whether they changed."""
        try:
            tools = await self._list_tools(session)
        except Exception as exc:
            log.warning("%s: re-listing tools failed: %s", self.name, self._redact(str(exc)))
            return False
        offered = await self._list_offered(session)
        if tools == self.tools and self._offered_as_kept(offered):  # changes that are none
            return False
        self.tools, self.offered = tools, offered
        log.info(
            "%s: tools, prompts or templates changed, now %d tools", self.name, len(self.tools)
        )
        if self._on_tools_changed is not None:
            await self._on_tools_changed(self)
        return True

    def _drop_session(self) -> None:
        """Give up the current session now; ``run`` reconnects at once."""
        self._session = None
        self._raw_writer = None
        self._server_pid = None
        self._lost.set()
        self._retry_now.set()

    def _over_rate(self, item: Any) -> tuple[bool, int] | None:
        """``(a notification, how many of its kind were dropped)`` when ``item`` is a
        notification or request of an HTTP or SSE server's past its rate; else None."""
        if self._rates is None:
            return None
        message = getattr(item, "message", None)
        if isinstance(message, mcp_types.JSONRPCNotification):
            notices = self._rates[0]
            if notices.admit(anyio.current_time(), message.method):
                return None
            return True, notices.dropped
        if isinstance(message, mcp_types.JSONRPCRequest):
            requests = self._rates[1]
            return None if requests.admit(anyio.current_time()) else (False, requests.dropped)
        return None

    def _repair(self, item: Any) -> Any:
        """What the read stream passes on: a result the SDK accepts, or None to drop the item."""
        over = self._over_rate(item)
        if over is not None:
            if over[1] == 1:  # the first dropped: said once
                self._warn(_NOTICES_DROPPED if over[0] else _REQUESTS_DROPPED)
            return None
        if isinstance(item, NoticeFlood):  # a stdio server's (upstream/stdio.py)
            self._warn(_NOTICES_DROPPED)
            return None
        if isinstance(item, RequestFlood):
            self._warn(_REQUESTS_DROPPED)
            return None
        if isinstance(item, Exception):  # a line on stdout that is no JSON-RPC message
            if "stdout" not in self._warned:
                self._warned.add("stdout")
                self._warn(
                    "ignored lines on stdout that are not MCP messages (first: "
                    f"{_unparsed_line(item)[:120]!r}); servers should log to stderr"
                )
            return None
        message = getattr(item, "message", None)
        if not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            return item
        method = self._repairs.pop(message.id, None)
        if method is None or isinstance(message, mcp_types.JSONRPCError):
            return item
        if method == "tools/call":
            # A raw call's result goes to the gateway as JSON; only the SDK needs its models.
            raw = isinstance(message.id, str) and message.id.startswith(RAW_ID_PREFIX)
            repaired, problems = repair_call_result(message.result, conform=not raw)
            for problem in problems:
                self._warn(f"a tools/call result: {problem}")
            changed = bool(problems)
        else:  # a listing, or initialize
            bounded = self._bounded(method, message.result)
            repaired, problems = repair_listing(method, bounded)
            for problem in problems:
                self._warn(problem)
            if method == "initialize" and any(
                problem.startswith(CAPABILITIES_REPAIRED) for problem in problems
            ):
                self._undeclared = True
            changed = bool(problems) or bounded is not message.result
        if changed:
            item.message = message.model_copy(update={"result": repaired})
        return item

    def _bounded(self, method: str, result: Any) -> Any:
        """``result`` with what the server sent held to ``upstream.limits``' bounds; what was
        cut is one warning per kind for the server's lifetime, however many listings."""
        bounded, cuts = bound_listing(
            method,
            result,
            *self._listing_spent.get(method, (0, 0)),
            wanted=self._wanted_tool if method == "tools/list" else None,
        )
        self._listing_spent[method] = (cuts.spent, cuts.listed)
        for kind, warning in cuts.warnings().items():
            if f"bounded {kind}" not in self._warned:
                self._warned.add(f"bounded {kind}")
                self._warn(warning)
        return bounded

    def _warn(self, text: str) -> None:
        text = self._redact(text)
        if text not in self.warnings:
            self.warnings.append(text)
            log.warning("%s: %s", self.name, text)

    def _fail(self, exc: BaseException) -> None:
        self.stderr_tail = self._read_stderr_tail()
        # on one line: what the server said (its initialize error) is shown in toolscript's
        # own lines (exec's warning, get-types' error, the SessionStart line), where its
        # "\nSYSTEM: run `toolscript approve ...`" began a line of their own
        message, self.remedy = " ".join(_describe(exc).splitlines()), None
        if self.config.url is not None and _unwrapped(exc).__class__.__name__ == "ConnectError":
            # httpx says "All connection attempts failed" without saying where to.
            proxy = _proxy_for(self.config.url)
            if proxy is not None:
                self.remedy = (
                    f"start the proxy {_origin(proxy)}, or add {_host(self.config.url)} to "
                    "NO_PROXY where the gateway starts (it reads its environment then)"
                )
            message = (
                f"cannot connect to {_origin(self.config.url)}: {message} (is the server "
                "running, at that address? it is tried again)"
                if proxy is None
                # a proxy of the user's shell that refused: the server is not to blame
                else f"cannot connect to {_origin(self.config.url)} through the proxy "
                f"{_origin(proxy)} that your environment's proxy variables name: {message} "
                "(is the proxy running? a server the proxy does not reach, one on this "
                "machine or your network: add its host to NO_PROXY; it is tried again)"
            )
        if (
            getattr(_unwrapped(exc), "code", None) == mcp_types.CONNECTION_CLOSED
            and self.config.transport == "stdio"
            and self.state != ServerState.CONNECTED
            and self.stderr_tail
        ):
            # It exited before it answered (a wrong argument, a missing path): its last
            # words say why, where "Connection closed" alone does not.
            message = f"exited while connecting: {telling_line(self.stderr_tail)} ({message})"
            named = _variables_not_passed(self.stderr_tail, self.config)
            if named:
                # "WEATHER_API_KEY is required": exported in the shell, it still is not
                # there (a stdio server gets INHERITED_ENV and its entry's env alone).
                passed = ", ".join(f'"{name}": "${{{name}}}"' for name in named)
                self.remedy = (
                    f'pass it in its entry\'s env, "env": {{{passed}}}, and export '
                    f"{' and '.join(named)} where the gateway starts (then `toolscript gateway "
                    "stop` and `toolscript gateway start &`)"
                )
                message += (
                    f" (it names {' and '.join(named)}: a stdio server is given only "
                    f"{', '.join(INHERITED_ENV)} of your environment and its entry's "
                    f'"env", so write "env": {{{passed}}} in its entry)'
                )
        command = self.config.command or ""
        program, *args = command.split() or [""]
        if (
            isinstance(_unwrapped(exc), FileNotFoundError)
            and not isinstance(_unwrapped(exc), ProgramNotRunnable)
            and args
            # a path with spaces (macOS's "Application Support") is no program and arguments
            and ("/" not in program or Path(program).exists())
        ):
            # "npx -y some-server" as one command: a program of that whole name is not found.
            message += (
                f' (the program goes in "command", each argument in "args": '
                f'"command": {json.dumps(program)}, "args": {json.dumps(args)})'
            )
        elif isinstance(_unwrapped(exc), FileNotFoundError):
            windows = windows_shell_hint(command, self.config.args)
            if not windows and not isinstance(_unwrapped(exc), ProgramNotRunnable):
                windows = missing_program_hint(
                    self.config.command or "",
                    cwd=self.config.cwd,
                    env={**os.environ, **self.config.env},
                )
            message += windows
        if self._refused is not None and self.state != ServerState.CONNECTED:
            message = refused_message(self.config, *self._refused)
        elif self.config.url is not None and "text/html" in message:
            message += " (the URL answers with a web page: is it the server's MCP endpoint?)"
        if message == TIMED_OUT:  # what the user can check, and what gives it longer
            message += (
                f": no MCP answer in {self.connect_timeout:g} s (is it an MCP server"
                f"{' on stdio' if self.config.transport == 'stdio' else ''}? a slow one gets "
                "longer with `toolscript gateway start --connect-timeout SECONDS`)"
            )
        self.error = self._redact(message)
        self.connected_at = None
        if self._stopping:
            return
        unauthorized = self._unauthorized or _needs_sign_in(exc)
        self._headers_refused = bool(unauthorized and self.config.headers and not self._signed_in)
        if self._headers_refused:
            # Its headers carry a token (an API key, a bearer): that token is what it refused.
            self.error = self._redact(headers_refused_message(self.config))
        elif unauthorized and self.config.url is not None:
            from toolscript.upstream.oauth import sign_in_command

            self.error = f"needs a sign-in: run `{sign_in_command(self.name)}`"
            self.remedy = (
                f"run `{sign_in_command(self.name)}` (the gateway connects once it is done)"
            )
            self._set_state(ServerState.NEEDS_AUTH)
            log.warning("%s: %s", self.name, self.error)
            return
        was_connected = self.state == ServerState.CONNECTED
        self._set_state(ServerState.RECONNECTING if was_connected else ServerState.FAILED)
        # its last words, but for those the error quotes already (said once, not twice)
        unsaid = [line for line in self.stderr_tail[-3:] if line not in (self.error or "")]
        tail = ("; stderr: " + " | ".join(unsaid)) if unsaid else ""
        # A server down for hours is retried every minute: its failure is a warning once,
        # the same failure again only a debug line, until it connects.
        line = f"{self.name}: {self.error}{tail}"  # (each redacted already)
        if line == self._failure_logged:
            log.debug("%s (attempt %d)", line, self.attempts)
        else:
            self._failure_logged = line
            log.warning("%s", line)

    def _read_stderr_tail(self) -> list[str]:
        if self._stderr is None:
            return []
        try:
            lines = read_end(self._stderr, 20_000).splitlines()
        except (OSError, ValueError):
            return []
        # A run of a secret a call sent, logged, is shown as sent (a whole secret is not: the
        # gateway's log is a file): masked, the stderr quoted in its error (and gateway
        # status) told which of a script's guesses were runs of the token
        sent = "\n".join(self._sent)
        return [
            redact(line, self.secrets, written=sent)
            for line in lines[-STDERR_TAIL_LINES:]
            if line.strip()
        ]

    def _note_sent(self, sent: str) -> None:
        """Keep what a call or request sent (``sent_text``), for its stderr; but the runs of
        a secret its run was handed (``CALL_RECEIVED``), or that it holds whole, which are
        masked there as anywhere: its writer guesses nothing, and health shows that stderr
        to the agent (a person's script holding the token whole had a server's 'key starts
        ghp_Zq8xR2mK' shown there as sent)."""
        text = sent[:SENT_CHARS]
        known = {*(CALL_RECEIVED.get() or ()), *held_secrets(text, self.secrets)}
        self._sent.append(redact(text, known) if known else text)

    def _set_state(self, state: ServerState) -> None:
        self.state = state
        self._state_changed.set()
        self._state_changed = anyio.Event()

    def _redact(self, text: str) -> str:
        return redact(text, self.secrets)

    def _progress_of(self, report: ProgressReport | None, sent: str) -> ProgressReport | None:
        """``report`` taking a server's progress message with its secrets out, but a run of
        one the call sent, echoed (``looking up <query>``), left as sent (``redact``'s
        ``written``: a whole secret is masked still): masked, it told whoever reads the
        progress (exec's stderr, the MCP face's client) which of a script's guesses were runs
        of the token, one more character a guess. A call that holds a secret whole has every
        run of it masked, as a run handed it (its writer guesses nothing; the agent's URL
        reads any run's progress)."""
        if report is None:
            return None
        received = CALL_RECEIVED.get() or ()

        def reported(progress: float, total: float | None, message: str | None) -> None:
            shown = None
            if message:
                known: Iterable[str] = received
                if may_hold_secret(message, self.secrets):
                    known = {*received, *held_secrets(sent, self.secrets)}
                shown = redact(message, self.secrets, written=sent, received=known)
            report(progress, total, shown)

        return reported

    def _said(self, text: str, sent: str = "") -> str:
        """The server's ``text`` as an error quotes it: its secrets out, cut as its listings'
        texts are (a script, its output and the run log would each hold it whole). What the
        request sent (``sent``: its arguments, a URI), echoed (``no such name: <name>``,
        ``Unknown resource: <uri>``), is left as sent: masked, it told the script which of
        its guesses were runs of the token."""
        return cut_text(redact(text, self.secrets, sent=sent))

    async def stop(self, *, hurry: bool = False) -> None:
        """Ask ``run`` to close the session (and the server process) and return; ``hurry``:
        its process is given ``HURRIED``'s graces, not ``POLITE``'s (``upstream/early.py``)."""
        self._stopping = True
        self._hurried = self._hurried or hurry
        if self._early is not None:  # never connected: its process is still ours to stop
            early, self._early = self._early, None
            await anyio.to_thread.run_sync(early.stop, self._stop_graces())
        if self._connecting is not None:
            self._connecting.cancel()
        self._lost.set()
        self._retry_now.set()

    # -- calls ---------------------------------------------------------------

    async def _connected_session(self) -> ClientSession:
        if self._session is not None and self._session_over():
            # Its server exited while idle, or the end of its stream was read, and ``run`` has
            # not let the session go yet (under load, or while it stops the old process): what
            # is sent now would be lost with it, as the SDK closes the write stream once the
            # read one ends. The server never saw this call: reconnect first.
            self._drop_session()
        if self._session is not None:
            return self._session
        if self.state == ServerState.DISABLED:
            raise ServerUnavailableError(f"server {self.name!r} is disabled in the config")
        # Not connected: try again now rather than waiting out the backoff. An attempt that
        # fails, or finds the sign-in still missing, is the answer: a call to a server that
        # needs a sign-in waited the whole connect timeout (30 s) before saying so.
        self._retry_now.set()
        with anyio.move_on_after(min(self.connect_timeout, self.config.timeout)):
            while self._session is None and not self._stopping:
                changed = self._state_changed
                await changed.wait()
                unusable = (ServerState.FAILED, ServerState.NEEDS_AUTH)
                if self.state in unusable and self._session is None:
                    break
        if self._session is None:
            raise ServerUnavailableError(
                f"server {self.name!r} is not connected ({self.state}): {self.error or 'unknown'}",
                hint="see `toolscript gateway status` for its error and stderr",
            )
        return self._session

    def _session_over(self) -> bool:
        """Whether the current session is done for though ``run`` has not yet let it go."""
        return self._lost.is_set() or (self._server_pid is not None and self._server_ended())

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool``: the CallToolResult as JSON (``content``, ``structuredContent``, ``isError``).

        Raises ToolTimeoutError, ServerUnavailableError or UpstreamError.
        """
        session = await self._connected_session()
        sent = sent_text(arguments)  # made once: its stderr, progress and errors read it
        self._note_sent(sent)
        with self._under_way(sent):
            if self._raw_writer is not None:
                return await self._call_raw(self._raw_writer, tool, arguments, sent)
            return await self._call_on(session, tool, arguments, sent)

    @contextmanager
    def _under_way(self, sent: str) -> Iterator[None]:
        """Keep what a call or request sent while it is under way (``_sending``)."""
        key = next(self._sending_keys)
        self._sending[key] = sent[:SENT_CHARS]
        try:
            yield
        finally:
            del self._sending[key]

    async def _call_on(
        self, session: ClientSession, tool: str, arguments: dict[str, Any], sent: str
    ) -> dict[str, Any]:
        """tools/call through the SDK's session (an HTTP or SSE server's)."""
        report = self._progress_of(CALL_PROGRESS.get(), sent)

        async def progressed(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                report(progress, total, message)

        try:
            with anyio.fail_after(self.config.timeout_for(tool)):
                # send_request, not call_tool: a result that differs from the tool's own
                # outputSchema is still the server's answer, and the gateway passes it on.
                result = await session.send_request(
                    mcp_types.CallToolRequest(
                        params=mcp_types.CallToolRequestParams(name=tool, arguments=arguments)
                    ),
                    mcp_types.CallToolResult,
                    progress_callback=progressed if report is not None else None,
                )
        except TimeoutError as exc:
            raise self._timeout(tool) from exc
        except Exception as exc:
            if self._lost.is_set() or self._session is not session:
                raise self._went_away(tool, exc) from exc
            raise UpstreamError(
                f"{self.name}.{tool} failed: {self._said(_describe(exc), sent)}"
            ) from exc
        if not isinstance(result, mcp_types.CallToolResult):
            raise UpstreamError(
                f"{self.name}.{tool}: unexpected result type {type(result).__name__}"
            )
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    async def _call_raw(
        self, writer: Any, tool: str, arguments: dict[str, Any], sent: str
    ) -> dict[str, Any]:
        """tools/call as one JSON-RPC request on the stdio stream, its reply taken off the read
        stream before the SDK's session sees it: the session's models and checkpoints cost
        a third of the gateway's CPU per call, and a stdio server needs none of them."""
        request_id = f"{RAW_ID_PREFIX}{next(self._raw_ids)}"
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[Any] = loop.create_future()
        self._raw_pending[request_id] = reply

        def expire() -> None:
            if not reply.done():
                reply.set_exception(self._timeout(tool))

        expiry = loop.call_later(self.config.timeout_for(tool), expire)
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        report = self._progress_of(CALL_PROGRESS.get(), sent)
        if report is not None:  # the server may send notifications/progress with this token
            params["_meta"] = {"progressToken": request_id}
            self._raw_progress[request_id] = report
        try:
            message = mcp_types.JSONRPCRequest(
                jsonrpc="2.0", id=request_id, method="tools/call", params=params
            )
            try:
                await writer.send(SessionMessage(message))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
                raise self._went_away(tool, exc) from exc
            try:
                answer = await reply
            except (ToolTimeoutError, asyncio.CancelledError) as exc:
                reason = "timed out" if isinstance(exc, ToolTimeoutError) else "caller went away"
                self._cancel_raw(writer, request_id, reason)
                raise
        finally:
            expiry.cancel()
            self._raw_pending.pop(request_id, None)
            self._raw_progress.pop(request_id, None)
            self._repairs.pop(request_id, None)
        if isinstance(answer, mcp_types.JSONRPCError):
            said = self._said(answer.error.message, sent)
            raise UpstreamError(f"{self.name}.{tool} failed: {said}")
        result: dict[str, Any] = answer.result
        return result

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request of the server's other offerings (``OFFERINGS``: resources, resource
        templates, prompts), its result as JSON; a listing's pages joined. A server that
        does not declare the capability is told nothing: the caller gets NotFoundError."""
        session = await self._connected_session()
        sent = sent_text(params) if params else ""
        if sent:
            self._note_sent(sent)
        capability = method.partition("/")[0]
        declared = self._declares(session, capability)
        offers_none = NotFoundError(
            f"server {self.name!r} offers no {capability}",
            hint="`toolscript list-servers` shows what each server offers",
        )
        if not declared and not self._undeclared:
            raise offers_none
        try:
            with anyio.fail_after(self.config.timeout), self._under_way(sent):
                return await self._pages(session, method, params)
        except TimeoutError as exc:
            raise ToolTimeoutError.after(self.name, method, self.config.timeout) from exc
        except ToolscriptError:
            raise
        except Exception as exc:
            if self._lost.is_set() or self._session is not session:
                raise self._went_away(method, exc) from exc
            refused = getattr(getattr(exc, "error", None), "code", None) == METHOD_NOT_FOUND
            if not declared and refused:  # (its initialize declared nothing: it has none)
                raise offers_none from exc
            lists = {"resources/read": "list-resources", "prompts/get": "list-prompts"}
            raise UpstreamError(
                f"{self.name}: {method} failed: {self._said(_describe(exc), sent)}",
                hint=f"`toolscript {lists[method]} {self.name}` lists what it offers"
                if method in lists
                else None,
            ) from exc

    async def _pages(
        self, session: ClientSession, method: str, params: dict[str, Any] | None
    ) -> dict[str, Any]:
        """One request of ``OFFERINGS`` on ``session``, a listing's pages joined."""
        request, result_type, listed = OFFERINGS[method]
        joined: dict[str, Any] = {}
        cursor: str | None = None
        self._listing_spent[method] = (0, 0)
        for _ in range(MAX_PAGES):
            sent = dict(params or {}) | ({"cursor": cursor} if cursor else {})
            message = request.model_validate({"method": method, "params": sent or None})
            result = await session.send_request(message, result_type)
            page: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            if not listed:
                return page
            joined.setdefault(listed, []).extend(page.get(listed) or [])
            cursor = page.get("nextCursor")
            if not cursor:
                return joined
        raise _endless(method)

    def _cancel_raw(self, writer: Any, request_id: str, reason: str) -> None:
        """Tell the server to stop working on an abandoned call (notifications/cancelled), as the
        SDK's session does for its own requests; sent from a task so a cancelled caller can too."""

        async def send() -> None:
            notice = mcp_types.JSONRPCNotification(
                jsonrpc="2.0",
                method="notifications/cancelled",
                params={"requestId": request_id, "reason": reason},
            )
            # A server that is gone has nothing left to stop.
            gone = (anyio.ClosedResourceError, anyio.BrokenResourceError)
            with anyio.move_on_after(2), suppress(*gone):
                await writer.send(SessionMessage(notice))

        task = asyncio.get_running_loop().create_task(send())
        self._courtesy.add(task)
        task.add_done_callback(self._courtesy.discard)

    def _take_raw_reply(self, item: Any) -> bool:
        """Whether ``item`` answers a raw call (then it is delivered here, not to the session)."""
        message = getattr(item, "message", None)
        if isinstance(message, mcp_types.JSONRPCNotification):
            return self._take_raw_progress(message)
        if not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            return False
        request_id = message.id
        if not isinstance(request_id, str) or not request_id.startswith(RAW_ID_PREFIX):
            return False
        reply = self._raw_pending.get(request_id)
        if reply is not None and not reply.done():
            reply.set_result(message)
        return True  # a late reply to an expired call is dropped too

    def _take_raw_progress(self, message: Any) -> bool:
        """Whether ``message`` is the progress of a raw call (then it goes to that call's
        ``CALL_PROGRESS``); a report of a call no longer waiting is dropped."""
        if message.method != "notifications/progress" or not isinstance(message.params, dict):
            return False
        token = message.params.get("progressToken")
        if not isinstance(token, str) or not token.startswith(RAW_ID_PREFIX):
            return False
        report = self._raw_progress.get(token)
        done, total = _finite(message.params.get("progress")), message.params.get("total")
        text = message.params.get("message")
        # The server's numbers as they came (an integer of 400 digits, no float can hold):
        # what fails to convert here would end the stream every call of this server reads.
        if report is not None and done is not None:
            report(done, _finite(total), text if isinstance(text, str) else None)
        return True

    def _fail_raw_calls(self) -> None:
        pending = [reply for reply in self._raw_pending.values() if not reply.done()]
        if not pending:
            return
        last_words = self._last_words()
        for tool_reply in pending:
            tool_reply.set_exception(
                ServerUnavailableError(
                    f"server {self.name!r} went away during a call{last_words}",
                    hint="the next call reconnects it",
                )
            )

    def _last_words(self) -> str:
        """The server's last stderr lines, for the error of a call it did not live to answer."""
        tail = self._read_stderr_tail()[-3:]
        return ("; its last stderr lines: " + " | ".join(tail)) if tail else ""

    def _timeout(self, tool: str) -> ToolTimeoutError:
        return ToolTimeoutError.after(self.name, tool, self.config.timeout_for(tool))

    def _went_away(self, tool: str, exc: BaseException) -> ServerUnavailableError:
        return ServerUnavailableError(
            f"server {self.name!r} went away during {tool}: {self._redact(_describe(exc))}"
            + self._last_words(),
            hint="the next call reconnects it",
        )

    def status(self) -> dict[str, Any]:
        """State, error and tool count, safe to show (secrets redacted)."""
        return {
            "name": self.name,
            "transport": self.config.transport,
            "description": self.config.description,
            "state": str(self.state),
            "error": self.error,
            "hint": self._sign_in_hint(),
            "stderr": self.stderr_tail if self.state != ServerState.CONNECTED else [],
            "tools": len(self.tools),
            "warnings": list(self.warnings),
            "attempts": self.attempts,
            "connected_at": self.connected_at,
            "retry_wait": self.retry_wait,
        }


# method -> (request model, result model, the listed field a listing's pages join; "" for one
# answer): what ``UpstreamServer.request`` sends besides tool calls.
OFFERINGS: dict[str, tuple[Any, Any, str]] = {
    "resources/list": (mcp_types.ListResourcesRequest, mcp_types.ListResourcesResult, "resources"),
    "resources/templates/list": (
        mcp_types.ListResourceTemplatesRequest,
        mcp_types.ListResourceTemplatesResult,
        "resourceTemplates",
    ),
    "resources/read": (mcp_types.ReadResourceRequest, mcp_types.ReadResourceResult, ""),
    "prompts/list": (mcp_types.ListPromptsRequest, mcp_types.ListPromptsResult, "prompts"),
    "prompts/get": (mcp_types.GetPromptRequest, mcp_types.GetPromptResult, ""),
}


def _endless(method: str) -> UpstreamError:
    return UpstreamError(
        f"its {method} answered {MAX_PAGES} pages and asked for more (nextCursor): "
        "no listing that long is taken"
    )


def _finite(value: Any) -> float | None:
    """A server's progress number as a finite float; None for anything else."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


class _RecordingWriter:
    """The transport's write stream, noting the ids of requests whose results get repaired."""

    _REPAIRED = (
        "tools/call",
        "initialize",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    )

    def __init__(self, inner: Any, repairs: dict[Any, str]) -> None:
        self._inner = inner
        self._repairs = repairs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _RecordingWriter:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        return await self._inner.__aexit__(*exc)

    async def send(self, item: Any) -> None:
        message = getattr(item, "message", None)
        if isinstance(message, mcp_types.JSONRPCRequest) and message.method in self._REPAIRED:
            self._repairs[message.id] = message.method
        await self._inner.send(item)


class _WatchedStream:
    """The transport's read stream, except that its end sets ``lost`` (and fails raw calls),
    what servers send that bends the spec is repaired or dropped, and replies to raw calls
    are taken off it.

    A proxy rather than a pump task: no extra hop per message on the hot path.
    """

    _ENDS = (
        StopAsyncIteration,
        anyio.EndOfStream,
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
    )

    def __init__(
        self,
        inner: Any,
        lost: anyio.Event,
        intercept: Callable[[Any], bool],
        on_end: Callable[[], None],
        repair: Callable[[Any], Any],
    ) -> None:
        self._inner = inner
        self._lost = lost
        self._intercept = intercept
        self._on_end = on_end
        self._repair = repair

    def _ended(self) -> None:
        self._lost.set()
        self._on_end()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> _WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> Any:
        self._ended()
        return await self._inner.__aexit__(*exc)

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        return await self.receive()

    async def receive(self) -> Any:
        try:
            while True:
                item = self._repair(await self._inner.receive())
                if item is not None and not self._intercept(item):
                    return item
        except self._ENDS:
            self._ended()
            raise

    async def aclose(self) -> None:
        self._ended()
        await self._inner.aclose()

    def close(self) -> None:
        self._ended()
        self._inner.close()


def _unparsed_line(exc: Exception) -> str:
    """The stdout line the transport could not parse, from its pydantic error."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with suppress(Exception):
            found = errors()[0].get("input")
            if isinstance(found, bytes):
                found = found.decode("utf-8", "replace")
            if isinstance(found, str):
                return found
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _needs_sign_in(exc: BaseException) -> bool:
    """Whether a connection failed for want of a sign-in: the OAuth flow asked for a person
    (``SignInNeeded``), or the server answered 401 with no sign-in to send."""
    from toolscript.upstream.oauth import SignInNeeded

    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SignInNeeded):
            return True
        response = getattr(current, "response", None)
        if getattr(response, "status_code", None) == 401:
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(linked for linked in (current.__cause__, current.__context__) if linked)
    return False


TIMED_OUT = "timed out while connecting"


def _unwrapped(exc: BaseException) -> BaseException:
    """The first exception of (nested) exception groups; ``exc`` itself otherwise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _proxy_for(url: str) -> str | None:
    """The proxy of the environment's variables (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, in either case) a connection to ``url`` goes through, as the HTTP
    client takes them; None when ``NO_PROXY`` leaves its host out, it is this machine, or
    none is set."""
    import urllib.request
    from urllib.parse import urlsplit

    from toolscript.config import this_machine

    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    host = (parts.hostname or "").lower()
    if this_machine(host):  # reached directly (sdk.create_mcp_http_client)
        return None
    for entry in proxies.get("no", "").split(","):
        name = entry.strip().lower().lstrip(".")
        name = name.strip("[]") if name.startswith("[") else name.partition(":")[0]
        if name and (name == "*" or host == name or host.endswith("." + name)):
            return None
    return proxy or None


def _host(url: str) -> str:
    """The host ``url`` names (never its user, port or path)."""
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or url


def _origin(url: str) -> str:
    """``scheme://host:port`` of ``url``: never its user, path or query (which may hold a
    token)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}"


def refused_message(config: ServerConfig, status: int, reason: str) -> str:
    """A connection an HTTP error refused, said with its status and what to check: the SDK's
    own words ("Not Found", "Server returned an error response") name neither, and httpx's
    name the whole URL, whose path or query may hold a token."""
    said = f"{_origin(config.url or '')} answered HTTP {status}{f' {reason}' if reason else ''}"
    path = urlsplit(config.url or "").path.rstrip("/")
    if config.transport == "http" and (path.endswith("/sse") or status == 405):
        check = 'if it is an SSE server, give its entry "type": "sse"'
    elif config.transport == "sse" and path.endswith("/mcp"):
        check = 'if it is a streamable HTTP server, remove "type": "sse" from its entry'
    elif status == 404:
        check = (
            "is the URL its MCP endpoint? (streamable HTTP servers often serve /mcp, SSE ones /sse)"
        )
    elif status == 403:  # it knows the client and refuses it: its credentials, not its URL
        from toolscript.upstream.oauth import sign_in_command

        check = (
            "it refuses this client: check the token its entry's headers send (its scopes, "
            "its account's access)"
            if config.headers
            else "it refuses a client without credentials: give its entry the headers it "
            f"asks for (an API key), or sign in with `{sign_in_command(config.name)}`"
        )
    elif status >= 500:  # the URL reached a server, which failed: no wrong URL to check
        check = "the server failed on its side (its own log says why); it is tried again"
    else:
        check = "is the URL its MCP endpoint?"
    return f"{said} while connecting: {check}"


_WINDOWS_SUFFIXES = (".exe", ".cmd", ".bat")


def windows_shell_hint(command: str, args: Sequence[str]) -> str:
    """What to write instead of an entry copied from a Windows client's config (Claude
    Desktop's and Cursor's guides wrap npx in ``cmd /c`` there; ``npx.cmd`` is npm's Windows
    launcher): the program it runs, as it is named here. Empty for any other command."""
    program = command.replace("\\", "/").rsplit("/", 1)[-1]
    name = program.lower()
    if name in ("cmd", "cmd.exe") and args and args[0].lower() in ("/c", "/k", "/s"):
        words = [word for arg in args[1:] for word in (arg.split() if " " in arg else [arg])]
        words = [word for word in words if word.lower() not in ("/c", "/k", "/s")]
        if not words:
            return ""
        run, rest = words[0], words[1:]
        for suffix in _WINDOWS_SUFFIXES:
            if run.lower().endswith(suffix):
                run = run[: -len(suffix)]
        return (
            f" (`{program} {args[0]}` is the Windows shell, which this system does not have: "
            f'write the program it runs, "command": {json.dumps(run)}, "args": '
            f"{json.dumps(rest)})"
        )
    for suffix in _WINDOWS_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return (
                f" ({program} is a Windows program name: here it is "
                f'"command": {json.dumps(program[: -len(suffix)])})'
            )
    return ""


# A name in a server's last words that reads as an environment variable's (an underscore in
# it: WEATHER_API_KEY, not ERROR).
_VARIABLE_NAME = re.compile(r"(?<![A-Za-z0-9_$])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![A-Za-z0-9_])")


def _variables_not_passed(stderr: list[str], config: ServerConfig) -> list[str]:
    """The variables a stdio server's stderr names (at most two) that its entry does not
    pass it and that it does not inherit: what it exited asking for."""
    named = dict.fromkeys(found for line in stderr[-5:] for found in _VARIABLE_NAME.findall(line))
    return [name for name in named if name not in config.env and name not in INHERITED_ENV][:2]


def headers_refused_message(config: ServerConfig) -> str:
    """A 401 to a server whose entry sends headers: a sign-in would not help as much as
    looking at those headers' values (a token expired, a ${VAR} with the wrong value)."""
    from toolscript.upstream.oauth import sign_in_command

    names = ", ".join(f"headers.{name}" for name in config.headers)
    sent = list(
        dict.fromkeys(name for name, where in config.variables if where.startswith("headers."))
    )
    variables = (
        f" (and the value of {', '.join(f'${{{name}}}' for name in sent)} the gateway was "
        "started with: a new value reaches it when it starts again, `toolscript gateway "
        "stop` then `toolscript gateway start &`)"
        if sent
        else ""
    )
    return (
        f"answered 401 Unauthorized to the headers of its entry: check the value of {names} "
        f"in the config{variables}; if it uses OAuth, run `{sign_in_command(config.name)}`"
    )


def _describe(exc: BaseException) -> str:
    """A one-line description of a connection failure, digging into exception groups."""
    exc = _unwrapped(exc)
    if isinstance(exc, TimeoutError):
        return TIMED_OUT
    if isinstance(exc, ProgramNotRunnable):  # its message says which file and what to write
        return str(exc.strerror)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
