"""The plugin's hook asks the person before a command that holds a terminal the agent can
type into, or types into the person's own: ``exec`` asks its approvals on a terminal, and a
``y`` typed there by the agent (keys sent to the person's window, or an ``exec`` run over
``ssh -t`` to this machine) approves the agent's own call."""

from __future__ import annotations

import pytest

from toolscript.cli.hooks import approval_reason

ASKED = [
    "ssh -tt localhost toolscript exec job.ts",
    "ssh -qt me@localhost toolscript exec job.ts",
    "ssh -o RequestTTY=force localhost toolscript exec job.ts",
    "zellij run -- toolscript exec job.ts",
    "dtach -n /tmp/s toolscript exec job.ts",
    "abduco -n s toolscript exec job.ts",
    "xdotool type y",
    "xdotool key Return",
    "ydotool type y",
    "wtype y",
    "kitty @ send-text --match title:zsh y",
    "wezterm cli send-text y",
    "zellij action write-chars y",
    "perl -MIO::Pty -e 'spawn()'",
    "python3 -c 'import pexpect; pexpect.spawn(\"toolscript exec job.ts\")'",
]
PASSED = [
    "ssh host uptime",
    "ssh -p 22 host ls -t",
    "ssh -o StrictHostKeyChecking=no host ls",
    "ssh -oStrictHostKeyChecking=no -l tom host ls",
    "ssh -vT git@github.com",
    "ls -t",
    "tar -tf release.tar",
]


@pytest.mark.parametrize("command", ASKED)
def test_a_terminal_the_agent_types_into_is_asked(command: str) -> None:
    assert approval_reason(command) is not None, command


@pytest.mark.parametrize("command", PASSED)
def test_everyday_ssh_and_options_pass_unasked(command: str) -> None:
    assert approval_reason(command) is None, command
