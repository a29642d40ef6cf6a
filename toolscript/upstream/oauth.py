"""OAuth for http and sse servers, on the SDK's client (``mcp.client.auth``).

``sign_in`` is ``toolscript auth SERVER``: the SDK discovers the authorization server
from the server's 401 and metadata, registers toolscript as a client when the server
allows it (or uses ``oauth.clientId``/``clientSecret`` from the config), and we open the
browser at the authorization URL (and print it) and take the redirect on a loopback
port: only a request carrying the sign-in's own ``state`` ends the wait (any other local
request to it is answered 400 and ignored). ``gateway_auth`` is what the gateway connects with: stored tokens, refreshed by
the SDK before they expire, and never a browser: a server that needs a sign-in raises
``SignInNeeded`` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import threading
import webbrowser
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from toolscript.config import ServerConfig
from toolscript.errors import ToolscriptError
from toolscript.store.outputs import visible_controls
from toolscript.store.tokens import PendingSignIn, TokenStore

if TYPE_CHECKING:
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult

__all__ = ["SignInFailed", "SignInNeeded", "gateway_auth", "sign_in", "sign_in_command"]

CALLBACK_PATH = "/callback"
SIGN_IN_TIMEOUT = 300.0  # seconds a person has to finish signing in
# The gateway refreshes tokens this long before they expire (at most a third of their life):
# a server counts their life in whole seconds from when it issued them, and a request takes
# time on its way, so a token used to its last second is refused, and that 401 asks for a
# sign-in (the session is dropped).
EARLY_REFRESH = 30.0

_DONE_PAGE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"<!doctype html><title>toolscript</title><p>Signed in. You can close this tab.</p>"
)
_REFUSED_PAGE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n"
    b"<!doctype html><title>toolscript</title><p>The sign-in was refused; "
    b"the terminal says why.</p>"
)
_WRONG_STATE = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\nnot the sign-in toolscript is waiting for (wrong or missing state)\n"
)
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
PROVIDER_TEXT_LIMIT = 300  # characters of a provider's error text shown


class SignInNeeded(ToolscriptError):
    """The server wants a sign-in the gateway cannot do by itself."""

    status_code = 503
    kind = "needs_auth"
    exit_code = 1


class SignInFailed(ToolscriptError):
    status_code = 502
    kind = "sign_in_failed"
    exit_code = 1


def _open_browser(url: str) -> None:
    with contextlib.suppress(Exception):
        webbrowser.open(url)


def sign_in_command(name: str) -> str:
    """What signs in to server ``name``: the hint wherever a sign-in is needed."""
    return f"toolscript auth {name}"


def _client_metadata(server: ServerConfig, redirect_uri: str) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    oauth = server.oauth
    return OAuthClientMetadata(
        client_name="toolscript",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if oauth.client_secret else "none",
        scope=" ".join(oauth.scopes) if oauth.scopes else None,
    )


class _Loopback:
    """The redirect's landing place: http://127.0.0.1:PORT/callback with the ``state`` the
    authorization URL carried (``expect``); other requests are refused and the wait goes on."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[dict[str, list[str]]] | None = None
        self._state: str | None = None
        self.port = 0

    def expect(self, authorization_url: str) -> None:
        """The ``state`` of ``authorization_url`` is the one a callback must bring back."""
        states = parse_qs(urlsplit(authorization_url).query).get("state")
        self._state = states[0] if states else None

    async def start(self, port: int) -> str:
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            target = line.split(" ")[1] if line.count(" ") >= 2 else ""
            parts = urlsplit(target)
            if parts.path != CALLBACK_PATH:
                writer.write(_NOT_FOUND)
                return
            params = parse_qs(parts.query)
            state = params.get("state", [None])[0]
            if (
                self._state is None
                or state is None
                or not hmac.compare_digest(state.encode(), self._state.encode())
            ):
                writer.write(_WRONG_STATE)  # a local request, not the provider's redirect
                return
            writer.write(_REFUSED_PAGE if "error" in params else _DONE_PAGE)
            if self._result is not None and not self._result.done():
                self._result.set_result(params)
        except (OSError, TimeoutError, IndexError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                await writer.drain()
                writer.close()

    async def wait(self, timeout: float) -> dict[str, list[str]]:
        assert self._result is not None
        return await asyncio.wait_for(self._result, timeout)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()


@contextlib.asynccontextmanager
async def _session(server: ServerConfig, auth: Any) -> AsyncIterator[Any]:
    """An initialized MCP session to ``server`` whose requests ``auth`` signs."""
    from mcp.client.session import ClientSession

    from toolscript.upstream.sdk import create_mcp_http_client

    assert server.url is not None
    async with contextlib.AsyncExitStack() as stack:
        if server.transport == "sse":
            from mcp.client.sse import sse_client

            # toolscript's client, as the gateway's: a server on this machine directly
            # (never through a proxy), every answer bounded
            streams = await stack.enter_async_context(
                sse_client(
                    server.url,
                    headers=dict(server.headers),
                    auth=auth,
                    httpx_client_factory=create_mcp_http_client,
                )
            )
        else:
            from mcp.client.streamable_http import streamable_http_client

            from toolscript.upstream.bounded import MAX_MESSAGE

            http = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(server.headers), auth=auth)
            )
            streams = await stack.enter_async_context(
                streamable_http_client(server.url, http_client=http, max_sse_event_size=MAX_MESSAGE)
            )
        session = await stack.enter_async_context(ClientSession(*streams))
        await session.initialize()
        yield session


async def sign_in(
    server: ServerConfig,
    *,
    open_browser: bool = True,
    announce: Callable[[str], None] = print,
    timeout: float = SIGN_IN_TIMEOUT,
) -> TokenStore:
    """Sign in to ``server`` (an http or sse server: the caller checked) and keep its
    tokens; the store that holds them. A sign-in that fails keeps nothing and leaves an
    earlier one as it was."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull

    assert server.transport in ("http", "sse") and server.url is not None
    # The SDK logs each failed step with a traceback; what failed is said here, in our words.
    logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    loopback = _Loopback()
    redirect_uri = await loopback.start(server.oauth.callback_port)
    metadata = _client_metadata(server, redirect_uri)
    # An app registered by hand: its redirect URI must be the one above. Without one the SDK
    # registers a client (one registered for an earlier sign-in knew another loopback port).
    pending = PendingSignIn(
        OAuthClientInformationFull(
            client_id=server.oauth.client_id,
            client_secret=server.oauth.client_secret,
            **metadata.model_dump(),
        )
        if server.oauth.client_id
        else None
    )

    async def redirect(url: str) -> None:
        loopback.expect(url)
        announce(f"Sign in to {server.name} in your browser; if none opens, visit:\n{url}")
        if open_browser:  # in a thread: a browser command may wait until the page is loaded,
            # and loading it lands on our loopback, which this loop serves
            threading.Thread(target=_open_browser, args=(url,), daemon=True).start()

    async def callback() -> AuthorizationCodeResult:
        try:
            params = await loopback.wait(timeout)
        except TimeoutError:
            raise SignInFailed(
                f"no sign-in came back within {timeout:g} s",
                hint=f"run `{sign_in_command(server.name)}` again and finish the sign-in in the browser",
            ) from None
        if "error" in params:
            described = params.get("error_description")
            raise SignInFailed(
                f"{server.name} refused the sign-in: {_provider_text(params['error'][0])}"
                + (f" ({_provider_text(described[0])})" if described else "")
            )
        first = {key: values[0] for key, values in params.items() if values}
        return AuthorizationCodeResult(
            code=first.get("code", ""), state=first.get("state"), iss=first.get("iss")
        )

    provider = OAuthClientProvider(
        server.url,
        metadata,
        pending,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    try:
        async with _session(server, provider):
            pass
    except Exception as exc:
        raise _failure(server, _innermost(exc)) from None
    finally:
        loopback.close()
    found = provider.context.oauth_metadata
    if found is not None:
        pending.authorization_server = found.model_dump(mode="json", exclude_none=True)
    if pending.tokens is None:
        raise SignInFailed(
            f"{server.name} answered without asking for a sign-in: it needs none",
            hint="its config entry works as it is",
        )
    store = TokenStore(server.url, server.name)
    store.keep(pending)
    return store


def _provider_text(text: str) -> str:
    """Text the provider (or whoever reached the loopback) sent, fit to print: control
    characters shown as escapes, and not too long."""
    if len(text) > PROVIDER_TEXT_LIMIT:
        text = text[:PROVIDER_TEXT_LIMIT] + "…"
    return visible_controls(text)


def _failure(server: ServerConfig, cause: BaseException) -> SignInFailed:
    """What a failed sign-in says, in toolscript's words (what the provider said shown with
    its control characters as escapes)."""
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError

    if isinstance(cause, SignInFailed):
        return cause
    said = visible_controls(str(cause))
    if isinstance(cause, OAuthRegistrationError):
        return SignInFailed(
            f"{server.name} does not let toolscript register itself as a client ({said})",
            hint=(
                f"register an OAuth app with {server.name}'s provider (redirect URI "
                f'http://127.0.0.1:PORT{CALLBACK_PATH}), then set "oauth": {{"clientId": ..., '
                '"clientSecret": ..., "callbackPort": PORT} in its entry of .toolscript.json'
            ),
        )
    if isinstance(cause, OAuthFlowError):
        return SignInFailed(f"signing in to {server.name} failed: {said}")
    return SignInFailed(f"signing in to {server.name} failed: {type(cause).__name__}: {said}")


def _innermost(exc: BaseException) -> BaseException:
    """The one error inside task-group wrappers (ExceptionGroup of one), else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def gateway_auth(
    server: ServerConfig, on_sign_in_needed: Callable[[], None] | None = None
) -> OAuthClientProvider | None:
    """The auth the gateway connects ``server`` with: its kept tokens (refreshed as needed),
    or None when no sign-in is kept (the server is used as configured). When the tokens stop
    working (revoked, refresh refused), ``on_sign_in_needed`` is called before the request
    fails: a transport may swallow the error and leave the call waiting."""
    if server.transport not in ("http", "sse") or server.url is None:
        return None
    store = TokenStore(server.url, server.name)
    if not store.has_tokens():
        return None

    async def no_browser(url: str) -> None:
        if on_sign_in_needed is not None:
            on_sign_in_needed()
        raise SignInNeeded(
            f"{server.name} needs a sign-in (its kept sign-in expired, was revoked or signed out)",
            hint=f"run `{sign_in_command(server.name)}`",
        )

    async def no_callback() -> AuthorizationCodeResult:
        raise SignInNeeded(
            f"{server.name} needs a sign-in", hint=f"run `{sign_in_command(server.name)}`"
        )

    client = store.client_info()
    redirect_uri = (
        str(client.redirect_uris[0])
        if client and client.redirect_uris
        else (f"http://127.0.0.1:{server.oauth.callback_port or 1}{CALLBACK_PATH}")
    )
    return _provider_class()(
        server.url,
        _client_metadata(server, redirect_uri),
        store,
        redirect_handler=no_browser,
        callback_handler=no_callback,
    )


def _metadata(kept: dict[str, Any]) -> Any:
    from mcp.shared.auth import OAuthMetadata

    return OAuthMetadata.model_validate(kept)


def _provider_class() -> type[OAuthClientProvider]:
    """The SDK's provider, but one that knows when kept tokens expire. The SDK (2.3) loads
    stored tokens without their expiry, so it never refreshed them: the first request after
    expiry got a 401 and started a whole new sign-in. Every expiry it counts is moved
    ``EARLY_REFRESH`` ahead. (Private SDK pieces: ``_initialize``, ``_initialized`` and
    ``context``; tests/test_oauth.py's refresh test and test_attacks_secrets_at_rest.py's
    sign-out and refresh tests fail if they change.)"""
    from mcp.client.auth import OAuthClientProvider

    class KeptTokensProvider(OAuthClientProvider):
        async def async_auth_flow(
            self, request: httpx2.Request
        ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            """The SDK's flow, once the tokens it holds are still the kept sign-in's: after
            ``auth --logout`` a running gateway went on calling with them, refreshed them and
            wrote them back (listed again, used at every later start); after a new sign-in it
            refreshed the old one over it."""
            storage = self.context.storage
            if self._initialized and isinstance(storage, TokenStore) and storage.sign_in_changed():
                self._initialized = False  # the SDK reads the kept sign-in again
                if not storage.has_tokens():  # signed out: no token is sent, none registered
                    self.context.clear_tokens()
                    assert self.context.redirect_handler is not None
                    await self.context.redirect_handler("")  # the gateway's: SignInNeeded
            flow = super().async_auth_flow(request)
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

        async def _initialize(self) -> None:
            await super()._initialize()
            context = self.context
            if not getattr(context, "refreshes_early", False):  # once: it may run again
                counted = context.update_token_expiry

                def early(token: Any) -> None:  # for refreshed tokens too
                    counted(token)
                    if context.token_expiry_time is not None and token.expires_in:
                        life = int(token.expires_in)
                        context.token_expiry_time -= min(EARLY_REFRESH, life / 3)

                context.update_token_expiry = early  # type: ignore[method-assign]
                context.refreshes_early = True  # type: ignore[attr-defined]
            tokens = context.current_tokens
            if tokens is not None and tokens.expires_in is not None:
                context.update_token_expiry(tokens)
            storage = context.storage
            if context.oauth_metadata is None and isinstance(storage, TokenStore):
                # Without it the SDK refreshes at the MCP server's own origin (``/token``):
                # where the authorization server is another host, each refresh sent the
                # refresh token (and a client secret) to the MCP server, and failed.
                kept = storage.authorization_server()
                with contextlib.suppress(ValueError):
                    context.oauth_metadata = _metadata(kept) if kept else None

    return KeptTokensProvider
