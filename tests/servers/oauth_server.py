"""An MCP server behind OAuth 2.1, built on the SDK's server auth, for the sign-in tests.

One process is the authorization server (metadata, dynamic client registration unless
``--no-registration``, an authorize endpoint that approves at once, a token endpoint with
refresh tokens that rotate) and the protected MCP server (``whoami``, ``echo``; ``my_token``
and ``fail_with_token`` echo the caller's bearer token back, in a result and in an error)
over streamable HTTP (``/mcp``) or SSE (``/sse``). Access tokens live ``--token-lifetime``
seconds, so tests see them expire. ``POST /admin/revoke`` forgets every token, as a user
revoking the app's access would. Counters at ``GET /admin/stats``.

    python oauth_server.py --port N [--transport http|sse] [--token-lifetime S]
        [--no-registration --client-id ID --client-secret SECRET --redirect-uri URI]
"""

from __future__ import annotations

import argparse
import secrets
import time
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse

SCOPE = "mcp"


class AutoApprovingProvider:
    """Authorization server state in memory; every authorization request is approved."""

    def __init__(self, token_lifetime: int) -> None:
        self.token_lifetime = token_lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {"registrations": 0, "authorizations": 0, "refreshes": 0, "calls": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.stats["registrations"] += 1

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(
            code=f"code_{secrets.token_hex(16)}",
            client_id=client.client_id,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        self.stats["authorizations"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: RefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotation: a refresh token works once
        self.stats["refreshes"] += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, None)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = f"access_{secrets.token_hex(16)}", f"refresh_{secrets.token_hex(16)}"
        expires = int(time.time()) + self.token_lifetime
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )


def build(args: argparse.Namespace) -> Any:
    base = f"http://127.0.0.1:{args.port}"
    provider = AutoApprovingProvider(args.token_lifetime)
    if args.client_id:
        provider.clients[args.client_id] = OAuthClientInformationFull(
            client_id=args.client_id,
            client_secret=args.client_secret,
            redirect_uris=[AnyUrl(args.redirect_uri)],
            token_endpoint_auth_method="client_secret_post" if args.client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
            scope=SCOPE,
        )
    endpoint = "/mcp" if args.transport == "http" else "/sse"
    server = MCPServer(
        "oauth-fixture",
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(base),
            resource_server_url=AnyHttpUrl(base + endpoint),
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=not args.no_registration, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
            revocation_options=RevocationOptions(enabled=True),
            validate_token_resource=False,
        ),
        auth_server_provider=provider,
    )

    @server.tool(description="Who the server thinks is calling: the OAuth client's id.")
    def whoami() -> dict[str, Any]:
        token = get_access_token()
        provider.stats["calls"] += 1
        return {"client_id": token.client_id if token else None}

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        provider.stats["calls"] += 1
        return text

    @server.tool(description="The bearer token the call came with, as a careless server would.")
    def my_token() -> str:
        token = get_access_token()
        return token.token if token else ""

    @server.tool(description="Fails, quoting the bearer token the call came with.")
    def fail_with_token() -> str:
        token = get_access_token()
        raise ToolError(f"refused: Authorization: Bearer {token.token if token else ''}")

    @server.custom_route("/admin/revoke", methods=["POST"])
    async def revoke(request: Request) -> JSONResponse:
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": True})

    @server.custom_route("/admin/stats", methods=["GET"])
    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(provider.stats)

    return server.streamable_http_app() if args.transport == "http" else server.sse_app()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--transport", choices=("http", "sse"), default="http")
    parser.add_argument("--token-lifetime", type=int, default=3600)
    parser.add_argument("--no-registration", action="store_true")
    parser.add_argument("--client-id")
    parser.add_argument("--client-secret")
    parser.add_argument("--redirect-uri", help="the pre-registered client's redirect URI")
    args = parser.parse_args()
    uvicorn.run(build(args), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
