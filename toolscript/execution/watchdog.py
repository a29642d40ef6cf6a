"""Stops what an `exec` started when the exec process dies without stopping it itself.

The watchdog is a POSIX shell script (``watchdog.sh`` beside this file, run by
``/bin/sh``: a few MB where a Python holds ten; ``ps`` shows ``/bin/sh …/watchdog.sh``) with a pipe on stdin whose only write end the exec process holds. exec writes
``g<pgid>`` for a process group to kill (the Deno sandbox), ``s<pgid>`` for a stdio server's
group (the MCP face's own gateway's servers), ``p<pid>`` for a process to terminate (an
ephemeral gateway, which stops its servers), each perhaps with ``@<start>`` (when the
process started, in whole seconds after the watchdog did; ``-`` before: what the face
tethered), ``fg<pgid>``/``fs<pgid>``/``fp<pid>`` when one ended by itself, then ``done``
when it finished normally. End of input without ``done``
means exec died, even by SIGKILL, which no handler sees: every group named is killed,
every server's group is given a second to leave (its stdin closed with exec), then
SIGTERM and half a second, then SIGKILL (the spec's order), and every process named is
sent SIGTERM and, still there after 20 s, SIGKILL. A pid told with its start is signalled
only while its process (a group's leader) started then, give or take 3 s, by the ages
``ps -o etime=`` gives it and the watchdog, read together by one ``ps`` per pid (a
difference of ages, which no setting of the system clock moves): one that ended by itself may have given its number to another since.
Where ``ps`` does not say, by its number alone, as before. Works wherever pipes and
``/bin/sh`` do (Linux, macOS).

The shell never evaluates a word it reads: a word is compared with patterns, and only a
number (no sign, no leading zero, not 0 or 1, which ``kill`` reads as "my group" and
"every process", at most 9 digits, which no shell's ``kill`` wraps round to those) reaches
``kill``. ``python -I -S watchdog.py`` runs the same shell.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SCRIPT", "command"]

SCRIPT = Path(__file__).with_name("watchdog.sh")  # shipped with the package


def command() -> list[str]:
    """The watchdog's argv: the shell and its script."""
    return ["/bin/sh", str(SCRIPT.resolve())]


if __name__ == "__main__":
    argv = command()
    os.execv(argv[0], argv)
