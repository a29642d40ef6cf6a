"""The user's cache kept bounded (store/cacheprune.py): what no toolscript reads again goes,
what one may be using stays; real files in a TOOLSCRIPT_HOME of each test's own."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscript.store.cacheprune import (
    KEEP_DAYS,
    PRUNE_EVERY,
    STAMP,
    model_files,
    prune_cache,
    prune_if_due,
    touch_module,
)

DAY = 86400.0
HOUR = 3600.0


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "toolscript-home"
    root.mkdir()
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(root))
    return root


def aged(path: Path, seconds: float) -> Path:
    """``path`` (and what it holds) last modified ``seconds`` ago."""
    when = time.time() - seconds
    for parent, folders, files in os.walk(path) if path.is_dir() else []:
        for name in folders + files:
            os.utime(os.path.join(parent, name), (when, when), follow_symlinks=False)
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def light(cache: Path, name: str, age: float, **meta: object) -> Path:
    """A light query runtime as save_light writes it, with its queries graph beside it."""
    folder = cache / "models" / name
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"x" * 1000)
    (folder / "light.json").write_text(json.dumps({"format": 1, "model_id": "m", **meta}))
    graph = folder.with_name(f"{name}.queries-1.onnx")
    graph.write_bytes(b"g" * 500)
    aged(graph, age)
    return aged(folder, age)


def model_dir(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "model.safetensors").write_bytes(b"w")
    return directory


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_light_folder_of_a_gone_model_directory_goes_and_a_live_one_stays(
    cache: Path, tmp_path: Path
) -> None:
    live = model_dir(tmp_path, "live-model")
    gone = light(cache, "m-gone", 2 * HOUR, directory=str(tmp_path / "deleted-venv"), files=[])
    kept = light(cache, "m-live", 40 * DAY, directory=str(live), files=model_files(live))

    report = prune_cache(cache)

    assert not gone.exists() and not gone.with_name("m-gone.queries-1.onnx").exists()
    assert kept.is_dir() and kept.with_name("m-live.queries-1.onnx").exists()
    assert [(r.folder, r.reason) for r in report.removed] == [("models", "model gone")]
    assert report.freed >= 1500


def test_light_folder_of_a_changed_model_directory_is_superseded(
    cache: Path, tmp_path: Path
) -> None:
    directory = model_dir(tmp_path, "model")
    old = light(cache, "m-old", 2 * HOUR, directory=str(directory), files=model_files(directory))
    (directory / "model.safetensors").write_bytes(b"new weights")  # an upgrade in place
    new = light(cache, "m-new", 0, directory=str(directory), files=model_files(directory))

    report = prune_cache(cache)

    assert not old.exists() and new.is_dir()
    assert [r.reason for r in report.removed] == ["superseded"]


def test_a_light_folder_just_written_is_kept_whatever_it_records(cache: Path) -> None:
    young = light(cache, "m-young", 60, directory="/nowhere/at/all", files=[])
    assert prune_cache(cache).removed == []
    assert young.is_dir()


def test_a_light_folder_recording_no_directory_goes_only_when_unused(cache: Path) -> None:
    used = light(cache, "m-used", 2 * DAY)  # written before folders recorded their model
    unused = light(cache, "m-unused", (KEEP_DAYS + 1) * DAY)
    orphan_graph = cache / "models" / "m-x.queries-1.onnx"
    orphan_graph.write_bytes(b"g")
    aged(orphan_graph, (KEEP_DAYS + 1) * DAY)

    prune_cache(cache)

    assert used.is_dir() and not unused.exists() and not orphan_graph.exists()
    assert not unused.with_name("m-unused.queries-1.onnx").exists()


def test_light_ready_marks_its_folder_used(cache: Path, tmp_path: Path) -> None:
    from toolscript.search.semantic import LIGHT_FORMAT, light_folder, light_ready

    directory = model_dir(tmp_path, "local-model")
    folder = light_folder(str(directory))
    folder.mkdir(parents=True)
    (folder / "light.json").write_text(json.dumps({"format": LIGHT_FORMAT, "model_id": "m"}))
    aged(folder / "light.json", (KEEP_DAYS + 1) * DAY)

    assert light_ready(str(directory)) is not None

    assert time.time() - (folder / "light.json").stat().st_mtime < HOUR
    assert prune_cache(cache).removed == []


def test_a_light_folder_written_before_they_recorded_their_model_records_it_at_its_use(
    cache: Path, tmp_path: Path
) -> None:
    from toolscript.search.semantic import LIGHT_FORMAT, light_folder, light_ready

    directory = model_dir(tmp_path, "venv-model")
    folder = light_folder(str(directory))
    folder.mkdir(parents=True)
    (folder / "light.json").write_text(json.dumps({"format": LIGHT_FORMAT, "model_id": "m"}))

    assert light_ready(str(directory)) is not None

    meta = json.loads((folder / "light.json").read_text())
    assert meta["directory"] == str(directory.resolve())
    assert meta["files"] == model_files(directory) and meta["model_id"] == "m"
    aged(folder, 2 * HOUR)
    assert prune_cache(cache).removed == []  # its model is there
    (directory / "model.safetensors").unlink()
    directory.rmdir()  # the venv removed
    assert [r.reason for r in prune_cache(cache).removed] == ["model gone"]
    assert not folder.exists()


def test_modules_and_what_is_beside_them_go_when_unused(cache: Path) -> None:
    modules = cache / "modules"
    (modules / "aaaaaaaaaaaaaaaa.scripts").mkdir(parents=True)
    (modules / "aaaaaaaaaaaaaaaa.scripts" / "report.ts").write_text("x")
    (modules / "aaaaaaaaaaaaaaaa.ts").write_text("old")
    (modules / "aaaaaaaaaaaaaaaa.lock").write_text("{}")
    (modules / "bbbbbbbbbbbbbbbb.ts").write_text("used lately")
    (modules / "bbbbbbbbbbbbbbbb.lock").write_text("{}")
    for path in modules.iterdir():
        aged(path, (KEEP_DAYS + 1) * DAY)
    aged(modules / "bbbbbbbbbbbbbbbb.ts", DAY)  # one of a group used: the group stays
    (cache / "checker").mkdir()
    stale_config = cache / "checker" / "deno-aaaaaaaaaaaaaaaa.json"
    stale_config.write_text("{}")
    aged(stale_config, (KEEP_DAYS + 1) * DAY)
    fresh_config = cache / "checker" / "importmap-bbbbbbbbbbbbbbbb.json"
    fresh_config.write_text("{}")
    (cache / "checker" / "deno.json").write_text("{}")  # not named by a hash: never ours
    aged(cache / "checker" / "deno.json", (KEEP_DAYS + 1) * DAY)

    prune_cache(cache)

    assert sorted(p.name for p in modules.iterdir()) == [
        "bbbbbbbbbbbbbbbb.lock",
        "bbbbbbbbbbbbbbbb.ts",
    ]
    assert not stale_config.exists() and fresh_config.exists()
    assert (cache / "checker" / "deno.json").exists()


def test_a_running_gateways_module_is_kept_however_old(cache: Path) -> None:
    module = cache / "modules" / "cccccccccccccccc.ts"
    module.parent.mkdir()
    module.write_text("export {}")
    config = cache / "checker" / "deno-cccccccccccccccc.json"
    config.parent.mkdir()
    config.write_text("{}")
    imports = cache / "checker" / "importmap-cccccccccccccccc.json"
    imports.write_text("{}")
    for path in (module, config, imports):
        aged(path, 90 * DAY)

    touch_module(cache, "cccccccccccccccc")  # what the gateway does every few hours
    prune_cache(cache)

    assert module.exists() and config.exists() and imports.exists()


def test_prepared_scripts_and_config_checks_go_when_unused(cache: Path) -> None:
    old = cache / "scripts" / ("1" * 24)
    old.mkdir(parents=True)
    (old / "inline.ts").write_text("return 1")
    aged(old, (KEEP_DAYS + 1) * DAY)
    fresh = cache / "scripts" / ("2" * 24)
    fresh.mkdir()
    (fresh / "inline.ts").write_text("return 2")
    aged(fresh, (KEEP_DAYS + 1) * DAY)
    os.utime(fresh / "inline.ts")  # run lately (exec touches the script it runs)
    memo = cache / "valid-configs" / ("3" * 64)
    memo.parent.mkdir()
    memo.touch()
    aged(memo, (KEEP_DAYS + 1) * DAY)

    prune_cache(cache)

    assert not old.exists() and fresh.exists() and not memo.exists()


def _emitted_for(cache: Path, source: Path, age: float) -> Path:
    """The JavaScript Deno emits for ``source``, in the shared ``gen/file``, ``age`` old."""
    path = cache / "deno" / "gen" / "file" / f"{source.as_posix().lstrip('/')}.js"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("// emitted\n")
    return aged(path, age)


def test_javascript_emitted_for_a_file_goes_with_the_file_or_when_unused(
    cache: Path, tmp_path: Path
) -> None:
    module = cache / "modules" / ("a" * 16 + ".ts")
    module.parent.mkdir()
    module.write_text("export {};\n")
    gone = cache / "modules" / ("b" * 16 + ".ts")  # pruned, or never there
    used = _emitted_for(cache, module, 2 * DAY)
    orphan = _emitted_for(cache, gone, 2 * HOUR)
    just_written = _emitted_for(cache, gone.with_name("c" * 16 + ".ts"), 60)
    stale = _emitted_for(cache, module.with_name("d" * 16 + ".ts"), (KEEP_DAYS + 1) * DAY)
    old_but_there = tmp_path / "saved.ts"
    old_but_there.write_text("export {};\n")
    unused = _emitted_for(cache, old_but_there, (KEEP_DAYS + 1) * DAY)
    not_deno_named = _emitted_for(cache, tmp_path / "notes.txt", (KEEP_DAYS + 1) * DAY)

    report = prune_cache(cache)

    assert used.exists() and just_written.exists() and not_deno_named.exists()
    assert not orphan.exists() and not stale.exists() and not unused.exists()
    reasons = report.to_dict()["folders"]["deno/gen/file"]["reasons"]
    assert reasons == {"file gone": 2, "unused": 1}


def test_emitted_javascript_behind_a_linked_folder_is_left_alone(
    cache: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "gen" / "file").mkdir(parents=True)
    kept = elsewhere / "gen" / "file" / "x.ts.js"
    kept.write_text("// someone's\n")
    aged(kept, (KEEP_DAYS + 1) * DAY)
    (cache / "deno").symlink_to(elsewhere)

    prune_cache(cache)

    assert kept.exists()


def test_a_check_tags_files_go_together_when_unused(cache: Path) -> None:
    """check/ only grew: a config and a globals file per Deno binary and options (63 here)."""
    check = cache / "check"
    check.mkdir()
    old_tag, used_tag = "a" * 12, "b" * 12
    old = [check / f"deno-{old_tag}.json", check / f"globals-{old_tag}.d.ts"]
    old.append(check / f"deno-{old_tag}-{'c' * 12}.json")  # a module's packages declared
    used = [check / f"deno-{used_tag}.json", check / f"globals-{used_tag}.d.ts"]
    foreign = check / "notes.json"
    for path in [*old, *used, foreign]:
        path.write_text("{}\n")
        aged(path, (KEEP_DAYS + 1) * DAY)
    os.utime(used[0])  # a check read it lately: its tag's globals file stays with it

    prune_cache(cache)

    assert [path.exists() for path in old] == [False, False, False]
    assert all(path.exists() for path in used) and foreign.exists()


def test_a_checks_use_marks_its_config_and_globals_used(cache: Path) -> None:
    from toolscript.plumbing.checkoptions import check_tag, write_check_config

    tag = check_tag()
    config = cache / "check" / f"deno-{tag}.json"
    globals_file = cache / "check" / f"globals-{tag}.d.ts"
    config.parent.mkdir()
    globals_file.write_text("declare const x: number;\n")
    config.write_text("{}\n")
    for path in (config, globals_file):
        aged(path, (KEEP_DAYS + 1) * DAY)

    assert write_check_config() == config  # as it was: only marked, not written again
    assert config.read_text() == "{}\n"

    prune_cache(cache)

    assert config.exists() and globals_file.exists()


def test_exec_marks_the_prepared_script_it_runs_used(cache: Path) -> None:
    from toolscript.execution.sandbox import Script, _write_script

    path, _ = _write_script(Script("return 1", "inline.ts"))
    aged(path.parent, (KEEP_DAYS + 1) * DAY)

    assert _write_script(Script("return 1", "inline.ts"))[0] == path

    prune_cache(cache)
    assert path.exists()


def test_files_of_a_process_that_ended_go_and_a_live_ones_stay(cache: Path) -> None:
    run = cache / "run"
    run.mkdir()
    dead = dead_pid()
    ended = run / f"importmap-{dead}-140.json"
    ended_spare = run / f"importmap-spare-deno-{dead}-ab12.json"
    ended_dir = run / f"deno-{dead}-cd34"
    ended_dir.mkdir()
    shared = cache / "deno" / "npm"  # a run's DENO_DIR links the shared caches
    shared.mkdir(parents=True)
    (shared / "package.json").write_text("{}")
    (ended_dir / "npm").symlink_to(shared, target_is_directory=True)
    live = run / f"importmap-{os.getpid()}-140.json"
    for path in (ended, ended_spare, live):
        path.write_text("{}")
    for path in (ended, ended_spare, ended_dir, live):
        aged(path, 2 * HOUR)
    just_now = run / f"importmap-{dead}-141.json"  # (a pid reused by a run starting now)
    just_now.write_text("{}")

    prune_cache(cache)

    assert sorted(p.name for p in run.iterdir()) == sorted([live.name, just_now.name])
    assert (shared / "package.json").exists()


def test_an_abandoned_light_folder_under_way_goes(cache: Path) -> None:
    models = cache / "models"
    abandoned = models / f"m-0000.{dead_pid()}.partial"
    under_way = models / f"m-0000.{os.getpid()}.partial"
    for folder in (abandoned, under_way):
        folder.mkdir(parents=True)
        (folder / "model.onnx").write_bytes(b"half")
        aged(folder, 2 * HOUR)

    prune_cache(cache)

    assert not abandoned.exists() and under_way.is_dir()


def test_a_gateways_state_goes_with_it_and_a_held_lock_is_kept(cache: Path) -> None:
    gateways = cache / "gateways"
    gateways.mkdir()
    ended = gateways / ("a" * 24 + ".json")
    ended.write_text(json.dumps({"url": "http://127.0.0.1:9/t", "pid": dead_pid()}))
    running = gateways / ("b" * 24 + ".json")
    running.write_text(json.dumps({"url": "http://127.0.0.1:9/t", "pid": os.getpid()}))
    held, free = gateways / ("c" * 24 + ".lock"), gateways / ("d" * 24 + ".lock")
    for path in (held, free):
        path.touch()
    for path in (ended, running, held, free):
        aged(path, (KEEP_DAYS + 1) * DAY)

    descriptor = os.open(held, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a gateway serving
        prune_cache(cache)
    finally:
        os.close(descriptor)

    assert sorted(p.name for p in gateways.iterdir()) == sorted([running.name, held.name])


def test_a_lock_removed_by_a_prune_is_claimed_afresh(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolscript.gateway import state

    project = tmp_path / "project" / ".toolscript"
    project.mkdir(parents=True)
    lock = state.gateway_state_file(project).with_suffix(".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    aged(lock, (KEEP_DAYS + 1) * DAY)
    # The prune runs between the claim's open of the lock and its flock: the claim must
    # not hold a lock no longer at the path (a second gateway would lock a new file).
    real_flock, pruned = fcntl.flock, []

    def flock_after_a_prune(descriptor: int, operation: int) -> None:
        if not pruned:
            monkeypatch.setattr(fcntl, "flock", real_flock)  # (the prune's own flock)
            pruned.append(prune_cache(cache))
        real_flock(descriptor, operation)

    monkeypatch.setattr(fcntl, "flock", flock_after_a_prune)
    try:
        assert state.claim_project(project)
        assert [r.reason for r in pruned[0].removed] == ["unused"]
        assert lock.exists()  # the lock held is the one at the path
        held = state._claims[project.resolve()]
        assert os.fstat(held).st_ino == lock.stat().st_ino
    finally:
        descriptor = state._claims.pop(project.resolve(), None)
        if descriptor is not None:
            os.close(descriptor)


def test_links_are_neither_followed_nor_removed(cache: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    target = light(outside, "m-gone", 40 * DAY, directory="/nowhere", files=[])
    (cache / "models").mkdir()
    link = cache / "models" / "m-linked"
    link.symlink_to(target, target_is_directory=True)
    # a whole folder of the cache that is a link (to another user's cache, say)
    shared = tmp_path / "shared-scripts"
    (shared / ("4" * 24)).mkdir(parents=True)
    aged(shared / ("4" * 24), 40 * DAY)
    (cache / "scripts").symlink_to(shared, target_is_directory=True)
    # a link inside a folder that goes: the link goes, never what it names
    module_scripts = cache / "modules" / "eeeeeeeeeeeeeeee.scripts"
    module_scripts.mkdir(parents=True)
    kept_file = tmp_path / "precious.ts"
    kept_file.write_text("mine")
    (module_scripts / "precious.ts").symlink_to(kept_file)
    aged(module_scripts, 40 * DAY)

    prune_cache(cache)

    assert target.is_dir() and (target / "light.json").exists() and link.is_symlink()
    assert (shared / ("4" * 24)).is_dir()
    assert not module_scripts.exists() and kept_file.read_text() == "mine"


def test_a_dry_run_removes_nothing_and_says_what_it_would(cache: Path, tmp_path: Path) -> None:
    gone = light(cache, "m-gone", 2 * HOUR, directory=str(tmp_path / "gone"), files=[])

    summary = prune_cache(cache, dry_run=True).to_dict()

    assert gone.is_dir()
    assert summary["dry_run"] is True and summary["entries"] == 1
    assert summary["folders"]["models"]["reasons"] == {"model gone": 1}
    assert summary["bytes"] >= 1500


def test_the_automatic_prune_runs_once_a_day(cache: Path, tmp_path: Path) -> None:
    first = light(cache, "m-first", 2 * HOUR, directory=str(tmp_path / "gone"), files=[])
    assert prune_if_due(cache) is not None
    assert not first.exists() and (cache / STAMP).exists()

    second = light(cache, "m-second", 2 * HOUR, directory=str(tmp_path / "gone"), files=[])
    assert prune_if_due(cache) is None  # pruned less than a day ago
    assert second.is_dir()

    report = prune_if_due(cache, now=time.time() + PRUNE_EVERY + 1)
    assert report is not None and not second.exists()


def test_a_failure_is_reported_and_logged_once_not_raised(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from toolscript.store import cacheprune

    monkeypatch.setattr(cacheprune, "_logged_errors", False)
    graph = cache / "models" / "m-gone.queries-1.onnx"
    gone = light(cache, "m-gone", 2 * HOUR, directory=str(tmp_path / "gone"), files=[])
    if os.geteuid() == 0:  # (root removes what a folder's mode forbids: the refusal is made)
        unlink = Path.unlink

        def refuse(path: Path, missing_ok: bool = False) -> None:
            if path == graph:
                raise PermissionError(13, "Permission denied", str(path))
            unlink(path, missing_ok)

        monkeypatch.setattr(Path, "unlink", refuse)
    else:
        os.chmod(cache / "models", 0o500)
    try:
        first = prune_cache(cache)
        aged(graph, (KEEP_DAYS + 1) * DAY)  # unused: the next prune tries it again
        second = prune_cache(cache)
    finally:
        os.chmod(cache / "models", 0o700)

    assert first.errors and second.errors and graph.exists()
    assert "Permission denied" in first.errors[0]
    warnings = [r for r in caplog.records if r.name == "toolscript.cache"]
    assert len(warnings) == 1 and "could not remove" in warnings[0].getMessage()
    del gone


def test_cache_prune_command_dry_run_json(cache: Path, tmp_path: Path) -> None:
    from toolscript.cli.main import app

    gone = light(cache, "m-gone", 2 * HOUR, directory=str(tmp_path / "gone"), files=[])

    result = CliRunner().invoke(app, ["cache", "prune", "--dry-run", "--json"])

    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["cache"] == str(cache.resolve()) and answer["entries"] == 1
    assert gone.is_dir()
    text = CliRunner().invoke(app, ["cache", "prune"])
    assert text.exit_code == 0 and "freed" in text.output and "models/" in text.output
    assert not gone.exists()
    assert (
        "toolscript cache prune --dry-run"
        in CliRunner().invoke(app, ["cache", "prune", "--help"]).output
    )


def test_cache_prune_makes_no_missing_cache_and_changes_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dry run writes nothing (nor does a prune of a cache that is not there): the
    TOOLSCRIPT_HOME named is neither made nor has its mode changed."""
    from toolscript.cli.main import app

    missing = tmp_path / "no-home-yet"
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(missing))
    for args in (["--dry-run"], ["--dry-run", "--json"], []):
        result = CliRunner().invoke(app, ["cache", "prune", *args])
        assert result.exit_code == 0, result.output
        assert str(missing) in result.output and not missing.exists()
    shared = tmp_path / "shared-home"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(shared))
    assert CliRunner().invoke(app, ["cache", "prune", "--dry-run"]).exit_code == 0
    assert shared.stat().st_mode & 0o777 == 0o755 and not any(shared.iterdir())


def test_a_killed_run_s_copy_of_its_script_goes_and_its_check_mark_stays(cache: Path) -> None:
    """A run's copy of its script (``scripts/<hash>/run-PID-THREAD/``) is removed by the run
    when it ends; one killed first left it, holding what the script holds (a password typed
    into it) for 30 days. Prune removes it once its process is gone; the folder's check
    mark, and a running process's copy, stay."""
    folder = cache / "scripts" / ("4" * 24)
    killed = folder / f"run-{dead_pid()}-140"
    running = folder / f"run-{os.getpid()}-140"
    for copy in (killed, running):
        copy.mkdir(parents=True)
        (copy / "inline.ts").write_text('const pw = "hunter2"; return 1')
        aged(copy, 2 * HOUR)
    mark = folder / ".inline.ts.checked-aaaaaaaaaaaaaaaa-bbbbbbbbbbbb"
    mark.touch()

    prune_cache(cache)

    assert sorted(p.name for p in folder.iterdir()) == sorted([mark.name, running.name])
