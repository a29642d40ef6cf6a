"""Processes tethered to this one (``plumbing/processes.py``): what the MCP face's own
gateway starts, told to the face's watchdog (``Lifeline``), and stopped before it exits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from toolscript.plumbing import processes
from toolscript.plumbing.processes import (
    Tethered,
    stop_tethered,
    tether,
    tethered,
    untether,
    watch_tethered,
)


def test_a_watcher_hears_of_the_processes_tethered_before_and_after_it_came() -> None:
    heard: list[tuple[Tethered, bool]] = []
    tether(999_991, group=True, server=True)
    try:
        unwatch = watch_tethered(lambda process, started: heard.append((process, started)))
        tether(999_992)
        untether(999_991, group=True)
        untether(999_991, group=True)  # (once is enough: nothing more is told)
        unwatch()
        tether(999_993)
    finally:
        for pid, group in ((999_991, True), (999_992, False), (999_993, False)):
            untether(pid, group=group)
    assert heard == [
        (Tethered(999_991, group=True, server=True), True),
        (Tethered(999_992), True),
        (Tethered(999_991, group=True, server=True), False),
    ]
    assert tethered() == []


def _child(on_term: str, tmp_path: Path, name: str) -> subprocess.Popen[bytes]:
    """A Python child in a group of its own that does ``on_term`` on SIGTERM ("ignore", or
    "note": write a file named ``name`` and exit), once it said it is ready."""
    handler = (
        "signal.SIG_IGN"
        if on_term == "ignore"
        else f"lambda *_: (open({str(tmp_path / name)!r}, 'w').close(), sys.exit(0))"
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import signal, sys, time; signal.signal(signal.SIGTERM, {handler}); "
            "print(flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert child.stdout is not None
    child.stdout.readline()
    return child


def test_what_is_still_tethered_is_stopped_and_reaped_before_an_exit(tmp_path: Path) -> None:
    """A server is sent SIGTERM, anything else SIGKILL; one ignoring SIGTERM is killed after
    the grace; each child is reaped (no zombie), and nothing is tethered after."""
    server = _child("note", tmp_path, "server-got-term")
    stubborn = _child("ignore", tmp_path, "")
    other = _child("note", tmp_path, "other-got-term")
    everyone = [server, stubborn, other]
    try:
        tether(server.pid, group=True, server=True)
        tether(stubborn.pid, group=True, server=True)
        tether(other.pid)
        stop_tethered(grace=0.2)
        assert not any(processes.pid_exists(each.pid) for each in everyone)  # reaped
        assert tethered() == []
    finally:
        for each in everyone:
            untether(each.pid, group=each is not other)
            each.kill()
            each.wait()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["server-got-term"]


def test_a_face_whose_watchdog_was_killed_still_starts_what_it_tethers() -> None:
    """``tether`` runs right after a server's spawn: an error out of it (the watchdog's pipe
    broken) would fail that start and leave the process spawned running."""
    import os
    import signal

    from toolscript.execution.lifeline import Lifeline

    lifeline = Lifeline(catch_signals=False)
    lifeline.follow_tethered()
    try:
        watchdog = lifeline._watchdog
        assert watchdog is not None
        os.kill(watchdog.pid, signal.SIGKILL)
        watchdog.wait()
        tether(999_994, group=True, server=True)
        assert Tethered(999_994, group=True, server=True) in tethered()
    finally:
        untether(999_994, group=True)
        lifeline.close()


def test_a_tethered_process_is_known_by_its_start_time_too() -> None:
    """What the watchdog checks before it signals a pid (a process that ended by itself may
    have given it to another since): the start time of the process tethered."""
    import psutil

    child = subprocess.Popen([sys.executable, "-I", "-S", "-c", "import time; time.sleep(60)"])
    try:
        tether(child.pid)
        (tied,) = [each for each in tethered() if each.pid == child.pid]
        assert tied.started == psutil.Process(child.pid).create_time()
    finally:
        untether(child.pid)
        child.kill()
        child.wait()
