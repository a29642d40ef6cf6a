"""ASGI guard in front of the gateway: secret path prefixes and a Host check.

Any local process, or a web page through DNS rebinding, could otherwise drive
the user's tools with the user's credentials. Every request must name the
gateway's own address in ``Host`` and start with ``/<token>``; only ``/livez``
answers without them (it says nothing but "alive"), and ``/proof?n=NONCE`` (its own
``Host`` still) with ``gateway_proof`` of the nonce under each of its tokens: a client
holding a URL checks that what answers there holds its token before it sends that token
or a script (another user's program on a dead gateway's port answers as a gateway does).

Three kinds of token, each reaching what its holder needs and nothing more:

- the **owner** token (the gateway's own): everything. It is kept in the user's 0600
  state and session files only, for the person's own commands (an interactive ``exec``
  on a terminal, the MCP face asking through elicitation);
- the **agent** token (``agent_token``, derived one way from the owner's): what the
  agent's environment gets (``TOOLSCRIPT_GATEWAY_URL``) to run scripts and read tools:
  ``AGENT_ROUTES``. It registers non-interactive runs only (the route checks
  ``CREDENTIAL_SCOPE_KEY``), so a call that needs approval stops its run for a person
  to approve; it never answers a prompt;
- a **run**'s token (``runs``: token -> run id): ``POST /tools/*``, ``GET /runtime/*``,
  ``POST /progress`` and the servers' resources and prompts (list, read, get), the calls
  and progress of that run (never another run's output, its end or its stop). While the
  run's script is still being checked (``cleared``: ``RunBook.hold``), they wait for the
  verdict, and are refused if it failed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import unquote

from toolscript.errors import (
    AccessDeniedError,
    ForbiddenHostError,
    ScriptCheckError,
    ToolscriptError,
    UnauthorizedError,
)

__all__ = [
    "AGENT",
    "AGENT_ROUTES",
    "CREDENTIAL_SCOPE_KEY",
    "LIVENESS_PATH",
    "OWNER",
    "PROOF_PATH",
    "RUN",
    "RUN_SCOPE_KEY",
    "TokenGuard",
    "agent_refused",
    "agent_token",
    "agent_url",
    "answer_error",
    "answer_json",
    "gateway_proof",
    "is_agent_url",
]

LIVENESS_PATH = "/livez"
PROOF_PATH = "/proof"  # ?n=NONCE: the gateway_proof of each of its tokens (no token sent)
_NONCE = re.compile(rb"n=([0-9a-f]{32,128})")
RUN_SCOPE_KEY = "toolscript.run"  # the ASGI scope's key for the id of the run calling
CREDENTIAL_SCOPE_KEY = "toolscript.credential"  # OWNER, AGENT or RUN: which token was shown
OWNER, AGENT, RUN = "owner", "agent", "run"
AGENT_PREFIX = "agent-"

# What the agent's token reaches (method, path after the token): run scripts (register a
# run, its module, its type check, its end, a stopped run's script for --resume; start,
# watch and stop a background run, read a run's progress), read tools, resources, prompts,
# types, search, health and saved scripts, save a script. Not the prompts of runs.
AGENT_ROUTES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (method, re.compile(pattern))
    for method, pattern in (
        ("GET", r"/health"),
        ("GET", r"/servers"),
        ("GET", r"/servers/[^/]+/tools"),
        ("GET", r"/servers/[^/]+/(?:resources|prompts)"),
        ("POST", r"/servers/[^/]+/(?:resources/read|prompts/get)"),
        ("GET", r"/runtime/[^/]+"),
        ("POST", r"/runtime/check"),
        ("GET", r"/search"),
        ("GET", r"/types"),
        ("GET", r"/scripts"),
        ("POST", r"/scripts"),
        ("POST", r"/runs"),
        ("GET", r"/runs/[^/]+/script"),
        ("POST", r"/runs/[^/]+/end"),
        ("POST", r"/runs/start"),  # a background run (``gateway/background.py``)
        ("GET", r"/runs/[^/]+/output"),
        ("POST", r"/runs/[^/]+/stop"),
        ("GET", r"/runs/[^/]+/progress"),
    )
)
RUN_ROUTES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("POST", re.compile(r"/tools/.+")),  # the fast path serves every one: no other route
    ("GET", re.compile(r"/runtime/[^/]+")),
    ("POST", re.compile(r"/progress")),  # the run's own progress, nobody else's
    # what the module's resources and prompts ask (reads and gets are the run's, checked
    # and logged as its calls are); its search and describe are under /runtime/
    ("GET", re.compile(r"/servers/[^/]+/(?:resources|prompts)")),
    ("POST", re.compile(r"/servers/[^/]+/(?:resources/read|prompts/get)")),
)


def agent_refused() -> AccessDeniedError:
    """What the agent's token gets where it does not reach (a prompt, an interactive run)."""
    return AccessDeniedError(
        "the agent's gateway token runs scripts and reads tools; it cannot answer approval "
        "prompts, register an interactive run or reach this path",
        hint="a person approves: `toolscript approve RUN_ID` in their own terminal, or "
        "`toolscript exec` run on a terminal, which asks there",
    )


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]


def agent_token(owner_token: str) -> str:
    """The agent's token of the gateway whose own token is ``owner_token``: whoever holds
    the owner token can compute it, whoever holds only this one cannot go back."""
    mac = hmac.new(owner_token.encode(), b"toolscript agent token", hashlib.sha256).digest()
    return AGENT_PREFIX + base64.urlsafe_b64encode(mac[:24]).decode()


def gateway_proof(token: str, host: str, nonce: str) -> str:
    """What a gateway holding ``token`` answers to a client's ``nonce`` at ``host`` (its
    ``Host``): an HMAC under the token, so the client learns the answerer holds the token it
    has without sending it. The host binds it to this address (no relay from another port),
    and its words keep it apart from every other HMAC of a token (``agent_token``'s)."""
    message = f"toolscript gateway proof\n{host.lower()}\n{nonce}".encode()
    return hmac.new(token.encode(), message, hashlib.sha256).hexdigest()


def agent_url(owner_url: str) -> str:
    """``owner_url`` (``http://host:port/<owner token>``) with the agent's token instead."""
    base, _, token = owner_url.rstrip("/").rpartition("/")
    return f"{base}/{agent_token(token)}"


def is_agent_url(url: str) -> bool:
    """Whether ``url`` carries an agent's token (not the gateway's own)."""
    return url.rstrip("/").rpartition("/")[2].startswith(AGENT_PREFIX)


def _allowed(
    routes: tuple[tuple[str, re.Pattern[str]], ...], method: str, path: str, raw: str
) -> bool:
    """Whether ``path`` is one of ``routes``. A "." or ".." segment of the path as sent
    (``raw``: an encoded "/" stays inside its segment, as a tool's name may hold one) is
    never let stand for another path."""
    if any(unquote(segment) in (".", "..") for segment in raw.split("/")):
        return False
    return any(method == m and pattern.fullmatch(path) for m, pattern in routes)


class TokenGuard:
    """Strips ``/<token>`` from the path of authorised requests, refuses the rest.

    ``agent`` (the owner token's ``agent_token``, when given) and ``runs`` (a run's token
    -> its id) are the narrower tokens of the module's docstring.
    """

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        allowed_hosts: Iterable[str],
        runs: Callable[[str], str | None] | None = None,
        *,
        agent: bool = False,
        cleared: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self.app = app
        self._runs = runs
        self._cleared = cleared
        self._tokens = {token.encode(): OWNER}
        if agent:
            self._tokens[agent_token(token).encode()] = AGENT
        self._allowed_hosts = {host.lower().encode() for host in allowed_hosts}

    def _credential(self, given: str) -> tuple[str, str | None] | None:
        """``(OWNER | AGENT | RUN, run id)`` for the token ``given``, None for none."""
        given_bytes = given.encode("utf-8", "replace")
        for token, kind in self._tokens.items():
            if hmac.compare_digest(given_bytes, token):
                return kind, None
        run = self._runs(given) if self._runs is not None and len(given) > 8 else None
        return (RUN, run) if run is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            # The gateway speaks plain HTTP only; a websocket (or any other scope) would pass
            # no token check, so it is refused before it reaches the app.
            if scope["type"] == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008})
            return
        path: str = scope["path"]
        if path == LIVENESS_PATH:
            await answer_json(send, 200, {"alive": True})
            return
        host = next((value for key, value in scope["headers"] if key == b"host"), b"")
        if host.lower() not in self._allowed_hosts:
            await answer_error(send, ForbiddenHostError())
            return
        if path == PROOF_PATH:
            await self._prove(send, host.decode("latin-1"), scope.get("query_string", b""))
            return
        given = path[1:].split("/", 1)[0]
        prefix = "/" + given
        rest = path[len(prefix) :]
        sent = (scope.get("raw_path") or path.encode()).decode("latin-1").split("?", 1)[0]
        raw_rest = sent[len(prefix) :]
        # A token is matched as sent: every token is URL-safe, so one spelled with escapes
        # (%72...) is refused here rather than let through with a raw path that no longer
        # lines up with the decoded one past it (a tool call then named no tool).
        canonical = path.startswith("/") and sent.startswith(prefix + "/")
        found = self._credential(given) if canonical or sent == prefix else None
        if found is not None and found[0] == AGENT:
            if not _allowed(AGENT_ROUTES, scope["method"], rest, raw_rest):
                await answer_error(send, agent_refused())
                return
        elif found is None or (
            found[0] == RUN and not _allowed(RUN_ROUTES, scope["method"], rest, raw_rest)
        ):
            await answer_error(send, UnauthorizedError())
            return
        kind, run = found
        if run is not None and self._cleared is not None and not await self._cleared(run):
            await answer_error(send, _not_checked())
            return
        inner = dict(scope)
        inner["path"] = rest or "/"
        raw_path = scope.get("raw_path")
        if raw_path:
            inner["raw_path"] = raw_path[len(prefix.encode()) :] or b"/"
        inner[CREDENTIAL_SCOPE_KEY] = kind
        if run is not None:
            inner[RUN_SCOPE_KEY] = run
        await self.app(inner, receive, send)

    async def _prove(self, send: Send, host: str, query: bytes) -> None:
        """``{"proof": [...]}``: ``gateway_proof`` of the query's nonce under each token."""
        nonce = _NONCE.fullmatch(query)
        if nonce is None:
            await answer_json(send, 400, {"error": "bad_request", "message": "n=NONCE (hex)"})
            return
        said = nonce.group(1).decode()
        proofs = [gateway_proof(token.decode(), host, said) for token in self._tokens]
        await answer_json(send, 200, {"proof": proofs})


def _not_checked() -> ScriptCheckError:
    return ScriptCheckError(
        "the script did not pass its type check: nothing it asks is done",
        errors=[],
        hint="its type errors are the run's answer",
    )


async def answer_error(send: Send, error: ToolscriptError) -> None:
    """An error of the tree as its response, the same body every path of the gateway gives."""
    await answer_json(send, error.status_code, error.to_dict())


async def answer_json(send: Send, status: int, body: dict[str, Any]) -> None:
    """A whole JSON response straight from ASGI (for paths that skip the framework)."""
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
