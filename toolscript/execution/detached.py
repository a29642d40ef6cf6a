"""The runner of one background run: ``python -m toolscript.execution.detached``.

The gateway starts it (``gateway/background.py``) with its stdout and stderr on the run's
files and the run on stdin as one JSON line; it runs the sandbox as exec does, with the
same limits, and exits with the script's exit code. Stdin stays open while the gateway
lives: when it closes, however the gateway went, the runner stops the sandbox and leaves.
SIGTERM (``runs stop``, the gateway shutting down) stops the sandbox too (``Lifeline``);
SIGKILL leaves it to the lifeline's watchdog.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

__all__ = ["main", "run_background"]


def _read_spec() -> dict[str, Any]:
    """The run, the first line of stdin (read from the descriptor: the thread that then
    watches stdin must hold no lock of a buffered reader when the interpreter exits)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(0, 65536)
        if not chunk:
            break
        data += chunk
    spec: dict[str, Any] = json.loads(data)
    return spec


def _leave_when_gateway_goes() -> None:
    """Reads stdin to its end (the gateway closed it or died), then stops this run."""
    while os.read(0, 4096):
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def run_background(spec: dict[str, Any]) -> int:
    """Run the script ``spec`` describes; its exit code."""
    from toolscript.errors import GatewayUnreachableError
    from toolscript.execution.lifeline import Lifeline
    from toolscript.execution.locate import current_module, module_hash
    from toolscript.execution.runhandle import ProgressWatcher, RunHandle, show_within
    from toolscript.execution.sandbox import Limits, Script, policy_denial, run_toolscript

    url = str(spec["gateway"])
    timeout, memory_mb, max_output = spec["limits"]
    with Lifeline() as lifeline:
        threading.Thread(target=_leave_when_gateway_goes, daemon=True).start()
        digest = module_hash(url)
        if digest is None:
            raise GatewayUnreachableError("the gateway stopped answering before the run started")
        digest, module = current_module(url, digest)
        handle = RunHandle(url, str(spec["run"]), str(spec["script_url"]), None)
        # its lines go to the run's stderr file: bounded as the script's own output is
        progress = ProgressWatcher(handle, show_within(int(max_output)))
        progress.start()
        try:
            return run_toolscript(
                Script(str(spec["code"]), str(spec["display_name"]), str(spec["file_name"])),
                url,
                digest,
                module=module,
                on_start=lifeline.watch,
                check=bool(spec["check"]),
                limits=Limits(
                    timeout=float(timeout), memory_mb=int(memory_mb), max_output=int(max_output)
                ),
                warm_check=True,
                script_url=str(spec["script_url"]),
                spill=Path(str(spec["spill"])),
                denial=policy_denial(str(spec["config"])) if spec.get("config") else None,
            )
        finally:
            progress.stop(wait=0.5)


def main() -> None:
    from toolscript.errors import ToolscriptError

    spec = _read_spec()
    try:
        code = run_background(spec)
    except ToolscriptError as exc:
        sys.stderr.write(f"toolscript: error: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"hint: {exc.hint}\n")
        code = exc.exit_code
    sys.stderr.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
