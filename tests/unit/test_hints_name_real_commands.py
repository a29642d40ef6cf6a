"""Every `toolscript ...` command that the package's messages and the docs tell a user to run
exists: a hint naming a command that is not there (`toolscript gateway stop`, twice) sends
the user to an error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

ROOT = Path(__file__).resolve().parents[2]
# `toolscript WORD [WORD]`, in backticks (messages and docs) or a docstring's example line
# not commands: docs/plugin.md's spellings an agent might hide `approve` in (`appr`+`ove`)
NOT_COMMANDS = {("appr", "")}
_CONTINUED = re.compile(r'"\s*\n\s*[rf]?"')
_NAMED = re.compile(r"`toolscript ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?(?=[\s`])")


def _commands() -> Any:
    """The command tree, as `--help` shows it (a group's ``commands`` by name)."""
    from toolscript.cli.main import app  # (its commands registered at import)

    return typer.main.get_command(app)


def _named() -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    sources = [*ROOT.joinpath("toolscript").rglob("*.py"), *ROOT.joinpath("docs").glob("*.md")]
    for path in [*sources, ROOT / "README.md"]:
        text = path.read_text()
        if path.suffix == ".py":
            # A message's string literals that Python joins ("... `toolscript gateway "
            # "stop`") read as one (line numbers after it then run a little short).
            text = _CONTINUED.sub("", text)
        for number, line in enumerate(text.splitlines(), 1):
            for match in _NAMED.finditer(line):
                where = f"{path.relative_to(ROOT)}:{number}"
                found.setdefault((match[1], match[2] or ""), where)
    return found


def test_every_command_a_message_or_the_docs_name_exists() -> None:
    root = _commands()
    named = _named()
    assert ("gateway", "status") in named  # the scan finds what it must
    missing = []
    for (first, second), where in named.items():
        if (first, second) in NOT_COMMANDS:
            continue
        if first == "help":  # `toolscript help exec` (cli/entry.py): exec's --help
            if not second:
                continue
            first, second = second, ""
        command = root.commands.get(first)
        if command is None:
            missing.append(f"{where}: toolscript {first}")
        elif second and second not in getattr(command, "commands", {second: None}):
            missing.append(f"{where}: toolscript {first} {second}")
    assert missing == []
