"""Stops what an `exec` started when the exec process dies without stopping it itself.

Run as ``python -I -S watchdog.py`` (stdlib only, no package import) with a pipe on
stdin whose only write end the exec process holds. exec writes ``g<pgid>`` for a
process group to kill (the Deno sandbox) and ``p<pid>`` for a process to terminate
(an ephemeral gateway, which stops its servers), ``fg<pgid>``/``fp<pid>`` when one
ended by itself, then ``done`` when it finished normally. End of input without
``done`` means exec died, even by SIGKILL, which no handler sees: everything named
is stopped. Works wherever pipes do (Linux, macOS).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable


def main() -> None:
    groups: list[int] = []
    processes: list[int] = []
    for line in sys.stdin:
        word = line.strip()
        if word == "done":
            return
        if word[:1] == "g" and word[1:].isdigit():
            groups.append(int(word[1:]))
        elif word[:1] == "p" and word[1:].isdigit():
            processes.append(int(word[1:]))
        elif word[:2] in ("fg", "fp") and word[2:].isdigit():
            ended = groups if word[1] == "g" else processes
            with contextlib.suppress(ValueError):
                ended.remove(int(word[2:]))
    for group in groups:
        _quietly(os.killpg, group, signal.SIGKILL)
    for pid in processes:
        _quietly(os.kill, pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while processes and time.monotonic() < deadline:
        processes = [pid for pid in processes if _exists(pid)]
        time.sleep(0.1)
    for pid in processes:
        _quietly(os.kill, pid, signal.SIGKILL)


def _quietly(kill: Callable[[int, int], None], pid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        kill(pid, sig)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    main()
