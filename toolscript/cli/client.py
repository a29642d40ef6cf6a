"""The CLI's side of the gateway: find it, and ask it things over HTTP."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from toolscript.config import Config
from toolscript.errors import GatewayResponseError, GatewayUnreachableError
from toolscript.gateway.state import ready_gateway_state

if TYPE_CHECKING:
    import httpx

__all__ = ["GatewayClient", "find_gateway_url", "gateway_client", "public_url"]

URL_VARIABLE = "TOOLSCRIPT_GATEWAY_URL"
_START_HINT = "check `toolscript gateway status`, or start one with `toolscript gateway start`"


def find_gateway_url(config: Config) -> str | None:
    """``TOOLSCRIPT_GATEWAY_URL``, else the running gateway recorded for this project."""
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url:
        return url.rstrip("/")
    state = ready_gateway_state(config.cache_dir())
    return str(state["url"]).rstrip("/") if state else None


@contextmanager
def gateway_client(
    config: Config, cache: str | None = None, *, timeout: float = 30.0
) -> Iterator[GatewayClient]:
    """A client of the project's gateway (or TOOLSCRIPT_GATEWAY_URL's); when none runs, of
    an ephemeral one started for this command and stopped after it, as `exec` does."""
    url = find_gateway_url(config)
    if url:
        with GatewayClient(url, timeout=timeout) as client:
            yield client
        return
    from toolscript.execution.lifeline import Lifeline
    from toolscript.execution.locate import gateway_for_run

    sys.stderr.write(
        "note: no gateway runs for this project: one is started for this command "
        "(`toolscript gateway start &` keeps one running)\n"
    )
    sys.stderr.flush()
    path = str(config.path) if config.path else None
    with (
        Lifeline() as lifeline,
        gateway_for_run(
            path, str(config.cache_dir(cache)), on_start=lifeline.watch, search=True
        ) as found,
        GatewayClient(found[0], timeout=timeout) as client,
    ):
        yield client


def public_url(url: str) -> str:
    """The URL with its secret token hidden, for messages."""
    return re.sub(r"^(https?://[^/]+)/.+$", r"\1/<token>", url)


class GatewayClient:
    """JSON over HTTP to one gateway; failures become toolscript errors."""

    def __init__(self, url: str | None, *, timeout: float = 30.0) -> None:
        if not url:
            raise GatewayUnreachableError(
                f"no gateway is running for this project and {URL_VARIABLE} is not set",
                hint="start one with `toolscript gateway start` (or let the Claude Code plugin do it)",
            )
        import httpx  # lazily: the exec path does not need it

        self.url = url.rstrip("/")
        self._http = httpx.Client(timeout=timeout)

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        import httpx

        try:
            response = self._http.request(method, self.url + path, **kwargs)
        except httpx.TransportError as exc:
            raise GatewayUnreachableError(
                f"the gateway at {public_url(self.url)} does not answer ({type(exc).__name__})",
                hint=_START_HINT,
            ) from exc
        if response.status_code >= 400:
            raise GatewayResponseError.from_response(response.status_code, response.content)
        return response

    def get_json(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params or None).json()
