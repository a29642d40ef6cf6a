"""The npm cache a run of a module with packages sees: its own lock's packages only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.store.packages import locked_names, npm_set, set_read_only


def test_a_lock_names_packages_never_paths() -> None:
    lock = {
        "npm": {
            "left-pad@1.3.0": {},
            "@types/node@22.0.0_undici-types@6.0.0": {},
            "../../../../etc@1.0.0": {},
            "..@1.0.0": {},
            "@scope/../x@1.0.0": {},
            ".hidden@1.0.0": {},
        }
    }
    assert locked_names(json.dumps(lock)) == {"left-pad", "@types/node"}
    assert locked_names("not json") == set() and locked_names("[]") == set()


def test_a_runs_npm_cache_holds_only_its_locks_packages(tmp_path: Path) -> None:
    shared = tmp_path / "npm" / "registry.npmjs.org"
    for name in ("left-pad", "is-number", "@scope/pkg"):
        (shared / name / "1.0.0").mkdir(parents=True)
        (shared / name / "1.0.0" / "index.js").write_text("1")
    set_read_only(tmp_path / "npm", True)
    lock = json.dumps({"npm": {"left-pad@1.0.0": {}, "@scope/pkg@1.0.0": {}}})
    built = npm_set(tmp_path, lock)
    assert sorted(p.name for p in (built / "registry.npmjs.org").iterdir()) == [
        "@scope",
        "left-pad",
    ]
    assert (built / "registry.npmjs.org" / "@scope" / "pkg" / "1.0.0" / "index.js").is_file()
    assert npm_set(tmp_path, lock) == built  # once per lock

    # A package the set lacked and the shared cache has again: built anew, with it.
    lock_b = json.dumps({"npm": {"is-number@1.0.0": {}, "gone@1.0.0": {}}})
    first = npm_set(tmp_path, lock_b)
    assert not (first / "registry.npmjs.org" / "gone").exists()
    set_read_only(tmp_path / "npm", False)
    (shared / "gone" / "1.0.0").mkdir(parents=True)
    (shared / "gone" / "1.0.0" / "index.js").write_text("1")
    set_read_only(tmp_path / "npm", True)
    again = npm_set(tmp_path, lock_b)
    assert again == first and (again / "registry.npmjs.org" / "gone" / "1.0.0").is_dir()
    # Removing the old set left the shared cache's files as they were: read-only.
    assert (shared / "is-number" / "1.0.0" / "index.js").stat().st_mode & 0o222 == 0
    assert (again / "registry.npmjs.org").stat().st_mode & 0o222 == 0


def test_after_a_fetch_the_lock_keeps_only_the_declared_packages(tmp_path: Path) -> None:
    from toolscript.pipeline.tasks.packages import declared_only

    lock = tmp_path / ".toolscript.lock"
    planted = {
        "version": "5",
        "specifiers": {
            "npm:left-pad@1": "1.3.0",
            "npm:left-pad@0.0.3": "0.0.3",  # the declared package at another version
            "npm:is-number@7": "7.0.0",  # another package
        },
        "jsr": {"@std/path@1.0.0": {"integrity": "x"}},
        "remote": {"https://example.com/x.ts": "y"},
        "redirects": {"https://example.com/a": "https://example.com/b"},
        "npm": {
            "left-pad@1.3.0": {"integrity": "z"},
            "is-number@7.0.0": {"integrity": "w"},  # nothing kept reaches it
        },
        "workspace": {"dependencies": ["npm:left-pad@1"]},
    }
    lock.write_text(json.dumps(planted))
    kept = json.loads(declared_only(lock, ["npm:left-pad@^1"]))
    assert kept == {
        "version": "5",
        "specifiers": {"npm:left-pad@1": "1.3.0"},
        "npm": {"left-pad@1.3.0": {"integrity": "z"}},
        "workspace": {"dependencies": ["npm:left-pad@1"]},
    }
    assert json.loads(lock.read_text()) == kept
    untouched = json.dumps(kept, indent=2) + "\n"
    lock.write_text(untouched)
    assert declared_only(lock, ["npm:left-pad@^1"]) == untouched


def test_the_lock_keeps_the_dependencies_its_packages_reach() -> None:
    from toolscript.pipeline.tasks.packages import _reached

    npm = {
        "chalk@4.1.2": {"dependencies": ["ansi-styles", "supports-color"]},
        "ansi-styles@4.3.0": {},
        "supports-color@7.2.0": {"optionalDependencies": ["has-flag@4.0.0"]},
        "has-flag@4.0.0": {},
        "planted@1.0.0": {},
    }
    assert sorted(_reached(npm, {"npm:chalk@4": "4.1.2"})) == [
        "ansi-styles@4.3.0",
        "chalk@4.1.2",
        "has-flag@4.0.0",
        "supports-color@7.2.0",
    ]
    # A dependency it cannot follow: everything kept (a run must find what it needs).
    npm["chalk@4.1.2"]["dependencies"].append("unknown")
    assert _reached(npm, {"npm:chalk@4": "4.1.2"}) == npm


def test_a_set_another_run_built_meanwhile_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of one lock at once: the second keeps the first's set (a Deno may be
    reading it) and drops its own."""
    from toolscript.store import packages

    shared = tmp_path / "npm" / "registry.npmjs.org" / "left-pad" / "1.0.0"
    shared.mkdir(parents=True)
    (shared / "index.js").write_text("1")
    lock = json.dumps({"npm": {"left-pad@1.0.0": {}}})
    link_tree = packages._link_tree
    theirs: list[Path] = []
    inode: list[int] = []

    def meanwhile(source: Path, target: Path) -> None:
        if not theirs:
            theirs.append(Path("building"))
            theirs[0] = npm_set(tmp_path, lock)  # the other run, done first
            inode.append(theirs[0].stat().st_ino)
        link_tree(source, target)

    monkeypatch.setattr(packages, "_link_tree", meanwhile)
    assert npm_set(tmp_path, lock) == theirs[0] and theirs[0].stat().st_ino == inode[0]
    assert [p.name for p in (tmp_path / "npm-sets").iterdir()] == [theirs[0].name]
