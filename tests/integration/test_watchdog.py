"""The watchdog that stops what exec or the MCP face started when that process dies
(``toolscript/execution/watchdog.py``): a shell, not a Python, that keeps only the
processes still running on its list and never runs what it reads."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from tests.helpers import wait_until
from toolscript.execution import watchdog
from toolscript.execution.lifeline import Lifeline

ROOT = Path(__file__).resolve().parents[2]
WATCHDOG = ROOT / "toolscript" / "execution" / "watchdog.py"


def sleeper(*, session: bool = True) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "60"], start_new_session=session)


def fire(words: list[str], cwd: Path | None = None) -> None:
    """The watchdog reads ``words`` and its input ends without "done": its owner died."""
    subprocess.run(
        [sys.executable, "-I", "-S", str(WATCHDOG)],
        input="".join(f"{word}\n" for word in words),
        text=True,
        cwd=cwd,
        timeout=60,
        check=True,
    )


def test_the_watchdog_stops_only_what_is_still_on_its_list() -> None:
    """Groups and processes named, some then said to have ended: the ended ones are
    spared, a number named twice and forgotten once is still stopped, groups are killed
    and processes terminated."""
    ended_group, group, twice = sleeper(), sleeper(), sleeper()
    ended_process, process = sleeper(), sleeper()
    everyone = [ended_group, group, twice, ended_process, process]
    reaper = threading.Thread(target=process.wait)  # else it lingers, a zombie, for 20 s
    reaper.start()
    try:
        fire(
            [
                f"g{ended_group.pid}",
                f"g{group.pid}",
                f"p{ended_process.pid}",
                f"g{twice.pid}",
                f"g{twice.pid}",
                f"fg{ended_group.pid}",
                f"p{process.pid}",
                f"fp{ended_process.pid}",
                f"fg{twice.pid}",
            ]
        )
        assert group.wait(10) == -signal.SIGKILL
        assert twice.wait(10) == -signal.SIGKILL
        reaper.join(10)
        assert process.returncode == -signal.SIGTERM
        assert ended_group.poll() is None and ended_process.poll() is None
    finally:
        for each in everyone:
            each.kill()
            each.wait()


def test_the_watchdog_never_runs_what_it_reads(tmp_path: Path) -> None:
    """Words that a shell would run, or that name no process (0 is the watchdog's own
    group, 1 every process), are skipped; the words after them still count."""
    watched = sleeper()
    try:
        fire(
            [
                "g$(touch ran-1)",
                "p`touch ran-2`",
                f"g{watched.pid};touch ran-3",
                "p1 && touch ran-4",
                "g*",
                "g-1",
                "g0",
                "g1",
                "p0",
                "p1",
                "fg",
                "",
                "g" + "9" * 40,
                "$(touch ran-5)",
                f"g{watched.pid}",
            ],
            cwd=tmp_path,
        )
        assert watched.wait(10) == -signal.SIGKILL
        assert list(tmp_path.iterdir()) == []
    finally:
        watched.kill()
        watched.wait()


def test_a_last_word_without_a_newline_counts() -> None:
    watched = sleeper()
    try:
        subprocess.run(
            [sys.executable, "-I", "-S", str(WATCHDOG)],
            input=f"g{watched.pid}",
            text=True,
            timeout=60,
            check=True,
        )
        assert watched.wait(10) == -signal.SIGKILL
    finally:
        watched.kill()
        watched.wait()


def test_a_process_that_ignores_sigterm_is_killed() -> None:
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert stubborn.stdout is not None
        stubborn.stdout.readline()  # SIGTERM is ignored from here on
        fire([f"p{stubborn.pid}"])  # the watchdog waits for it, then kills it
        assert stubborn.wait(10) == -signal.SIGKILL
    finally:
        stubborn.kill()
        stubborn.wait()


def test_the_watchdog_is_no_python() -> None:
    """exec and the face keep a watchdog for their whole life: a shell holds a few MB
    where a Python holds ten."""
    watched = sleeper()
    # (children left by another test of this worker are not the watchdog)
    before = {child.pid for child in psutil.Process().children()}
    try:
        with Lifeline(catch_signals=False) as lifeline:
            lifeline.watch(watched.pid, group=True)
            (dog,) = wait_until(
                lambda: [p for p in psutil.Process().children() if p.pid not in before],
                lambda found: len(found) == 1 and found[0].cmdline() != [],
                10,
                "the watchdog",
            )
            assert "python" not in dog.name().lower()
            # one line in ps: the shell and the script shipped beside watchdog.py
            assert dog.cmdline() == ["/bin/sh", str(watchdog.SCRIPT.resolve())]
            assert dog.memory_info().rss < 6_000_000
        assert watched.poll() is None  # "done": the run stopped what it started itself
    finally:
        watched.kill()
        watched.wait()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_bash_as_sh_runs_the_watchdog_alike(tmp_path: Path) -> None:
    """macOS's /bin/sh is bash in POSIX mode (Linux's is often dash): the same words, the
    same outcome."""
    ended, watched = sleeper(), sleeper()
    try:
        words = ["g$(touch ran)", f"g{ended.pid}", "g1", f"g{watched.pid}", f"fg{ended.pid}"]
        subprocess.run(
            ["bash", "--posix", str(watchdog.SCRIPT)],
            input="".join(f"{word}\n" for word in words),
            text=True,
            cwd=tmp_path,
            timeout=60,
            check=True,
        )
        assert watched.wait(10) == -signal.SIGKILL
        assert ended.poll() is None and list(tmp_path.iterdir()) == []
    finally:
        for each in (ended, watched):
            each.kill()
            each.wait()


def test_a_server_group_gets_its_grace_then_sigterm_then_sigkill() -> None:
    """``s<pgid>``: a stdio server's group (the face's own gateway's servers). Its stdin
    closed with its owner: one that leaves within the grace is not signalled, one that
    stays is sent SIGTERM, one that ignores SIGTERM is killed; one forgotten is spared."""
    leaves = subprocess.Popen(["sleep", "0.3"], start_new_session=True)
    stays = sleeper()
    forgotten = sleeper()
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(120)",
        ],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    everyone = [leaves, stays, forgotten, stubborn]
    try:
        assert stubborn.stdout is not None
        stubborn.stdout.readline()  # SIGTERM is ignored from here on
        words = [f"s{p.pid}" for p in (leaves, stays, forgotten, stubborn)]
        fire([*words, f"fs{forgotten.pid}"])
        assert leaves.wait(10) == 0
        assert stays.wait(10) == -signal.SIGTERM
        assert stubborn.wait(10) == -signal.SIGKILL
        assert forgotten.poll() is None
    finally:
        for each in everyone:
            each.kill()
            each.wait()


def fire_told_starts(
    named: list[tuple[str, subprocess.Popen[bytes], float]], env: dict[str, str] | None = None
) -> None:
    """The watchdog reads a word for each (kind, process, shift) as the face writes it (the
    process's start in whole seconds after the watchdog's, moved by ``shift``: a pid given
    to another process since, which started at another time), then its input ends."""
    dog = subprocess.Popen(watchdog.command(), stdin=subprocess.PIPE, text=True, env=env)
    own = psutil.Process(dog.pid).create_time()
    words = [
        f"{kind}{each.pid}@{round(psutil.Process(each.pid).create_time() - own + shift)}\n"
        for kind, each, shift in named
    ]
    dog.communicate("".join(words), timeout=60)
    assert dog.returncode == 0


def test_a_pid_given_to_another_process_since_is_not_signalled() -> None:
    """A word may carry the start of the process it names (``@<seconds>``, what the MCP
    face's watchdog is told): one that ended by itself may have given its pid to another
    since (pids wrap fast on macOS). A pid, or a group, whose process (its leader) started
    at another time is left alone; one that started then is stopped as before."""
    group, reused_group, server, reused_server, process, reused_process = (
        sleeper() for _ in range(6)
    )
    everyone = [group, reused_group, server, reused_server, process, reused_process]
    reaper = threading.Thread(target=process.wait)  # else it lingers, a zombie, for 20 s
    reaper.start()
    try:
        fire_told_starts(
            [
                ("g", group, 0),
                ("g", reused_group, -3600),
                ("s", server, 0),
                ("s", reused_server, 3600),
                ("p", process, 0),
                ("p", reused_process, -60),
            ]
        )
        assert group.wait(10) == -signal.SIGKILL
        assert server.wait(10) == -signal.SIGTERM
        reaper.join(10)
        assert process.returncode == -signal.SIGTERM
        assert [each.poll() for each in (reused_group, reused_server, reused_process)] == [None] * 3
    finally:
        for each in everyone:
            each.kill()
            each.wait()


def test_a_group_whose_leader_ended_is_still_killed() -> None:
    """A server's leader may end and leave a child in its group: the group's id stays that
    group's while any member lives (no other process is given it), so the watchdog, told
    of the group with its leader's start, kills what is left of it."""
    leader = subprocess.Popen(
        ["sh", "-c", "sleep 60 & echo $!; read -r line"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdin is not None and leader.stdout is not None
    started = psutil.Process(leader.pid).create_time()
    member = psutil.Process(int(leader.stdout.readline()))
    try:
        leader.stdin.close()  # the leader leaves; its child stays in the group
        leader.wait(10)
        dog = subprocess.Popen(watchdog.command(), stdin=subprocess.PIPE, text=True)
        own = psutil.Process(dog.pid).create_time()
        dog.communicate(f"g{leader.pid}@{round(started - own)}\n", timeout=60)
        gone, _ = psutil.wait_procs([member], timeout=10)
        assert gone, "the group's member outlived the watchdog"
    finally:
        with contextlib.suppress(psutil.Error):
            member.kill()


def test_without_ps_a_pid_is_signalled_by_its_number_alone(tmp_path: Path) -> None:
    """A system with no ``ps`` (a slim container) cannot say when a process started: the
    watchdog stops what it was told of by number, as before start times were told."""
    found = shutil.which("sleep")
    assert found is not None
    (tmp_path / "sleep").symlink_to(found)
    watched = sleeper()
    try:
        fire_told_starts([("g", watched, -3600)], env={"PATH": str(tmp_path)})
        assert watched.wait(10) == -signal.SIGKILL
    finally:
        watched.kill()
        watched.wait()


def told_killed_reused_spared(ps_folder: Path) -> tuple[int, int]:
    """A group told with its own start killed, one given to another since (told as started
    an hour before) spared, by a watchdog finding ``ps`` in ``ps_folder`` first; their pids."""
    told, reused = sleeper(), sleeper()
    try:
        env = {"PATH": os.pathsep.join([str(ps_folder), os.environ["PATH"]])}
        fire_told_starts([("g", told, 0), ("g", reused, -3600)], env=env)
        assert told.wait(10) == -signal.SIGKILL
        assert reused.poll() is None
    finally:
        for each in (told, reused):
            each.kill()
            each.wait()
    return told.pid, reused.pid


def test_one_ps_reads_both_ages_of_each_told_start(tmp_path: Path) -> None:
    """Each pid told with its start costs one ``ps`` (its age and the watchdog's read
    together, the same instant), not one for the watchdog's age and one for the pid's; the
    one still the process told of is stopped, the one given to another since is spared."""
    real = shutil.which("ps")
    assert real is not None
    log = tmp_path / "ps.log"
    (tmp_path / "ps").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec {real} "$@"\n')
    (tmp_path / "ps").chmod(0o755)
    pids = told_killed_reused_spared(tmp_path)
    calls = log.read_text().splitlines()
    assert len(calls) == 2, calls
    for call, pid in zip(calls, pids, strict=True):
        assert call.startswith("-o pid= -o etime= -p ") and call.endswith(f",{pid}"), call


def test_an_age_ps_wrapped_for_a_process_started_this_second_is_none(tmp_path: Path) -> None:
    """``ps`` may give a process started this very second an enormous age (procps read the
    uptime a moment before the start: seen here as "441077234-00:18:40" for the watchdog
    itself, one run in 15, so the group it was told of was spared). Such an age is none: the
    group told with its own start is killed, the one given to another since spared."""
    real = shutil.which("ps")
    assert real is not None
    # the real ps's lines, the watchdog's own age (the first pid asked) wrapped as seen
    (tmp_path / "ps").write_text(
        "#!/bin/sh\n"
        "for a do pids=$a; done\nself=${pids%%,*}\n"
        f'{real} "$@" | while read -r pid age; do\n'
        '  if [ "$pid" = "$self" ]; then echo "$pid 441077234-00:18:40"; '
        'else echo "$pid $age"; fi\ndone\n'
    )
    (tmp_path / "ps").chmod(0o755)
    told_killed_reused_spared(tmp_path)


# A face's watchdog told of two processes as its gateway tethers them, then the face killed.
_FACE = """
import os, signal, sys
from toolscript.execution.lifeline import Lifeline
from toolscript.plumbing.processes import Tethered

lifeline = Lifeline(catch_signals=False)
lifeline.follow_tethered()
for pid, started in zip(sys.argv[1::2], sys.argv[2::2]):
    lifeline.tethered(Tethered(int(pid), group=True, started=float(started)), True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_face_s_watchdog_is_told_each_tethered_process_s_start_time() -> None:
    """The start time ``tether`` recorded reaches the watchdog: a pid whose process started
    at another time than the one tethered (its number given to another since) is spared."""
    tethered, reused = sleeper(), sleeper()
    try:
        face = subprocess.run(
            [
                *(sys.executable, "-c", _FACE),
                *(str(tethered.pid), str(psutil.Process(tethered.pid).create_time())),
                *(str(reused.pid), str(psutil.Process(reused.pid).create_time() - 3600)),
            ],
            timeout=60,
        )
        assert face.returncode == -signal.SIGKILL
        assert tethered.wait(10) == -signal.SIGKILL
        assert reused.poll() is None
    finally:
        for each in (tethered, reused):
            each.kill()
            each.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's start times move")
def test_a_system_clock_set_after_the_watchdog_started_still_stops_what_was_tethered() -> None:
    """On Linux a start time in seconds since the epoch is the boot time (which follows the
    system clock: an NTP step, a VM's clock set again) plus the start since boot: a clock
    set between the watchdog's start and a tether must not spare the process tethered."""
    tethered = sleeper()
    face = (
        "import os, signal, sys\n"
        "import psutil, psutil._pslinux as linux\n"
        "from toolscript.execution.lifeline import Lifeline\n"
        "from toolscript.plumbing.processes import tether\n"
        "Lifeline(catch_signals=False).follow_tethered()\n"
        "stepped = psutil.boot_time() + 7\n"  # the clock set 7 s forward
        "linux.boot_time = lambda: stepped\n"
        "tether(int(sys.argv[1]), group=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", face, str(tethered.pid)], timeout=60)
        assert done.returncode == -signal.SIGKILL
        assert tethered.wait(10) == -signal.SIGKILL
    finally:
        tethered.kill()
        tethered.wait()
