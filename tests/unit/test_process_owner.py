"""Following the process a gateway serves (a session's Claude Code): found past the shells
between it and a hook, and followed by its start time as well as its number."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from toolscript.cli.gateway import _stop_with
from toolscript.errors import UsageError
from toolscript.plumbing.processes import (
    _base_name,
    process_identity,
    read_identity,
    when_gone,
)


@pytest.mark.parametrize(
    ("name", "base"),
    [("bash", "bash"), ("-zsh", "zsh"), ("/bin/sh", "sh"), ("bash.exe", "bash"), ("node", "node")],
)
def test_a_shell_is_known_by_its_program_s_base_name(name: str, base: str) -> None:
    assert _base_name(name) == base


def test_the_owner_is_the_nearest_ancestor_that_is_not_a_shell() -> None:
    """This test's process runs a shell that runs a shell that asks: the answer is this one."""
    asked = f"{sys.executable} -c 'from toolscript.plumbing.processes import *; print(first_ancestor_not_a_shell())'"
    found = subprocess.run(
        ["bash", "-c", f'sh -c "{asked}"; true'], capture_output=True, text=True, timeout=30
    )
    assert found.stdout.strip() == process_identity(os.getpid()), found.stderr


def test_a_launcher_that_waits_on_toolscript_is_not_the_owner() -> None:
    """A wrapper's ``uv run ... toolscript`` (uv waits on its child, and ends with the hook):
    following uv would stop the session's gateway as soon as the hook returned."""
    import shutil

    uv = shutil.which("uv", path=os.path.dirname(sys.executable)) or shutil.which("uv")
    if uv is None:
        pytest.skip("no uv here")
    asked = "from toolscript.plumbing.processes import *; print(first_ancestor_not_a_shell())"
    found = subprocess.run(
        [
            "bash",
            "-c",
            f'{uv} run --no-project --no-config --offline --quiet --python "{sys.executable}" '
            f'python -c "{asked}"; true',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.stdout.strip() == process_identity(os.getpid()), found.stderr


def test_when_gone_calls_once_the_process_ended_and_not_before() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    ended = threading.Event()
    when_gone(process_identity(child.pid), ended.set, every=0.02)
    assert not ended.wait(0.2)
    assert child.stdin is not None
    child.stdin.close()
    child.wait()
    assert ended.wait(5)


def test_a_pid_reused_by_another_process_is_not_the_owner() -> None:
    """The same number with another start time names a process that has ended."""
    ended = threading.Event()
    pid = os.getpid()
    when_gone(f"{pid}:1.00", ended.set, every=0.02)
    assert ended.wait(5)


@pytest.mark.parametrize("identity", ["", "123", "abc:1.0", "12:x", "-1:2.0"])
def test_stop_with_takes_a_process_identity(identity: str) -> None:
    with pytest.raises(UsageError, match="PID:START_TIME"):
        _stop_with(identity)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's start times move")
def test_the_owner_is_still_followed_after_the_system_clock_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On Linux a start time in seconds since the epoch is the boot time (which follows the
    system clock: an NTP step, a VM's clock set again) plus the start since boot: a clock
    set while Claude Code runs must not stop its session's gateway."""
    import psutil
    import psutil._pslinux as linux

    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    ended = threading.Event()
    identity = process_identity(child.pid)
    when_gone(identity, ended.set, every=0.02)
    stepped = psutil.boot_time() + 7  # the clock set 7 s forward
    monkeypatch.setattr(linux, "boot_time", lambda: stepped)
    assert process_identity(child.pid) != identity  # (the step is seen)
    assert not ended.wait(0.3)
    assert child.stdin is not None
    child.stdin.close()
    child.wait()
    assert ended.wait(5)


@pytest.mark.parametrize(
    ("identity", "named"),
    [
        ("123:1795725620.69", (123, 1795725620.69)),
        ("123:", (123, None)),  # the system did not say when it started
        ("123", (123, None)),
        ("", None),
        ("abc:1.0", None),
        ("12:x", None),
        ("-1:2.0", None),
        ("0:2.0", None),
        ("12:1.2.3", None),
        ("\u00b2:1.0", None),
    ],
)
def test_a_process_identity_is_read_in_one_place(
    identity: str, named: tuple[int, float | None] | None
) -> None:
    """``--stop-with``, a run's client, a hook's owner: every ``pid:start`` read alike."""
    assert read_identity(identity) == named
