"""Stop 77: the agent writes ``toolscript approve RUN_ID`` into a file (Claude Code's Write
tool, which the Bash hook never sees, or an earlier command spelling it out of sight), then
runs the file: ``bash approve.sh`` named nothing the hook reads, and the approval ran
unasked. The hook reads the script file a command runs (``sh FILE``, ``python FILE``,
``./FILE``, ``source FILE``) as it reads the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolscript.cli.hooks import approval_decision

HOOK = Path(__file__).resolve().parents[2] / "plugin" / "hooks" / "pre-tool-use.sh"
APPROVE = "toolscript approve 20261124-101500-3f9a1c\n"


def _hook(command: str, cwd: Path) -> str:
    """What the plugin's hook script answers, run as Claude Code runs it (toolscript real)."""
    event = {"tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(cwd)}
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["bash", str(HOOK)],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        cwd=cwd,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("name", "text", "command"),
    [
        ("later.sh", APPROVE, "bash later.sh"),
        ("later.sh", APPROVE, "sh ./later.sh && echo done"),
        ("later.sh", "#!/bin/sh\n" + APPROVE, "./later.sh"),
        ("later.sh", APPROVE, "source later.sh"),
        (
            "later.py",
            "import subprocess\nsubprocess.run(['toolscript', 'approve', 'x'])\n",
            "python3 later.py",
        ),
        ("later.py", "from toolscript.store import runlog\n", "python3 later.py"),
    ],
)
def test_a_file_written_then_run_is_read(
    tmp_path: Path, name: str, text: str, command: str
) -> None:
    (tmp_path / name).write_text(text)
    (tmp_path / name).chmod(0o755)
    answer = _hook(command, tmp_path)
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "ask", answer


def test_a_harmless_file_run_is_not_asked_about(tmp_path: Path) -> None:
    (tmp_path / "build.sh").write_text("echo building\nls -la\n")
    assert _hook("bash build.sh", tmp_path) == ""


def test_a_long_file_naming_an_approval_past_the_read_limit_is_asked(tmp_path: Path) -> None:
    (tmp_path / "long.sh").write_text("echo padding\n" * 20_000 + APPROVE)
    event = {"tool_input": {"command": "bash long.sh"}, "cwd": str(tmp_path)}
    decision = approval_decision(event)
    assert decision is not None
    assert decision["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_a_fifo_run_is_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.sh")
    assert (
        approval_decision({"tool_input": {"command": "sh pipe.sh"}, "cwd": str(tmp_path)}) is None
    )


@pytest.mark.parametrize(
    "text",
    [
        'eval "$(ssh-agent)"\nexec "$@"\n',
        "import importlib\nimportlib.import_module('json')\n",
    ],
)
def test_a_program_of_its_own_is_not_asked_about(tmp_path: Path, text: str) -> None:
    """A file naming neither toolscript nor an approval runs unasked, its own eval or
    import_module too (asked, every script run would be a question nobody reads)."""
    (tmp_path / "tool.sh").write_text(text)
    assert (
        approval_decision({"tool_input": {"command": "bash tool.sh"}, "cwd": str(tmp_path)}) is None
    )


def test_a_file_joining_toolscript_from_pieces_is_asked_about(tmp_path: Path) -> None:
    (tmp_path / "later.py").write_text(
        "import subprocess\nsubprocess.run(['tool' + 'script', 'appr' + 'ove', 'x'])\n"
    )
    decision = approval_decision(
        {"tool_input": {"command": "python3 later.py"}, "cwd": str(tmp_path)}
    )
    assert decision is not None


@pytest.mark.parametrize(
    "command",
    [
        'bash "my dir/later.sh"',
        "bash linked.sh",  # a link to it
        "sh 'linked dir/later.sh'",  # a folder linked
        "cd 'my dir' && bash later.sh",  # found where the command's cd leads
        "cd my\\ dir; ./later.sh",
        "pushd 'my dir' >/dev/null; source later.sh",
        "(cd 'linked dir' && python3 later.sh)",
        "bash < linked.sh",  # a shell reading its script from stdin
        "sh -s < 'my dir/later.sh'",
    ],
)
def test_a_file_run_through_a_link_a_space_a_cd_or_stdin_is_read(
    tmp_path: Path, command: str
) -> None:
    """features_meet8: the plugin's hook (toolscript real) x a script file on a path with
    spaces, a linked file or folder: asked. Run after a `cd` (it was looked for in the
    command's first folder only) or fed to a shell's stdin, it ran unasked."""
    (tmp_path / "my dir").mkdir()
    (tmp_path / "my dir" / "later.sh").write_text(APPROVE)
    (tmp_path / "linked.sh").symlink_to(tmp_path / "my dir" / "later.sh")
    (tmp_path / "linked dir").symlink_to(tmp_path / "my dir")
    answer = _hook(command, tmp_path)
    assert answer, command
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "ask", answer


@pytest.mark.parametrize("command", ["cat < later.sh", "bash < build.sh", "cd sub && bash x.sh"])
def test_a_file_only_read_or_harmless_is_not_asked_about(tmp_path: Path, command: str) -> None:
    (tmp_path / "later.sh").write_text(APPROVE)
    (tmp_path / "build.sh").write_text("echo building\n")
    assert approval_decision({"tool_input": {"command": command}, "cwd": str(tmp_path)}) is None
