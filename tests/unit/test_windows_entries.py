"""What a server entry copied from a Windows client's config is told to become here."""

from __future__ import annotations

import pytest

from toolscript.upstream.server import windows_shell_hint


@pytest.mark.parametrize(
    ("command", "args", "program", "rest"),
    [
        ("cmd", ["/c", "npx", "-y", "srv"], "npx", ["-y", "srv"]),
        ("cmd", ["/c", "npx -y srv"], "npx", ["-y", "srv"]),  # the command as one argument
        ("C:\\Windows\\System32\\cmd.exe", ["/C", "npx.cmd", "-y", "srv"], "npx", ["-y", "srv"]),
    ],
)
def test_the_windows_shell_is_replaced_by_the_program_it_runs(
    command: str, args: list[str], program: str, rest: list[str]
) -> None:
    hint = windows_shell_hint(command, args)
    assert "is the Windows shell" in hint
    assert f'"command": "{program}", "args": {rest!r}'.replace("'", '"') in hint


def test_a_windows_launcher_name_is_told_its_name_here() -> None:
    assert '"command": "npx"' in windows_shell_hint("npx.cmd", ["-y", "srv"])


@pytest.mark.parametrize(
    ("command", "args"), [("npx", ["-y", "srv"]), ("cmd", []), ("cmd", ["/c"]), (".exe", [])]
)
def test_other_commands_get_no_hint(command: str, args: list[str]) -> None:
    assert windows_shell_hint(command, args) == ""
