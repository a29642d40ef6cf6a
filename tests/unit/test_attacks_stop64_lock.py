"""A cloned repository's ``.toolscript.lock`` naming another package's file for a declared
one (``foreign_tarballs``): found, so the fetch makes the lock anew from the registry."""

from __future__ import annotations

import json

from toolscript.pipeline.tasks.packages import foreign_tarballs

INTEGRITY = "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng=="


def lock(entries: dict[str, dict[str, str]]) -> str:
    return json.dumps({"version": "5", "npm": entries})


def test_a_file_of_another_package_or_host_is_found() -> None:
    planted = lock(
        {
            "left-pad@1.3.0": {
                "integrity": INTEGRITY,
                "tarball": "https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz",
            },
            "@scope/a@1.0.0_react@18.2.0": {
                "integrity": INTEGRITY,
                "tarball": "https://registry.npmjs.org/@scope/a/-/a-1.0.0.tgz?x=/evil-1.0.0.tgz",
            },
            "b@2.0.0": {"integrity": INTEGRITY, "tarball": "http://127.0.0.1:9/b-2.0.0.tgz"},
        }
    )
    assert foreign_tarballs(planted) == ["left-pad@1.3.0", "@scope/a@1.0.0_react@18.2.0", "b@2.0.0"]


def test_a_packages_own_file_or_none_is_kept() -> None:
    own = lock(
        {
            "left-pad@1.3.0": {"integrity": INTEGRITY},
            "@scope/a@1.0.0_react@18.2.0": {
                "integrity": INTEGRITY,
                "tarball": "https://registry.npmjs.org/@scope/a/-/a-1.0.0.tgz",
            },
        }
    )
    assert foreign_tarballs(own) == []
    mirror = lock(
        {"c@1.0.0": {"integrity": INTEGRITY, "tarball": "https://npm.example/r/c/-/c-1.0.0.tgz"}}
    )
    assert foreign_tarballs(mirror, "https://npm.example/r") == []
    assert foreign_tarballs(mirror) == ["c@1.0.0"]


def test_a_lock_that_is_no_json_object_is_left_to_deno() -> None:
    assert foreign_tarballs("not json") == []
    assert foreign_tarballs("[1, 2]") == []
    assert foreign_tarballs('{"npm": []}') == []
