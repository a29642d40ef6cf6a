"""Stop 73: a cloned repository's ``.doit.db`` vouched for its planted files with digests it
can write without the user's key. ``targets_as_built`` compared the digests recorded against
those of the paths recorded, whatever they were: a record naming a path that does not exist
with an empty digest (what a missing target digests to), or a planted link with ``linked``,
matched, so the repository's ``servers/<s>.json`` of a server not reached became its tools
(a planted module held: it is made anew for other reasons). A missing target or a link is
never as built, and only the task's own targets are looked at."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from doit.dependency import Dependency, SqliteDB

from tests.unit.test_attacks_stop71_kept import PLANTED, REAL, _config, _plant
from toolscript.pipeline.artifacts import CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import run_pipeline


def _forge(layout: CacheLayout, task: str, targets: dict[str, str]) -> None:
    database = Dependency(SqliteDB, str(layout.dep_file))
    values = database.get_values(task)
    database._set(task, "_values_:", {**values, "targets": targets})
    database.close()


@pytest.mark.parametrize(
    "forged",
    [
        pytest.param(lambda layout: {"nothing-here": ""}, id="a path that does not exist"),
        pytest.param(
            lambda layout: {str(layout.server_offered("github")) + ".gone": ""},
            id="a sibling that does not exist",
        ),
        pytest.param(lambda layout: {"planted-link": "linked"}, id="a planted link"),
    ],
)
def test_a_forged_record_does_not_vouch_for_a_planted_tool_list(
    tmp_path: Path, forged: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "planted-link").symlink_to(tmp_path / "anything")
    config, layout = _config(tmp_path), CacheLayout(tmp_path / ".toolscript")
    assert run_pipeline(config, layout, SnapshotSource({"time": [REAL]})).code == 0
    _plant(layout)
    _forge(layout, "fetch:github", forged(layout))
    assert run_pipeline(config, layout, SnapshotSource({"time": [REAL]})).code == 0
    assert PLANTED not in layout.module.read_text()
    assert json.loads(layout.server_tools("github").read_text()) == []


def test_a_record_of_the_offered_file_alone_does_not_vouch_for_the_tools(
    tmp_path: Path,
) -> None:
    config, layout = _config(tmp_path), CacheLayout(tmp_path / ".toolscript")
    assert run_pipeline(config, layout, SnapshotSource({"time": [REAL]})).code == 0
    _plant(layout)
    layout.server_offered("github").unlink()  # its digest: a missing file's
    _forge(layout, "fetch:github", {str(layout.server_offered("github")): ""})
    assert run_pipeline(config, layout, SnapshotSource({"time": [REAL]})).code == 0
    assert PLANTED not in layout.module.read_text()
