"""Stop 71: a server whose tools change at every listing made a new module a minute, each
written by the warm checker into the user's cache and kept a month. A module the checker
wrote is removed when replaced, with what is beside it, only if nothing used it since
(exec's use, another gateway's ``touch``); never through a link."""

from __future__ import annotations

import os
from pathlib import Path

from toolscript.store.cacheprune import drop_module_if_unused, mark_module_written, touch

DIGEST = "0123456789abcdef"


def _written(root: Path) -> tuple[Path, int]:
    modules, checker = root / "modules", root / "checker"
    modules.mkdir(parents=True)
    checker.mkdir()
    module = modules / f"{DIGEST}.ts"
    module.write_text("export const tools = {};\n")
    (modules / f"{DIGEST}.scripts").mkdir()
    (modules / f"{DIGEST}.scripts" / "saved.ts").write_text("")
    (modules / f"{DIGEST}.lock").write_text("{}")
    for kind in ("deno", "importmap"):
        (checker / f"{kind}-{DIGEST}.json").write_text("{}")
    (modules / "fedcba9876543210.ts").write_text("another module\n")
    marked = mark_module_written(module)
    assert marked is not None
    return module, marked


def test_a_module_nothing_used_is_removed_with_what_is_beside_it(tmp_path: Path) -> None:
    _module, marked = _written(tmp_path)
    assert drop_module_if_unused(tmp_path, DIGEST, marked)
    assert sorted(p.name for p in (tmp_path / "modules").iterdir()) == ["fedcba9876543210.ts"]
    assert list((tmp_path / "checker").iterdir()) == []


def test_a_module_a_run_used_since_is_kept(tmp_path: Path) -> None:
    module, marked = _written(tmp_path)
    touch([module])  # what exec does as it takes the module (and a gateway every 6 h)
    assert not drop_module_if_unused(tmp_path, DIGEST, marked)
    assert module.exists() and (tmp_path / "checker" / f"deno-{DIGEST}.json").exists()


def test_no_name_but_a_hash_and_no_link_is_removed(tmp_path: Path) -> None:
    module, marked = _written(tmp_path)
    assert not drop_module_if_unused(tmp_path, "../checker/deno", marked)
    elsewhere = tmp_path / "elsewhere.ts"
    elsewhere.write_text("yours\n")
    module.unlink()
    module.symlink_to(elsewhere)
    os.utime(module, ns=(marked, marked), follow_symlinks=False)
    assert not drop_module_if_unused(tmp_path, DIGEST, marked)
    assert elsewhere.exists() and module.is_symlink()
