"""Processes tethered to this one (``plumbing/processes.py``): what the MCP face's own
gateway starts, told to the face's watchdog (``Lifeline``), and stopped before it exits."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

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


def _gate_followed() -> Callable[[], None]:
    """Something follows what is tethered here (a face's watchdog): servers are gated."""
    return watch_tethered(lambda process, started: None)


def test_a_program_the_system_runs_itself_is_gated(tmp_path: Path) -> None:
    """(What the tests below compare with: a script with ``#!`` and a binary are gated.)"""
    script = tmp_path / "server"
    script.write_text("#!/bin/sh\nexec cat\n")
    script.chmod(0o755)
    unwatch = _gate_followed()
    try:
        assert processes.gated(["./server"], env={}, cwd=tmp_path)[:1] == ["/bin/sh"]
        binary = [sys.executable, "-c", "pass"]
        assert processes.gated(binary, env={"PATH": "/bin"}, cwd=None)[:1] == ["/bin/sh"]
    finally:
        unwatch()


def test_a_script_without_a_shebang_is_not_run_by_the_gate_s_shell(tmp_path: Path) -> None:
    """Spawned as it is, it fails ("Exec format error", the gateway says so); behind the
    gate, /bin/sh would run its lines as shell commands (a Python file's ``import os``:
    ImageMagick's ``import``, which writes a screenshot to a file named ``os``)."""
    script = tmp_path / "server.py"
    script.write_text("import os\nprint('hello')\n")
    script.chmod(0o755)
    unwatch = _gate_followed()
    try:
        launched = processes.gated(["./server.py"], env={"PATH": "/bin"}, cwd=tmp_path)
    finally:
        unwatch()
    assert launched == ["./server.py"]
    with pytest.raises(OSError, match="Exec format error"):
        subprocess.run(launched, cwd=tmp_path, env={}, check=False)


def test_a_bare_name_is_not_gated_and_the_spawn_s_path_is(tmp_path: Path) -> None:
    """The gate's shell would search its own list (without PATH: /usr/local/bin first, where
    the spawn searches ``os.defpath``), its relative entries from another folder than the
    gate's look-up: it is given a path (``program_to_spawn``) and searches nothing. A bare
    name is one no PATH folder has, for the spawn to say "command not found"."""
    unwatch = _gate_followed()
    try:
        for env in ({}, {"PATH": os.defpath}):
            bare = ["sh", "-c", "true"]
            assert processes.gated(bare, env=env, cwd=None) == bare
            found = [processes.program_to_spawn("sh", env=env, cwd=tmp_path), "-c", "true"]
            assert processes.gated(found, env=env, cwd=tmp_path) == [*processes._GATE, *found]
    finally:
        unwatch()


def test_on_macos_a_server_given_dyld_variables_is_not_gated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS purges ``DYLD_*`` when a program System Integrity Protection protects starts,
    /bin/sh among them: behind the gate the server would run without them."""
    monkeypatch.setattr(sys, "platform", "darwin")
    argv = [sys.executable, "-c", "pass"]
    env = {"PATH": "/bin", "DYLD_LIBRARY_PATH": "/opt/lib"}
    unwatch = _gate_followed()
    try:
        assert processes.gated(argv, env=env, cwd=None) == argv
        assert processes.gated(argv, env={"PATH": "/bin"}, cwd=None) != argv
    finally:
        unwatch()


def test_a_fifo_named_as_the_program_does_not_hold_the_spawn(tmp_path: Path) -> None:
    """Whether the program begins with ``#!`` is read without waiting: a FIFO where it is
    expected (executable, so ``which`` finds it) is no program, and its open would wait for
    a writer, holding the face's start."""
    import os
    import threading

    fifo = tmp_path / "server"
    os.mkfifo(fifo, 0o755)
    launched: list[list[str]] = []
    unwatch = _gate_followed()
    try:
        asking = threading.Thread(
            target=lambda: launched.append(processes.gated(["./server"], env={}, cwd=tmp_path)),
            daemon=True,
        )
        asking.start()
        asking.join(30)
        waited = asking.is_alive()
        if waited:  # (let it go: a writer opens the FIFO)
            with open(fifo, "wb"):
                pass
            asking.join(30)
    finally:
        unwatch()
    assert not waited, "gated() waited for a writer of the FIFO"
    assert launched == [["./server"]]


def _program(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_server_s_program_is_looked_up_on_absolute_path_entries_alone(tmp_path: Path) -> None:
    """A relative PATH entry names a folder of the server's (a cloned repository's): a name
    the config spells as a system program's never runs the repository's ``bin/`` copy,
    gated or not; the absolute entries' program is given as its path, so the gate's shell
    and the spawn run the same file."""
    system = _program(tmp_path / "system" / "tool", "#!/bin/sh\nexit 0\n")
    _program(tmp_path / "repo" / "bin" / "tool", "#!/bin/sh\nexit 0\n")
    _program(tmp_path / "repo" / "only", "#!/bin/sh\nexit 0\n")
    repo = tmp_path / "repo"
    path = os.pathsep.join(["bin", ".", "", str(system.parent)])
    assert processes.program_to_spawn("tool", env={"PATH": path}, cwd=repo) == str(system)
    with pytest.raises(processes.ProgramNotRunnable) as raised:
        processes.program_to_spawn("only", env={"PATH": path}, cwd=repo)
    assert raised.value.strerror == (
        "command not found: only (only PATH's relative entry '.' has it, which toolscript "
        'does not search: write "command": "./only" to run that one)'
    )
    # what no entry holds is the spawn's to report, as before
    assert processes.program_to_spawn("nowhere", env={"PATH": path}, cwd=repo) == "nowhere"
    # a path is the config's own choice, from the server's folder
    assert processes.program_to_spawn("bin/tool", env={"PATH": path}, cwd=repo) == "bin/tool"
    # no PATH: the spawn's own list, os.defpath
    found = processes.program_to_spawn("sh", env={}, cwd=repo)
    assert os.path.isabs(found) and os.path.dirname(found) in os.defpath.split(os.pathsep)


def test_a_missing_interpreter_is_named_before_either_spawn(tmp_path: Path) -> None:
    """The spawn said only "command not found: ./server" (the script is there), the gate's
    shell "exec: ./server: not found": both now name the ``#!`` interpreter, which is
    looked for as the kernel does, a relative one from the server's folder."""
    _program(tmp_path / "server", "#!/nonexistent/python3 -u\nprint(1)\n")
    with pytest.raises(processes.ProgramNotRunnable) as raised:
        processes.program_to_spawn("./server", env={"PATH": "/bin"}, cwd=tmp_path)
    assert raised.value.strerror == (
        "command not found: /nonexistent/python3 (the #! interpreter of ./server)"
    )
    assert isinstance(raised.value, FileNotFoundError)
    _program(tmp_path / "relative", "#!venv/python\n")
    with pytest.raises(processes.ProgramNotRunnable, match="venv/python"):
        processes.program_to_spawn("./relative", env={"PATH": "/bin"}, cwd=tmp_path)
    _program(tmp_path / "venv" / "python", "#!/bin/sh\nexit 0\n")
    assert processes.program_to_spawn("./relative", env={}, cwd=tmp_path) == "./relative"
    _program(tmp_path / "fine", "#!/bin/sh\nexit 0\n")
    assert processes.program_to_spawn("./fine", env={}, cwd=tmp_path) == "./fine"


def test_a_script_the_spawn_refuses_is_not_said_to_lack_its_interpreter(tmp_path: Path) -> None:
    """A script that is not executable (or a folder) is refused by the spawn with "Permission
    denied" naming it, whatever its ``#!`` says: fixing the interpreter would not run it. An
    interpreter that is there but not runnable is not "not found" either."""
    script = tmp_path / "server"
    script.write_text("#!/nonexistent/python3\nprint(1)\n")
    script.chmod(0o644)
    assert processes.program_to_spawn("./server", env={}, cwd=tmp_path) == "./server"
    with pytest.raises(PermissionError):
        subprocess.run(["./server"], cwd=tmp_path, check=False)
    (tmp_path / "folder").mkdir()
    assert processes.program_to_spawn("./folder", env={}, cwd=tmp_path) == "./folder"
    interpreter = tmp_path / "interp"
    interpreter.write_text("#!/bin/sh\n")
    interpreter.chmod(0o644)
    _program(tmp_path / "uses", f"#!{interpreter}\n")
    assert processes.program_to_spawn("./uses", env={}, cwd=tmp_path) == "./uses"
