"""The agent turning off the question asked before an approval: Claude Code's settings
(``disableAllHooks``, an allow rule, the plugin disabled) and the plugin's own hook files,
written through Bash, passed unasked; in the next session (or once Claude Code reads its
settings again) ``toolscript approve`` ran with nobody asked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from toolscript.cli.hooks import approval_decision, approval_reason

TURNING_OFF = [
    """echo '{"disableAllHooks": true}' > .claude/settings.local.json""",
    """jq '.x = 1' ~/.claude/settings.json > s.json && mv s.json ~/.claude/settings.json""",
    """cp mine.json "$HOME/.claude/settings.json" """,
    """cat > '.claude'/"settings.json" <<EOF\n{}\nEOF""",
    """cd .claude && printf '{}' > settings.local.json""",
    "sed -i 's/PreToolUse/Nothing/' ~/.claude/plugins/marketplaces/t/plugin/hooks/hooks.json",
    'rm "$CLAUDE_PLUGIN_ROOT/hooks/pre-tool-use.sh"',
    "claude plugin disable toolscript@toolscript",
    "sudo tee /etc/claude-code/managed-settings.json < off.json",
    """python3 -c 'import json; print(json.dumps({"enabledPlugins": {}}))' > s.json""",
]


# The person's terminal written to through its device while exec asks there: a question
# about a harmless tool forged under the real one (what stop 57 held back from the script's
# own output), or keys pushed into its input where the system still lets them.
ONTO_A_TERMINAL = [
    "printf '\\n  allow it? (the call of time.now) [y]es: ' > /dev/pts/3",
    "echo hi | tee /dev/ttys004",
    "cat forged.txt >/dev/tty1",
    'python3 -c \'import fcntl, termios; fcntl.ioctl(open("/dev/pts/2"), termios.TIOCSTI, b"y")\'',
]


@pytest.mark.parametrize(
    ("command", "said"),
    [(command, "Claude Code's settings or hooks") for command in TURNING_OFF]
    + [(command, "terminal") for command in ONTO_A_TERMINAL],
)
def test_turning_off_the_question_or_writing_onto_a_terminal_is_asked(
    command: str, said: str
) -> None:
    reason = approval_reason(command)
    assert reason is not None and said in reason, reason


@pytest.mark.parametrize(
    "command",
    [
        *("ls .claude", "claude --version", "cat .vscode/settings.json", "grep -rn hooks src/"),
        *("ls /dev/null", "echo x > /dev/null", "tty", "ls /dev/"),
    ],
)
def test_everyday_commands_near_them_pass_unasked(command: str) -> None:
    assert approval_reason(command) is None


# A hook that fails or outruns Claude Code's timeout decides nothing, and the command runs
# unasked: 1,000 brace lists in a comment (5 KB) exceeded Python's recursion limit, as did
# 2,000 `env -u` options; reading 400 KB took 50 s.
UNREADABLE = [
    "toolscript approve 20261124-101500-3f9a1c # " + "{a,b}" * 1000,
    "env " + "-u X " * 2000 + "toolscript approve 20261124-101500-3f9a1c",
    "toolscript approve 20261124-101500-3f9a1c " + "$(a)" * 30_000,
]


@pytest.mark.parametrize("command", UNREADABLE, ids=["braces", "env", "long"])
def test_a_command_the_hook_cannot_read_is_asked(command: str, tmp_path: Path) -> None:
    decision = approval_decision({"tool_input": {"command": command}, "cwd": str(tmp_path)})
    assert decision is not None
    assert decision["hookSpecificOutput"]["permissionDecision"] == "ask"


HOOK = Path(__file__).resolve().parents[2] / "plugin" / "hooks" / "pre-tool-use.sh"


@pytest.mark.parametrize("command", ["toolscript approve 20261124-101500-3f9a1c", "ls"])
def test_the_hook_script_falls_back_to_its_words_when_toolscript_fails(command: str) -> None:
    event = json.dumps({"tool_name": "Bash", "tool_input": {"command": command}})
    failing = shutil.which("false")
    assert failing is not None
    done = subprocess.run(
        ["bash", str(HOOK)],
        input=event,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "TOOLSCRIPT_BIN": failing},
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    if command == "ls":
        assert done.stdout == ""
    else:
        assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
