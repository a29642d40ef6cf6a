"""The MCP face's own gateway reached by calls on its event loop, not over HTTP.

The face and the gateway it serves in a thread (``inprocess.py``) share one process: what
the face asks of each run (the module's hash, the run's registration, a new script's check
and the run's end) is the routes' own work (``Gateway.register_run``,
``Gateway.check_script``, ``RunBook.end``) run on the gateway's loop from the face's
thread, without a connection, a request to parse and an answer to encode
(measured: about 1 ms of the face's CPU an execute), and its progress reports' long poll
(``RunBook.wait_progress``). The answers are the routes': a refusal raises the error the
route's answer stands for (``GatewayResponseError``); a gateway gone (its loop closed) is
``None``, as nothing listening is over HTTP, so the face looks for a gateway again.
Everything else (the script's tool calls, prompts) stays HTTP.

Standard library only at import: the face imports it before its gateway's imports.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from toolscript.gateway.core import Gateway

__all__ = ["LocalGateway"]

log = logging.getLogger("toolscript.gateway")

T = TypeVar("T")
WAIT = 30.0  # seconds, as the face's HTTP requests to its gateway
LOOK = 0.5  # seconds between looks at whether the loop still runs, while waiting


class LocalGateway:
    """A gateway served by this process, asked through its loop (see the module's docstring)."""

    def __init__(self, gateway: Gateway, loop: asyncio.AbstractEventLoop) -> None:
        self.gateway = gateway
        self.loop = loop

    def _call(self, work: Coroutine[Any, Any, T], wait: float = WAIT) -> T | None:
        """``work`` run on the gateway's loop (``wait`` seconds at most); None when that loop
        is gone (or going)."""
        if self.loop.is_closed() or self.gateway.runs.closing:
            work.close()
            return None
        try:
            future = asyncio.run_coroutine_threadsafe(work, self.loop)
        except RuntimeError:  # closed meanwhile
            work.close()
            return None
        deadline = time.monotonic() + wait
        while True:
            try:
                return future.result(max(0.0, min(LOOK, deadline - time.monotonic())))
            except concurrent.futures.CancelledError:  # its loop stopped with the work pending
                return None
            except TimeoutError:
                if not self.loop.is_running():  # stopped before it took the work
                    future.cancel()
                    return None
                if time.monotonic() >= deadline:
                    break
        future.cancel()
        from toolscript.errors import GatewayTimeoutError

        raise GatewayTimeoutError(
            f"the face's gateway did not answer within {wait:g} s",
            hint="check the face's log (the MCP client's) for what its gateway is doing",
        )

    def tell_if_first_build_waits(self, told: Callable[[], object]) -> None:
        """Call ``told`` when the first build waits for another build's lock (a standalone
        ``doit`` in the project, up to ``buildlock.BUILD_LOCK_WAIT``); return once it did,
        or once that build is done: the face's first run says why it waits."""
        gateway = self.gateway
        # polled: the first build's end (an event of the gateway's loop) is seen within 10 ms,
        # as the face's first run waits for it next (0.1 s added up to 0.1 s to that run)
        while not gateway.first_build.is_set() and not self.loop.is_closed():
            if gateway.build_waits.wait(0.01):
                told()
                return

    def servers_up(self) -> bool:
        """Whether every configured server is connected or disabled, their states read from
        this thread (nothing awaited): a run then has no server to wait for, and the face
        asks nothing more (``GET /servers`` was a request of its own gateway an execute).
        False when unsure (the servers changed as they were read)."""
        try:
            return all(
                str(upstream.state) in ("connected", "disabled")
                for upstream in list(self.gateway.upstreams.values())
            )
        except RuntimeError:  # a reload changed the servers while they were listed
            return False

    def module_hash(self) -> str | None:
        """What ``GET /runtime/hash`` answers (after the first build, as that route); None
        when the gateway is gone."""
        if self.loop.is_closed() or self.gateway.runs.closing:
            return None
        if self.gateway.first_build.is_set() and self.gateway.module_is_current():
            return str(self.gateway.artifacts.module_hash)
        from toolscript.pipeline.buildlock import BUILD_LOCK_WAIT

        # as long as that build may wait for a `doit` (then builds), not the usual 30 s
        return self._call(self._hash_after_build(), BUILD_LOCK_WAIT + 60)

    async def _hash_after_build(self) -> str:
        await self.gateway.first_build.wait()
        return await self.gateway.module_hash_built()

    def register(
        self,
        code: str,
        *,
        script_hash: str,
        origin: str,
        script_name: tuple[str, str],
        interactive: bool,
    ) -> dict[str, Any] | None:
        """What ``POST /runs`` answers the owner (``{"id", "token", "resumed_from"}``); None
        when the gateway is gone. A refusal raises as the route's answer would."""
        return self._call(
            self._answered(
                lambda: self._register(code, script_hash, origin, script_name, interactive)
            )
        )

    async def _register(
        self,
        code: str,
        script_hash: str,
        origin: str,
        script_name: tuple[str, str],
        interactive: bool,
    ) -> dict[str, Any]:
        await self.gateway.first_build.wait()  # as every route
        run = await self.gateway.register_run(
            script_hash=script_hash,
            origin=origin,
            interactive=interactive,
            script=code,
            script_name=script_name,
            client_pid=os.getpid(),
        )
        return {"id": run.id, "token": run.token, "resumed_from": run.resumed_from or None}

    def check(self, request: dict[str, str], wait: float) -> dict[str, str] | None:
        """What ``POST /runtime/check`` answers for ``request`` (its body: ``code``,
        ``path``, ``module``, ``hash``), within ``wait`` seconds; None when the gateway is
        gone."""
        return self._call(self._answered(lambda: self._check(request)), wait)

    async def _check(self, request: dict[str, str]) -> dict[str, str]:
        await self.gateway.first_build.wait()
        return await self.gateway.check_script(
            request["code"], request["path"], request["module"], request["hash"]
        )

    def hold(self, run_id: str) -> bool:
        """Whether ``run_id``'s requests are now held until ``settle`` (``RunBook.hold``): only
        while the warm checker is ready, so a check is a matter of milliseconds."""
        return bool(self._call(self._hold(run_id)))

    async def _hold(self, run_id: str) -> bool:
        checker = self.gateway.checker
        if checker is None or checker.state != "ready" or not self.gateway.first_build.is_set():
            return False
        return self.gateway.runs.hold(run_id)

    def settle(self, run_id: str, passed: bool, *, reissue: bool = False) -> str | None:
        """The check's verdict for a held run (``RunBook.settle``): with ``reissue``, the run's
        fresh token; None otherwise or when the gateway is gone."""
        return self._call(self._settle(run_id, passed, reissue))

    async def _settle(self, run_id: str, passed: bool, reissue: bool) -> str | None:
        return self.gateway.runs.settle(run_id, passed, reissue=reissue)

    def end(self, run_id: str, exit_code: int) -> dict[str, Any] | None:
        """What ``POST /runs/{id}/end`` answers that the face reads (the run's status and the
        error it stopped with), once the run log holds the run; None when the gateway is
        gone or the run unknown (as ``runhandle.end_run``)."""
        from toolscript.errors import GatewayError

        try:
            return self._call(self._answered(lambda: self._end(run_id, exit_code)))
        except GatewayError:
            return None

    async def _end(self, run_id: str, exit_code: int) -> dict[str, Any]:
        await self.gateway.first_build.wait()
        run = await self.gateway.runs.end(run_id, exit_code)
        return run.ended_answer()  # (not the calls' trace: the face reads none)

    def progress(self, run_id: str, after: int, wait: float) -> dict[str, Any] | None:
        """What ``GET /runs/{id}/progress?after=&wait=`` answers (``runhandle.ProgressWatcher``'s
        ``ask``); None when the gateway is gone."""
        return self._call(
            self._answered(lambda: self._progress(run_id, max(0, after), max(0.0, wait))),
            wait + 10,
        )

    async def _progress(self, run_id: str, after: int, wait: float) -> dict[str, Any]:
        await self.gateway.first_build.wait()
        return await self.gateway.runs.wait_progress(run_id, after, wait)

    @staticmethod
    async def _answered(work: Callable[[], Awaitable[T]]) -> T:
        """``work()``; an error raised as the error its HTTP answer would stand for."""
        from toolscript.errors import GatewayResponseError, InternalError, ToolscriptError

        try:
            return await work()
        except Exception as exc:
            error = exc if isinstance(exc, ToolscriptError) else InternalError.of(exc)
            if error is not exc:  # as the app's handler of anything unexpected
                log.exception("gateway: the face's call failed unexpectedly")
            raise GatewayResponseError.from_response(
                error.status_code, json.dumps(error.to_dict()).encode()
            ) from exc
