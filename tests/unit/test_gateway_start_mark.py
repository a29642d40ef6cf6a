"""The "starting" mark a `gateway start` writes first thing, and how commands wait on it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolscript.cli.entry import _mark_gateway_start
from toolscript.config import load_config
from toolscript.errors import GatewayUnreachableError
from toolscript.gateway.state import (
    abandon_start,
    gateway_state_file,
    mark_starting,
    read_gateway_state,
    ready_gateway_state,
    start_cache_dir,
    start_options,
    write_gateway_state,
)
from toolscript.plumbing.processes import command_line


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for name in ("TOOLSCRIPT_GATEWAY_URL", "TOOLSCRIPT_CONFIG", "TOOLSCRIPT_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home"))
    yield tmp_path
    abandon_start()


def test_the_options_of_a_gateway_start_that_records_its_state() -> None:
    assert start_options(["gateway", "start"]) == {}
    assert start_options(["gateway", "start", "--port", "3000", "-c", "a.json"]) == {
        "config": "a.json"
    }
    assert start_options(["--config=b.json", "gateway", "start", "--cache-dir", "c"]) == {
        "config": "b.json",
        "cache": "c",
    }
    assert start_options(["--debug", "gateway", "start"]) == {}
    for other in (
        ["gateway", "status"],
        ["search", "gateway", "start"],
        ["gateway", "start", "--ephemeral"],
        ["gateway", "start", "--no-state"],
        ["gateway", "start", "--help"],
        ["gateway"],
        [],
    ):
        assert start_options(other) is None, other


def test_the_cache_a_start_marks_is_the_one_its_config_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.json").write_text("{}")
    cases = [
        ({}, {}),
        ({"config": "sub/x.json"}, {}),
        ({}, {"TOOLSCRIPT_CONFIG": "sub/x.json"}),
        ({"cache": "elsewhere"}, {}),
        ({}, {"TOOLSCRIPT_CACHE_DIR": "other"}),
    ]
    for options, environ in cases:
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        found = load_config(options.get("config") or os.environ.get("TOOLSCRIPT_CONFIG"))
        expected = found.cache_dir(options.get("cache"))
        assert start_cache_dir(options, tmp_path, os.environ) == expected, (options, environ)
        for name in environ:
            monkeypatch.delenv(name)


def test_the_entry_point_marks_a_start_before_anything_else(tmp_path: Path) -> None:
    cache = tmp_path / ".toolscript"
    assert _mark_gateway_start(["gateway", "start", "--port", "0"])
    state = read_gateway_state(cache)
    assert state is not None and state["starting"] and state["pid"] == os.getpid()
    abandon_start()
    assert read_gateway_state(cache) is None
    assert not _mark_gateway_start(["gateway", "start", "--ephemeral"])
    assert not _mark_gateway_start(["search", "time"])
    assert read_gateway_state(cache) is None


def test_a_start_marked_twice_says_once_why_the_file_it_replaced_was_stale(
    tmp_path: Path,
) -> None:
    """The start holds the project's lock, which every gateway of the project holds while it
    runs: a file naming another live process is stale (it warned of "another gateway" there,
    said to `kill` that process, and put the file back once it stopped)."""
    cache = tmp_path / ".toolscript"
    other = {"url": "http://127.0.0.1:9/t", "pid": os.getppid(), "port": 9}
    write_gateway_state(cache, other)
    stale = mark_starting(cache)
    assert stale is not None and f"pid {os.getppid()}" in stale and "no gateway" in stale
    assert mark_starting(cache) == stale  # the command marks again what the entry marked
    assert (read_gateway_state(cache) or {}).get("starting")
    abandon_start(cache)
    assert read_gateway_state(cache) is None  # not put back


def test_a_state_left_behind_whose_pid_another_process_has_now_is_no_gateway(
    tmp_path: Path,
) -> None:
    """A gateway's file outlives it when the machine goes down under it, and after a reboot
    its pid may be another program's: `gateway start` warned of "another gateway" there and
    said to `kill` it, and a start mark left so was waited for (120 s), then named to kill."""
    cache = tmp_path / ".toolscript"
    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yesterday = {"url": "http://127.0.0.1:9/t", "pid": later.pid, "port": 9}
        write_gateway_state(cache, {**yesterday, "started": time.time() - 86_400})
        assert "is no gateway (it does not hold the project's lock)" in (mark_starting(cache) or "")
        abandon_start(cache)
        assert read_gateway_state(cache) is None  # nor put back once this start ends
        write_gateway_state(cache, {"pid": later.pid, "starting": True, "started": 1.0})
        assert ready_gateway_state(cache, wait=0.2, siblings=False) is None
    finally:
        later.kill()
        later.wait()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"pid": 12', "is not JSON (10 bytes, truncated?)"),
        ("not json", "is not JSON"),
        ("[1, 2]", "names no process"),
        ('{"pid": "x"}', "names no process"),
        ('{"pid": 999999999, "url": "http://127.0.0.1:9/t"}', "no longer runs"),
    ],
)
def test_a_broken_state_file_is_said_stale_once_and_replaced(
    tmp_path: Path, text: str, said: str
) -> None:
    cache = tmp_path / ".toolscript"
    path = gateway_state_file(cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    assert said in (mark_starting(cache) or "")
    assert (read_gateway_state(cache) or {}).get("pid") == os.getpid()
    abandon_start(cache)
    assert not path.exists()


def test_a_gateway_that_never_gets_ready_is_named_not_missed(tmp_path: Path) -> None:
    cache = tmp_path / ".toolscript"
    mark_starting(cache)  # this process: alive, and never ready
    with pytest.raises(GatewayUnreachableError) as raised:
        ready_gateway_state(cache, wait=0.2, siblings=False)
    assert f"(pid {os.getpid()}) is still starting" in raised.value.message
    assert f"kill {os.getpid()}" in (raised.value.hint or "")


def test_a_command_needing_none_of_the_servers_waited_for_asks_to_be_served(
    tmp_path: Path,
) -> None:
    """exec right after `gateway start &` waited for the slowest server, though its script
    called another: the mark names the servers still connecting, and a command that needs
    none of them asks the gateway to serve now (once; the ask is taken once read)."""
    from toolscript.gateway.state import serve_now_asked, write_start_waiting

    cache = tmp_path / ".toolscript"
    mark_starting(cache)
    write_start_waiting(cache, ["slow", "clock"])
    assert (read_gateway_state(cache) or {}).get("waiting") == ["slow", "clock"]
    seen: list[list[str]] = []

    def needs_clock(waiting: list[str]) -> bool:
        seen.append(waiting)
        return "clock" not in waiting

    with pytest.raises(GatewayUnreachableError):  # this process never serves
        ready_gateway_state(cache, wait=0.3, siblings=False, serve_early=needs_clock)
    assert seen == [["slow", "clock"]] and not serve_now_asked(cache)  # asked once a change
    write_start_waiting(cache, ["slow"])
    with pytest.raises(GatewayUnreachableError):
        ready_gateway_state(cache, wait=0.3, siblings=False, serve_early=needs_clock)
    assert serve_now_asked(cache) and not serve_now_asked(cache)
    abandon_start(cache)
    write_start_waiting(cache, ["slow"])  # no mark of this process's any more: nothing written
    assert read_gateway_state(cache) is None


def test_no_mark_and_no_sibling_start_is_no_gateway(tmp_path: Path) -> None:
    assert ready_gateway_state(tmp_path / ".toolscript", wait=0.2) is None


def test_a_gateway_start_beside_that_keeps_its_state_elsewhere_is_not_waited_for(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sibling `gateway start` of the same project whose TOOLSCRIPT_HOME differs writes its
    mark where this command never looks: it is not waited for (it was, up to the deadline)."""
    from toolscript.gateway.state import ready_gateway_state
    from toolscript.plumbing import processes

    elsewhere = dict(os.environ, TOOLSCRIPT_HOME=str(home / "other-home"))
    beside = processes.Sibling(
        4242, ("python", "-m", "toolscript", "gateway", "start"), str(home), elsewhere, False
    )
    asked: list[int] = []

    def found(wanted: object = None) -> list[processes.Sibling]:
        asked.append(1)
        return [beside]

    monkeypatch.setattr(processes, "siblings", found)
    assert ready_gateway_state(home / ".toolscript", wait=600) is None
    assert len(asked) == 1  # looked once, did not poll for its mark


def test_a_second_start_beside_a_gateway_whose_state_file_broke_says_so(tmp_path: Path) -> None:
    """The lock held, the file truncated: it said "already serves this project (pid ?)"."""
    from toolscript.gateway.state import already_serving

    cache = tmp_path / ".toolscript"
    lock = gateway_state_file(cache).with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX);"
            " print('held', flush=True); time.sleep(60)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        gateway_state_file(cache).write_text('{"pid": 12')
        error = already_serving(cache, wait=0.2)
        assert error.message == "a gateway already serves this project (its state file names none)"
    finally:
        holder.kill()
        holder.wait()


def test_a_state_file_naming_a_gateway_start_without_the_lock_is_said_to_be_one(
    tmp_path: Path,
) -> None:
    """The user's cache (the lock with it) deleted under a running gateway: a second start
    gets a lock of its own, and the file names a `gateway start` that still runs. Not
    called stale: said to be another gateway that may serve the project too."""
    cache = tmp_path / ".toolscript"
    running = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "toolscript", "gateway", "start"]
    )
    try:
        wait = time.monotonic() + 10
        while "gateway" not in " ".join(command_line(running.pid)) and time.monotonic() < wait:
            time.sleep(0.02)
        write_gateway_state(cache, {"url": "http://127.0.0.1:9/t", "pid": running.pid, "port": 9})
        said = mark_starting(cache) or ""
        assert said.startswith(f"another gateway (pid {running.pid}) runs without"), said
        assert f"`kill {running.pid}`" in said and "stale" not in said
    finally:
        running.kill()
        running.wait()
        abandon_start(cache)
