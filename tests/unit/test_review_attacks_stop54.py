"""Attacks on this stop's changes that held no longer: the cache's prune in a
TOOLSCRIPT_HOME shared with other files, names that merely look like toolscript's, numbers
too long for a process id (in the prune's names and in the watchdog's words)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests.unit.test_cache_prune import aged
from toolscript.execution import watchdog
from toolscript.store.cacheprune import KEEP_DAYS, prune_cache

DAY = 86400.0
OLD = (KEEP_DAYS + 60) * DAY


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """TOOLSCRIPT_HOME pointed at a folder the user keeps other things in (their home)."""
    root = tmp_path / "home"
    root.mkdir()
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(root))
    return root


def gateway_files(home: Path, digest: str) -> tuple[Path, Path]:
    """A gateway's module of ``digest`` and its checker's config, in the cache."""
    module = home / "modules" / f"{digest}.ts"
    module.parent.mkdir()
    module.write_text("export {}\n")
    config = home / "checker" / f"deno-{digest}.json"
    config.parent.mkdir()
    config.write_text("{}")
    return module, config


def test_a_models_folder_toolscript_did_not_write_is_never_removed(home: Path) -> None:
    """The user's own ``~/models/my-bert`` (weights, no light runtime's description) is
    not a light folder, however long unused; nor a folder whose ``light.json`` is no
    description of toolscript's."""
    mine = home / "models" / "my-bert"
    mine.mkdir(parents=True)
    (mine / "model.safetensors").write_bytes(b"weights")
    other = home / "models" / "notes"
    other.mkdir()
    (other / "light.json").write_text(json.dumps(["not", "ours"]))
    aged(mine, OLD)
    aged(other, OLD)

    report = prune_cache(home)

    assert (mine / "model.safetensors").read_bytes() == b"weights"
    assert (other / "light.json").exists()
    assert report.removed == []


def test_names_that_merely_look_like_hashes_are_kept(home: Path) -> None:
    """Only the lengths toolscript names its files with: a dated file (8 digits are hex),
    an md5-named folder (32), a 16-hex JSON where gateways' keys are 24."""
    dated = home / "modules" / "20240101.csv"
    dated.parent.mkdir()
    dated.write_text("a,b")
    md5 = home / "scripts" / ("0123456789abcdef" * 2)
    md5.mkdir(parents=True)
    (md5 / "data.txt").write_text("mine")
    short_key = home / "gateways" / ("a" * 16 + ".json")
    short_key.parent.mkdir()
    short_key.write_text("{}")
    for path in (dated, md5, short_key):
        aged(path, OLD)

    report = prune_cache(home)

    assert dated.exists() and (md5 / "data.txt").exists() and short_key.exists()
    assert report.removed == []


@pytest.mark.parametrize(
    "name", ["deno-99999999999999999999-ab12cd34ef56", "importmap-4294967297-140.json"]
)
def test_a_number_too_long_for_a_pid_leaves_the_prune_whole(home: Path, name: str) -> None:
    """A name (or a gateway's state) whose process id no process can have: the prune does
    not raise (OverflowError), keeps it, and prunes the rest."""
    run = home / "run"
    run.mkdir()
    odd = run / name
    odd.mkdir() if name.startswith("deno-") else odd.write_text("{}")
    state = home / "gateways" / ("b" * 24 + ".json")
    state.parent.mkdir()
    state.write_text(json.dumps({"pid": 10**30}))
    unused = home / "scripts" / ("1" * 24)
    unused.mkdir(parents=True)
    for path in (odd, state, unused):
        aged(path, OLD)

    report = prune_cache(home)

    assert odd.exists() and state.exists()
    assert not unused.exists() and report.errors == []


SHELLS = [shell for shell in (["dash"], ["bash", "--posix"]) if shutil.which(shell[0])]


@pytest.mark.parametrize("shell", SHELLS, ids=[shell[0] for shell in SHELLS])
def test_the_watchdog_gives_kill_no_number_a_pid_cannot_be(
    shell: list[str], tmp_path: Path
) -> None:
    """A number past any pid reaches no ``kill``: a shell whose kill converts it with
    ``atoi`` (zsh as sh) wraps -4294967297 to -1, every process of the user, and
    -4294967296 to 0, its own group. (``kill`` is a function here that writes down what
    it was given.)"""
    said = tmp_path / "kills"
    words = ["g4294967297", "g4294967296", "p4294967297", "g99999999999999999999", "g4242"]
    subprocess.run(
        [
            *shell,
            "-c",
            'kill() { echo "$*" >> "$SAID"; return 1; }; sleep() { :; }; . "$0"',
            str(watchdog.SCRIPT),
        ],
        input="".join(f"{word}\n" for word in words),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SAID": str(said)},
        text=True,
        timeout=30,
        check=True,
    )

    assert said.read_text().splitlines() == ["-s KILL -- -4242"]


@pytest.mark.parametrize("answered", ["../../../elsewhere/planted", "/tmp/x", "", "A" * 16])
def test_a_module_hash_that_is_no_hash_names_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answered: str
) -> None:
    """The gateway's answer to ``/runtime/hash`` becomes a file name of the cache: one that
    climbs out of it (a ``.ts`` the user has elsewhere) is refused, not run as the module,
    and no request is made (nothing listens at the URL)."""
    from toolscript.errors import GatewayUnreachableError
    from toolscript.execution.locate import module_file

    monkeypatch.setenv("TOOLSCRIPT_HOME", str(tmp_path / "home" / "cache"))
    (tmp_path / "home" / "cache" / "modules").mkdir(parents=True)
    planted = tmp_path / "elsewhere" / "planted.ts"
    planted.parent.mkdir()
    planted.write_text("export const tools = {};\n")
    with pytest.raises(GatewayUnreachableError, match="as its module's hash"):
        module_file("http://127.0.0.1:9/token", answered, timeout=2)


def test_a_module_a_run_takes_from_the_cache_is_kept_by_a_prune(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """exec (or the face) takes a module of the cache that no gateway marked lately (an
    ephemeral gateway marks its own only 10 s after its first build): a prune that comes
    meanwhile (another gateway's daily one) leaves it to the run."""
    from toolscript.execution.locate import module_file

    home = tmp_path / "home"
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(home))
    module = home / "modules" / "0123456789abcdef.ts"
    module.parent.mkdir(parents=True)
    module.write_text("export const tools = {};\n")
    aged(module, OLD)

    assert module_file("http://127.0.0.1:9/token", "0123456789abcdef", timeout=2) == module
    prune_cache(home)

    assert module.exists()


@pytest.mark.parametrize("older_than", [0.0, 0.1])
def test_a_short_older_than_keeps_what_a_running_gateway_marked_since_its_last_round(
    home: Path, older_than: float
) -> None:
    """A running gateway marks its module and checker files used every 6 h
    (``CACHE_KEEPING_EVERY``): ``cache prune --older-than 0`` two hours after its last
    round removed them, though nothing a running gateway uses is removed."""
    from toolscript.gateway.core import CACHE_KEEPING_EVERY
    from toolscript.store.cacheprune import touch_module

    digest = "fedcba9876543210"
    module, config = gateway_files(home, digest)
    touch_module(home, digest)
    since = CACHE_KEEPING_EVERY - 60  # its next round is a minute away
    for path in (module, config):
        aged(path, since)

    prune_cache(home, keep_days=older_than)

    assert module.exists() and config.exists()


def test_gateways_mark_what_they_use_more_often_than_any_prune_removes_it() -> None:
    from toolscript.gateway.core import CACHE_KEEPING_EVERY
    from toolscript.store.cacheprune import MARKED_WITHIN

    assert CACHE_KEEPING_EVERY * 2 <= MARKED_WITHIN


def test_a_gateway_with_a_run_that_never_ends_still_marks_its_module(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that never ends (registered over HTTP with no pid, or with a pid that stays,
    as ``{"pid": 1}``: the orphan reaper ends only runs whose client went): the gateway's
    cache keeping waited for no live run before marking its module and checker files
    used, so it never marked them again, and after 30 days a prune (another gateway's)
    removed what it still serves. Only the prune waits for its runs."""
    import anyio

    from toolscript.gateway import core

    digest = "0011223344556677"
    module, config = gateway_files(home, digest)
    for path in (module, config):
        aged(path, OLD)
    monkeypatch.setattr(core, "CACHE_KEEPING_DELAY", 0.0)

    async def keep_a_while() -> None:
        gateway = SimpleNamespace(
            _cache_scope=anyio.CancelScope(),
            first_build=anyio.Event(),
            artifacts=SimpleNamespace(module_hash=digest),
            runs=SimpleNamespace(live=1),  # the run that never ends
            background=SimpleNamespace(live=0),
        )
        gateway.first_build.set()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(core.Gateway._keep_cache, cast("core.Gateway", gateway))
            with anyio.move_on_after(10):
                while time.time() - module.stat().st_mtime > DAY:
                    await anyio.sleep(0.05)
            gateway._cache_scope.cancel()

    anyio.run(keep_a_while)

    assert time.time() - module.stat().st_mtime < DAY
    assert time.time() - config.stat().st_mtime < DAY


def test_a_number_too_long_for_a_pid_is_no_process(tmp_path: Path) -> None:
    """``pid_exists`` on a number read from a name or a state file that no process id can
    be: none (os.kill raised OverflowError), so Deno's run folders named by one are still
    cleared of orphans, the rest kept."""
    from toolscript.plumbing import denobinary
    from toolscript.plumbing.processes import pid_exists

    assert not pid_exists(10**30)
    assert pid_exists(os.getpid())
    odd = tmp_path / f"{denobinary._RUN_PREFIX}{10**30}-x"
    mine = tmp_path / f"{denobinary._RUN_PREFIX}{os.getpid()}-x"
    for folder in (odd, mine):
        folder.mkdir()
    denobinary._remove_orphans(tmp_path)
    assert not odd.exists() and mine.exists()
