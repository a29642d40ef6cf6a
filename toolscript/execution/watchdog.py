"""Stops what an `exec` started when the exec process dies without stopping it itself.

The watchdog is a POSIX shell (``SCRIPT``, run by ``/bin/sh``: a few MB where a Python
holds ten) with a pipe on stdin whose only write end the exec process holds. exec writes
``g<pgid>`` for a process group to kill (the Deno sandbox) and ``p<pid>`` for a process to
terminate (an ephemeral gateway, which stops its servers), ``fg<pgid>``/``fp<pid>`` when
one ended by itself, then ``done`` when it finished normally. End of input without
``done`` means exec died, even by SIGKILL, which no handler sees: every group named is
killed, every process named is sent SIGTERM and, still there after 20 s, SIGKILL. Works
wherever pipes and ``/bin/sh`` do (Linux, macOS).

The shell never evaluates a word it reads: a word is compared with patterns, and only a
number (no sign, no leading zero, not 0 or 1, which ``kill`` reads as "my group" and
"every process") reaches ``kill``. ``python -I -S watchdog.py`` runs the same shell.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SCRIPT", "command"]

SCRIPT = r"""
number() {
  case $1 in ''|*[!0-9]*|0*|1) return 1 ;; esac
}
without() {
  gone=$1 kept=
  shift
  for n do
    if [ "$n" = "$gone" ]; then gone=; else kept="$kept $n"; fi
  done
}
groups= processes=
while read -r word || [ -n "$word" ]; do
  case $word in
    done) exit 0 ;;
    g*) number "${word#g}" && groups="$groups ${word#g}" ;;
    p*) number "${word#p}" && processes="$processes ${word#p}" ;;
    fg*) number "${word#fg}" && { without "${word#fg}" $groups; groups=$kept; } ;;
    fp*) number "${word#fp}" && { without "${word#fp}" $processes; processes=$kept; } ;;
  esac
done
for n in $groups; do kill -s KILL -- "-$n" 2>/dev/null; done
for n in $processes; do kill -s TERM "$n" 2>/dev/null; done
tries=200
while [ -n "$processes" ] && [ "$tries" -gt 0 ]; do
  sleep 0.1 2>/dev/null || sleep 1
  tries=$((tries - 1))
  alive=
  for n in $processes; do kill -s 0 "$n" 2>/dev/null && alive="$alive $n"; done
  processes=$alive
done
for n in $processes; do kill -s KILL "$n" 2>/dev/null; done
exit 0
"""


def command() -> list[str]:
    """The watchdog's argv: the shell, its script, and this file as its ``$0`` (what
    ``ps`` shows after the script)."""
    return ["/bin/sh", "-c", SCRIPT, str(Path(__file__).resolve())]


if __name__ == "__main__":
    argv = command()
    os.execv(argv[0], argv)
