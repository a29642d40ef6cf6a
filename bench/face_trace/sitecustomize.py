"""Timestamps along an MCP face execute's path, for `bench/face_trace.py`.

On `PYTHONPATH` with `FC_TRACE_FILE` set, every Python process of the face (the face, its
gateway) wraps the functions named in `TARGETS` as their modules are imported, and appends
`time pid thread event` lines to that file; the spare's boot script is given timestamps
the script returns (`globalThis.__fc`). Nothing of toolscript changes; without the
variable this file does nothing.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import inspect
import os
import sys
import threading
import time
from typing import Any

TARGETS = {
    "toolscript.mcpface.backend": [
        "Backend.execute",
        "Backend._run",
        "Backend._take_spare",
        "Backend._spawn_spare",
        "module_hash",
        "module_file",
        "start_run",
        "end_run",
        "run_toolscript",
    ],
    "toolscript.execution.sandbox": [
        "_warm_check",
        "_run_in_spare",
        "_supervise",
        "_write_script",
        "_wait_within",
    ],
    "toolscript.execution.spare": ["Spare.__init__", "Spare.hand_over", "Spare.close"],
    "toolscript.execution.runhandle": ["ProgressWatcher.stop"],
    "toolscript.gateway.runbook": [
        "RunBook.register",
        "RunBook.end",
        "RunBook.call",
        "RunBook.flush",
    ],
    "toolscript.store.runlog": ["RunLog.write", "RunLog._prune", "RunLog._open"],
    "toolscript.gateway.local": [
        "LocalGateway.module_hash",
        "LocalGateway.register",
        "LocalGateway.end",
    ],
    "toolscript.gateway.checker": ["WarmChecker.check"],
    "toolscript.gateway.toolcall": ["call_tool_bytes"],
    "toolscript.upstream.server": ["UpstreamServer.call_tool"],
    "toolscript.gateway.app": ["ToolCallFastPath.__call__"],
}
STAMP = "(globalThis as any).__fc{key} = performance.timeOrigin + performance.now();\n"


def _install(path: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    pid = os.getpid()

    def log(event: str) -> None:
        thread = threading.current_thread().name[:12].replace(" ", "_")
        os.write(descriptor, f"{time.time():.6f} {pid} {thread} {event}\n".encode())

    def wrap(name: str, function: Any) -> Any:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def wrapped_async(*args: Any, **options: Any) -> Any:
                log(f"{name} >")
                try:
                    return await function(*args, **options)
                finally:
                    log(f"{name} <")

            return wrapped_async

        @functools.wraps(function)
        def wrapped(*args: Any, **options: Any) -> Any:
            log(f"{name} >")
            try:
                return function(*args, **options)
            finally:
                log(f"{name} <")

        return wrapped

    def http(original: Any) -> Any:
        async def call(self: Any, scope: Any, receive: Any, send: Any) -> Any:
            path = scope.get("path", "")[:60]
            log(f"http {scope.get('method', '')} {path} >")
            try:
                return await original(self, scope, receive, send)
            finally:
                log(f"http {path} <")

        return call

    def stamped_boot(boot: str) -> str:
        boot = STAMP.format(key=" = {} as any; (globalThis as any).__fc.main") + boot
        loaded = 'await import("toolscript");\n'
        boot = boot.replace(loaded, loaded + "    " + STAMP.format(key=".mod"), 1)
        boot = boot.replace("const text =", STAMP.format(key=".stdin") + "const text =", 1)
        imported = "  await import(script);"
        return boot.replace(imported, "  " + STAMP.format(key=".imp") + imported, 1)

    def patch(module: Any) -> None:
        if module.__name__ == "toolscript.execution.spare":
            module.BOOT = stamped_boot(module.BOOT)
        for target in TARGETS.get(module.__name__, []):
            owner, _, attribute = target.rpartition(".")
            holder = getattr(module, owner) if owner else module
            function = getattr(holder, attribute, None)
            if function is None:
                continue
            if target == "ToolCallFastPath.__call__":
                setattr(holder, attribute, http(function))
            else:
                setattr(holder, attribute, wrap(target, function))

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname not in TARGETS:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(fullname)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            execute = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                execute(module)
                patch(module)

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, Finder())


if os.environ.get("FC_TRACE_FILE"):
    _install(os.environ["FC_TRACE_FILE"])
