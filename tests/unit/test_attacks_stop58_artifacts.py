"""A cloned repository's ``.toolscript/`` against the real pipeline (in-process doit): its
artifacts that hold code (the fragments' methods, the names written into them, the
module) are rebuilt from the servers' lists, however its ``.doit.db`` vouches for them;
its ``saved-scripts.json`` never passes a saved script that would make Deno read a file
(tests/integration/test_attacks_stop58.py makes the first attack through a gateway)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from doit.dependency import Dependency, SqliteDB

from toolscript.config import Config, ServerConfig
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline
from toolscript.pipeline.tasks.scripts import ScriptVerdicts, _verdict_key, check_saved
from toolscript.pipeline.tasks.settings import DIGEST_KEY, digest_key
from toolscript.store.savedscripts import SavedScript

PLANTED = "Promise.resolve('planted')"
TOOLS = {"time": [{"name": "get_current_time", "inputSchema": {"type": "object"}}]}


def _built(tmp_path: Path) -> tuple[Config, CacheLayout, SnapshotSource, str]:
    server = ServerConfig(name="time", transport="stdio", command="x")
    config = Config(path=tmp_path / ".toolscript.json", project_dir=tmp_path, servers=(server,))
    layout, source = CacheLayout(tmp_path / ".toolscript"), SnapshotSource(TOOLS)
    assert run_pipeline(config, layout, source).code == 0
    return config, layout, source, layout.module.read_text()


def test_an_edited_fragment_or_name_is_made_again_not_copied_into_the_module(
    tmp_path: Path,
) -> None:
    config, layout, source, built = _built(tmp_path)
    fragments = layout.server_fragments("time")
    edited = json.loads(fragments.read_text())
    edited[0]["method"] = f"    getCurrentTime: (params) => {PLANTED},"
    fragments.write_text(json.dumps(edited))
    assert run_pipeline(config, layout, source).code == 0
    assert layout.module.read_text() == built
    names = layout.server_names("time")
    renamed = json.loads(names.read_text())
    renamed["tools"]["get_current_time"]["function"] = f"x: () => {PLANTED}, getCurrentTime"
    names.write_text(json.dumps(renamed))
    assert run_pipeline(config, layout, source).code == 0
    assert layout.module.read_text() == built


def test_a_doit_database_vouching_for_planted_artifacts_is_not_believed(tmp_path: Path) -> None:
    config, layout, source, built = _built(tmp_path)
    # What a repository can commit: its own module and fragments, and a database that
    # records their digests as anyone can compute them.
    planted = built + f"\nawait {PLANTED};\n"
    fragments = layout.server_fragments("time")
    edited = json.loads(fragments.read_text())
    edited[0]["method"] = f"    getCurrentTime: (params) => {PLANTED},"
    forged = {layout.module: planted, layout.tools_only: planted, fragments: json.dumps(edited)}
    for path, text in forged.items():
        path.write_text(text)
    database = Dependency(SqliteDB, str(layout.dep_file))
    for task, paths in {
        "scripts": [layout.module],
        "module": [layout.tools_only],
        "types:time": [fragments, layout.server_module("time")],
    }.items():
        digests = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}
        database._set(task, "_values_:", {**database.get_values(task), "targets": digests})
        if task == "module":  # its dependency, planted too
            database._set(task, str(fragments), database.checker.get_state(fragments, None))
    database.close()
    assert run_pipeline(config, layout, source).code == 0
    assert PLANTED not in layout.module.read_text()
    assert layout.module.read_text() == built


def test_a_planted_verdict_never_passes_a_saved_script_that_reads_a_file(tmp_path: Path) -> None:
    # saved-scripts.json is the project's too: its key is a hash of what anyone can know
    # but the Deno binary's size and time, and the check that refuses a file reference
    # ran only for scripts it did not vouch for.
    source = '/// <reference path="/home/me/.aws/credentials" />\nexport default () => 1;\n'
    script = SavedScript.of("planted", tmp_path / "planted.ts", source)
    key = _verdict_key("// tools", [script])
    vouched = ScriptVerdicts(key=key, passing=["planted"])
    verdicts = check_saved("// tools", [script], tmp_path / "check", vouched)
    assert verdicts.passing == []
    assert "reads no file" in verdicts.broken["planted"][0]


def test_the_digest_key_is_the_users_own_and_found_again(tmp_path: Path) -> None:
    key = digest_key.__wrapped__(tmp_path)  # (each process reads it once)
    assert len(key) == 32 and digest_key.__wrapped__(tmp_path) == key
    assert (tmp_path / DIGEST_KEY).stat().st_mode & 0o777 == 0o600
    # where it cannot be kept, a key of this process's own: rebuilt, never believed
    assert len(digest_key.__wrapped__(tmp_path / "missing")) == 32
    assert not (tmp_path / "missing").exists()
