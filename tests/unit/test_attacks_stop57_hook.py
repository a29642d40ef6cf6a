"""The trusted configs' file is an approval too: an agent that writes one trusts its own
edit of a project's policy (``"policy": {"ask": "never"}``), and its next exec makes an
``ask`` call unasked. Made for real, the attack was: edit ``.toolscript.json``, write
``{"<path>": {"sha256": "<its hash>"}}`` to ``/tmp/c/toolscript/trusted.json``, run
``XDG_CONFIG_HOME=/tmp/c toolscript exec ...``: the destructive call ran. The PreToolUse
hook makes Claude Code ask before each way of choosing or writing that file."""

from __future__ import annotations

import pytest

from toolscript.cli.hooks import approval_decision


def _decision(command: str) -> dict[str, str] | None:
    decision = approval_decision({"tool_name": "Bash", "tool_input": {"command": command}})
    return None if decision is None else decision["hookSpecificOutput"]


def _assert_asked(command: str) -> None:
    output = _decision(command)
    assert output is not None, command
    assert output["permissionDecision"] == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "XDG_CONFIG_HOME=/tmp/c toolscript exec 'return 1'",
        "env XDG_CONFIG_HOME=/tmp/c toolscript exec -",
        "TOOLSCRIPT_CONFIG_HOME=/tmp/c toolscript gateway start",
        "export TOOLSCRIPT_CONFIG_HOME=/tmp/c && toolscript run deploy",
        "HOME=/tmp/fake toolscript exec 'return 1'",
        "export HOME=/tmp/fake; toolscript list-tools",
        "cp /tmp/t.json /tmp/c/toolscript/trusted.json",
        "cd ~/.config && cp /tmp/t.json toolscript/trusted.json",
        "cp /tmp/t.json ~/.config/t*/",
        "cd ~/.config",
        "env $(cat /tmp/vars) toolscript exec 'return 1'",
        "sudo -E env `cat /tmp/vars` toolscript gateway start",
    ],
)
def test_choosing_or_writing_the_trusted_configs_file_is_asked(command: str) -> None:
    _assert_asked(command)


@pytest.mark.parametrize(
    "command",
    [
        "cat ~/.config/git/config",
        "ls ~/.config/gh",
        "echo $HOME",
        "toolscript trust --list",
        "JAVA_HOME=/usr/lib/jvm toolscript exec 'return 1'",
        "cat $XDG_CONFIG_HOME/git/config",
    ],
)
def test_other_programs_settings_pass_unasked(command: str) -> None:
    assert _decision(command) is None, command


@pytest.mark.parametrize(
    "command",
    [
        # the folder's setting in braces, as a default, or quoted (the file globbed or a
        # folder holding a trusted.json copied in): the same file as $XDG_CONFIG_HOME/...
        "cp /tmp/t.json ${XDG_CONFIG_HOME}/toolscript/trusted.jso?",
        'cp -r /tmp/c/. "${XDG_CONFIG_HOME:-$HOME/.config}"/toolscript/',
        "cp -r /tmp/c/. ${XDG_CONFIG_HOME:-~/.config}/toolscript",
    ],
)
def test_the_trusted_configs_folder_named_by_its_setting_in_braces_is_asked(
    command: str,
) -> None:
    _assert_asked(command)


@pytest.mark.parametrize(
    "command",
    [
        "/usr/bin/env $(cat /tmp/vars) toolscript exec a.ts",
        '"env" $(cat /tmp/vars) toolscript exec a.ts',
        'env -S "$(cat /tmp/vars) toolscript exec a.ts"',
        "export $(cat /tmp/vars); toolscript exec a.ts",
        "export `cat /tmp/vars` && toolscript gateway start",
        "declare -x $(cat /tmp/vars); toolscript run deploy",
    ],
)
def test_settings_computed_when_it_runs_are_asked_however_env_or_export_is_spelled(
    command: str,
) -> None:
    _assert_asked(command)


@pytest.mark.parametrize(
    "command",
    [
        "export PATH=$PATH:~/bin; toolscript exec a.ts",
        "export NODE_OPTIONS=$(cat /tmp/opts); npm test",
        "env FOO=$(date +%s) toolscript list-tools",
    ],
)
def test_everyday_computed_settings_pass_unasked(command: str) -> None:
    assert _decision(command) is None, command


def test_a_command_padded_with_env_words_is_read_to_its_end() -> None:
    """Each simple command is read once: a pattern over the whole line scanned the rest of
    it from each `env` (about a minute for this one), past the hook's 30 s limit, where
    its ask is lost: only Claude Code's own permission rules decide."""
    # (24,000 words: within the characters the hook reads, past which it asks unread)
    padded = "env " * 24_000 + "$(cat /tmp/vars) toolscript exec a.ts"
    output = _decision(padded)
    assert output is not None
    assert output["permissionDecision"] == "ask"
    assert "too long" not in output["permissionDecisionReason"]
    assert _decision("env " * 24_000 + "true") is None
