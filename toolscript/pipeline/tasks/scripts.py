"""``scripts``: the saved scripts checked against the tools, and the module they join.

The ``module`` task writes the tools' module (``tools-only.ts``); this task writes the
whole module (``tools.ts``, what the gateway serves) and ``saved-scripts.json`` (which
scripts check, and the errors of those that do not). Every saved script (``store/savedscripts.py``) is type-checked with ``deno check`` against the
module the tools make plus the ``scripts`` object itself, in rounds: a script with errors
leaves the module, and the rest are checked again (a script calling a broken one through
``scripts`` breaks with it). Only scripts that check are in the module, so one broken
script never fails the type check of every other run; the broken ones are listed with
their errors (``list-scripts``, ``gateway status``) and their files are kept.

The task is due when the tools' module, any saved script or the check's options
(``plumbing/checkoptions.py``: the libs, without Node's types) change (names, digests and
the options' tag are in its ``config_changed``). Verdicts are kept by the hash of
everything checked, in ``saved-scripts.json`` and in memory (the gateway checks a script
before saving it; the task then reuses that verdict).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doit.tools import config_changed

from toolscript.pipeline.artifacts import read_artifact, write_if_changed
from toolscript.pipeline.tasks.packages import read_packages
from toolscript.pipeline.tasks.settings import TaskSettings, target_digests, targets_as_built
from toolscript.plumbing.privatefile import write_private
from toolscript.store.packages import packages_section
from toolscript.store.savedscripts import (
    SCRIPTS_DIRNAME,
    SavedScript,
    contract_source,
    file_uses,
    load_saved,
    specifier,
)

__all__ = [
    "CHECK_TIMEOUT",
    "CONTRACT_MESSAGE",
    "ScriptVerdicts",
    "ScriptsTask",
    "check_saved",
    "compose_module",
    "load_verdicts",
    "save_verdicts",
]

log = logging.getLogger("toolscript.pipeline")

CHECK_TIMEOUT = 180.0  # seconds for one deno check of every saved script
MAX_ERRORS = 20  # per script, in listings
_BLOCK_START = re.compile(r"^(?:TS\d+ \[ERROR\]|error): ", re.MULTILINE)
_AT = re.compile(r"at (file://\S+?):(\d+):(\d+)")
_CODE = re.compile(r"^(TS\d+) \[ERROR\]: ")
# Where the check's import map sends every file but its own: deno reads none of the disk
# for a saved script (a reference to a key file would have its words quoted in the errors).
REFUSED_FILE_URL = "https://local-files-are-not-available-to-saved-scripts.invalid/"
FILE_USE_MESSAGE = (
    'a saved script reads no file: it may import "toolscript" only (remove the reference)'
)


MEMORY = 16  # verdicts kept in memory, newest last


@dataclass
class ScriptVerdicts:
    """What the last check said: the scripts in the module and the broken ones' errors."""

    key: str = ""
    passing: list[str] = field(default_factory=list)
    broken: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # files skipped (names, sizes)


_remembered: dict[str, ScriptVerdicts] = {}


class ScriptsTask:
    def __init__(self, settings: TaskSettings) -> None:
        self.settings = settings

    def tasks(self) -> dict[str, Any]:
        """Check the saved scripts (toolscripts/) and write the whole module with them."""
        layout = self.settings.layout
        saved, skipped = load_saved(self.settings.project_dir)
        return {
            "actions": [self.build],
            "file_dep": [layout.tools_only, layout.packages],
            "targets": [layout.module, layout.saved_scripts],
            "uptodate": [
                config_changed(
                    {
                        "scripts": [(s.name, s.digest) for s in saved],
                        "skipped": skipped,  # what saved-scripts.json warns of
                        "folder": str(self.settings.project_dir),
                        "generator": self.settings.generator,
                        # the check's options: saved scripts checked under others again
                        "check": _check_tag() if saved else "",
                    }
                ),
                targets_as_built,
            ],
            "clean": True,
            "verbosity": 0,
        }

    def build(self) -> dict[str, Any]:
        layout = self.settings.layout
        tools = read_artifact(layout.tools_only)
        saved, warnings = load_saved(self.settings.project_dir)
        verdicts = check_saved(
            tools, saved, layout.saved_check, load_verdicts(layout.saved_scripts)
        )
        verdicts.warnings = warnings
        save_verdicts(layout.saved_scripts, verdicts)
        passing = [s for s in saved if s.name in verdicts.passing]
        packages, lock = read_packages(layout.packages)
        write_if_changed(
            layout.module, compose_module(tools, passing) + packages_section(packages, lock)
        )
        for warning in warnings:
            log.warning("saved scripts: %s", warning)
        for name, errors in verdicts.broken.items():
            log.warning(
                "saved scripts: %s does not type-check, left out of the module: %s",
                name,
                errors[0],
            )
        return target_digests([layout.module])


def compose_module(tools_module: str, scripts: list[SavedScript]) -> str:
    from toolscript.codegen.module import scripts_section

    return tools_module + scripts_section(
        tools_module, [(s.name, s.description, s.digest) for s in scripts]
    )


def _check_tag() -> str:
    from toolscript.plumbing.checkoptions import check_tag

    return check_tag()


def _verdict_key(tools_module: str, scripts: list[SavedScript]) -> str:
    digest = hashlib.sha256(f"{_check_tag()}\0{tools_module}".encode())
    for script in scripts:
        digest.update(f"\0{script.name}\0{script.digest}".encode())
    return digest.hexdigest()[:24]


def check_saved(
    tools_module: str, scripts: list[SavedScript], workdir: Path, cached: ScriptVerdicts | None
) -> ScriptVerdicts:
    """Which of ``scripts`` type-check against ``tools_module`` (and each other)."""
    key = _verdict_key(tools_module, scripts)
    if not scripts:
        return ScriptVerdicts(key=key)
    reading = {s.name for s in scripts if file_uses(s.source)}
    # saved-scripts.json is the project's: one that passes a script reading a file is planted
    if cached is not None and cached.key == key and not reading & set(cached.passing):
        return cached
    if key in _remembered:
        return _remembered[key]
    verdicts = ScriptVerdicts(key=key)
    for script in scripts:
        uses = file_uses(script.source)
        if uses:
            where = f"{SCRIPTS_DIRNAME}/{script.name}.ts"
            verdicts.broken[script.name] = [f"{where}: {use}: {FILE_USE_MESSAGE}" for use in uses]
    remaining = [s for s in scripts if s.name not in verdicts.broken]
    for _ in range(len(scripts)):
        if not remaining:
            break
        errors = _check_round(tools_module, remaining, workdir)
        if not errors:
            break
        verdicts.broken.update(errors)
        remaining = [s for s in remaining if s.name not in errors]
    verdicts.passing = [s.name for s in remaining]
    _remembered[key] = verdicts
    while len(_remembered) > MEMORY:
        del _remembered[next(iter(_remembered))]
    return verdicts


def _check_round(
    tools_module: str, scripts: list[SavedScript], workdir: Path
) -> dict[str, list[str]]:
    """One ``deno check`` of ``scripts`` with the module that offers them all: the errors
    of each script that has any."""
    from toolscript.codegen.module import with_members
    from toolscript.plumbing.checkoptions import check_imports, shared_check_config, uses_node
    from toolscript.plumbing.denobinary import deno_binary, deno_environment

    if workdir.is_symlink():  # a cloned repository's `.toolscript/` may hold one: not followed
        workdir.unlink()
    shutil.rmtree(workdir, ignore_errors=True)
    folder = workdir / "scripts"
    module_text = compose_module(tools_module, scripts)
    module = write_private(workdir / "module.ts", module_text)
    imports = {"toolscript": module.as_uri(), "file:///": REFUSED_FILE_URL}
    imports[module.as_uri()] = module.as_uri()
    files = {}
    for script in scripts:
        path = write_private(folder / f"{script.name}.ts", script.source)
        imports[specifier(script.name)] = imports[path.as_uri()] = path.as_uri()
        files[path.as_uri()] = script.name
    names = [s.name for s in scripts]
    contract = write_private(workdir / "contract.ts", contract_source(names))
    imports[contract.as_uri()] = contract.as_uri()
    # Lean libs, unless a script uses Node: then Node's types for all, as for their runs.
    node = any(uses_node(script.source) for script in scripts)
    config = None if node else shared_check_config()
    if config is not None:
        imports.update(check_imports())
    import_map = write_private(workdir / "importmap.json", json.dumps({"imports": imports}))
    command = [
        deno_binary(),
        "check",
        "--quiet",
        f"--config={config}" if config is not None else "--no-config",  # a run's libs
        "--no-lock",
        "--no-npm",
        "--no-remote",
        f"--import-map={import_map}",
        str(contract),
        *(str(folder / f"{name}.ts") for name in names),
    ]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            env={**deno_environment(), "NO_COLOR": "1"},
            timeout=CHECK_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        problem = f"the saved scripts could not be type-checked ({exc})"
        return {name: [problem] for name in names}
    if done.returncode == 0:
        return {}
    output = done.stdout.decode("utf-8", "replace") + done.stderr.decode("utf-8", "replace")
    module_lines = module_text.split("\n")
    errors: dict[str, list[str]] = {}
    unplaced: list[str] = []
    for block in _blocks(output):
        found = _AT.search(block)
        message = block.strip().split("\n", 1)[0]
        if found is None:
            unplaced.append(message)
            continue
        url, line, column = found[1], int(found[2]), int(found[3])
        name, where = _place(url, line, column, files, contract, names, module, module_lines)
        if name is None:
            unplaced.append(f"{message} ({where})")
            continue
        said = errors.setdefault(name, [])
        if len(said) < MAX_ERRORS:  # the members of a type it names (a pass over the module)
            message = with_members(message, module_text)
        said.append(_readable(message, where))
    if unplaced and not errors:
        # Nothing says which script: every script of the round is held out (each one
        # left in would fail every run's type check).
        return {name: [_readable(m, "") for m in unplaced[:MAX_ERRORS]] for name in names}
    return {name: found[:MAX_ERRORS] for name, found in errors.items()}


def _blocks(output: str) -> list[str]:
    starts = [m.start() for m in _BLOCK_START.finditer(output)]
    return [output[a:b] for a, b in zip(starts, [*starts[1:], len(output)], strict=True)]


def _place(
    url: str,
    line: int,
    column: int,
    files: dict[str, str],
    contract: Path,
    names: list[str],
    module: Path,
    module_lines: list[str],
) -> tuple[str | None, str]:
    """The script an error is about, and where it is as the user reads it."""
    if url in files:
        return files[url], f"{SCRIPTS_DIRNAME}/{files[url]}.ts:{line}:{column}"
    if url == contract.as_uri() and 2 <= line < 2 + len(names):
        return names[line - 2], f"{SCRIPTS_DIRNAME}/{names[line - 2]}.ts"
    if url == module.as_uri() and 0 < line <= len(module_lines):
        named = re.search(r'"toolscript/scripts/(\w+)\.ts"', module_lines[line - 1])
        if named and named[1] in names:
            return named[1], f"{SCRIPTS_DIRNAME}/{named[1]}.ts"
    return None, f"{url}:{line}:{column}"


CONTRACT_MESSAGE = (
    "its default export must be an async function of one object argument (its inputs), "
    "like `export default async function name(input: { team: string }) { ... }`"
)


def _readable(message: str, where: str) -> str:
    """``toolscripts/x.ts:3:7: TS2322 Type ...``; the contract's errors said plainly."""
    code = _CODE.match(message)
    text = message[code.end() :] if code else message.removeprefix("error: ")
    if "has no default export" in text or "Saved<" in text or "'true'" in text:
        text = CONTRACT_MESSAGE
    prefix = f"{where}: " if where else ""
    return f"{prefix}{code[1] + ' ' if code else ''}{text}"


def load_verdicts(path: Path) -> ScriptVerdicts | None:
    try:
        data = json.loads(read_artifact(path))
        return ScriptVerdicts(
            key=str(data["key"]),
            passing=[str(n) for n in data["passing"]],
            broken={str(k): [str(e) for e in v] for k, v in data["broken"].items()},
            warnings=[str(w) for w in data.get("warnings", [])],
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_verdicts(path: Path, verdicts: ScriptVerdicts) -> None:
    data = {
        "key": verdicts.key,
        "passing": verdicts.passing,
        "broken": verdicts.broken,
        "warnings": verdicts.warnings,
    }
    write_if_changed(path, json.dumps(data, indent=1) + "\n")
