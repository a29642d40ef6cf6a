"""A new user's first hour, fourth pass: the angles the earlier ones (test_first_hour.py,
test_first_hour2.py, test_first_hour3.py, test_agent_first_hour.py) did not take. A Python
tool file written by hand and fixed while the gateway runs; a tool the user's policy
denies, asked for by name; a policy rule naming a tool the server does not have; the MCP face called with wrong argument names, as the official MCP
Inspector's CLI calls it; a saved script whose tool was renamed; standalone `doit` with a
server it cannot reach.

Each test asserts what the user is told, as the CLI shows it, with a real gateway process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    GatewayProcess,
    fixture_server,
    inspector_call,
    run_doit,
    wait_until,
)
from tests.integration.test_first_hour2 import every_server_tried, listed, run

TOOLS = '''
"""Sums."""


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The number added to it.
    """
    return a + b


def wipe(target: str) -> str:
    """Erase a target."""
    return target


def wipe_all(target: str) -> str:
    """Erase every target."""
    return target
'''

LABELS = '''
def label(text: str) -> str:
    """A label for a text."""
    return text.title()
'''

LABELLED = """import { tools } from "toolscript";

/** Labels a text. */
export default async function labelled(input: { text: string }) {
  return await tools.labels.label({ text: input.text });
}
"""

SYNTAX_ERROR = "def f(x: int) -> int\n    return x\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    project = tmp_path_factory.mktemp("first-hour4")
    (project / "tools").mkdir()
    (project / "tools" / "sums.py").write_text(TOOLS)
    (project / "tools" / "draft.py").write_text(SYNTAX_ERROR)
    (project / "tools" / "labels.py").write_text(LABELS)
    config = {
        "mcpServers": {"fx": fixture_server(policy={"fial": "deny", "plain_*": "ask"})},
        "localTools": {
            "dir": "tools",
            "files": {
                "sums": {
                    "policy": {"wipe": "deny", "wipe_all": "deny", "ad": "ask", "delete_*": "deny"}
                }
            },
        },
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(
        config, project, "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(project / "home")}
    )
    try:
        every_server_tried(project, 4, 60)
        yield project
    finally:
        gateway.stop()


def test_a_failed_tool_file_edited_to_another_error_shows_the_new_one(project: Path) -> None:
    # The row kept the first load's "SyntaxError ... line 1" and a warning said the edit was
    # not loaded and "the previous version still serves": no version ever served, and the
    # user fixing line 1 was sent back to a line that no longer had the error.
    assert listed(project)["draft"]["error"].startswith("SyntaxError")
    (project / "tools" / "draft.py").write_text(
        "import a_module_nobody_installed\n\n\ndef f(x: int) -> int:\n    return x\n"
    )
    draft = wait_until(
        lambda: listed(project)["draft"],
        lambda server: "a_module_nobody_installed" in (server["error"] or ""),
        30,
        "the edit's error shown",
    )
    assert draft["state"] == "failed"
    status = run(project, "gateway", "status").stdout
    assert "SyntaxError" not in status
    assert "was not loaded" not in status and "previous version" not in status
    (project / "tools" / "draft.py").write_text("def f(x: int) -> int:\n    return x\n")
    draft = wait_until(
        lambda: listed(project)["draft"],
        lambda server: server["state"] == "connected",
        30,
        "the fixed file loaded",
    )
    assert draft["error"] is None


def test_get_types_of_a_denied_tool_says_the_policy_denies_it(project: Path) -> None:
    # It said "tool not found: sums.wipe" and sent the user to list-tools, which does not
    # show it either: the policy that left it out was not named.
    asked = run(project, "get-types", "sums", "wipe")
    assert asked.returncode != 0
    assert "sums.wipe is denied by the policy of server 'sums'" in asked.stderr
    assert ".toolscript.json" in asked.stderr
    assert "not found" not in asked.stderr


def face_call(project: Path, tool: str, *arguments: str) -> dict[str, Any]:
    return inspector_call(project, project / ".toolscript.json", tool, *arguments)


def test_the_face_names_an_argument_it_does_not_take_and_those_it_does(project: Path) -> None:
    # It answered only 'missing required property "code"': the model that wrote "script"
    # was not told that "script" is no argument, nor which names are.
    wrong = face_call(project, "execute", "script=return 1")
    assert wrong["isError"] is True
    said = wrong["content"][0]["text"]
    assert 'missing required property "code"' in said
    assert 'unknown property "script" (allowed: code, timeout)' in said
    denied = face_call(project, "get_types", 'tools=["sums.wipe"]')
    assert denied["isError"] is True
    assert "sums.wipe is denied by the policy" in denied["content"][0]["text"]


def test_a_saved_script_whose_tool_was_renamed_lists_the_tools_there_are(project: Path) -> None:
    # It said "Property 'label' does not exist on type 'LabelsTools'." and no more: a run of
    # exec lists the members of the type, the saved script's error did not.
    (project / "labelled.ts").write_text(LABELLED)
    saved = run(project, "save", "labelled", "labelled.ts")
    assert saved.returncode == 0, saved.stderr
    (project / "tools" / "labels.py").write_text(LABELS.replace("def label(", "def make_label("))
    scripts = wait_until(
        lambda: json.loads(run(project, "list-scripts", "--json").stdout)["scripts"],
        lambda scripts: scripts[0]["status"] == "broken",
        30,
        "the script broken by the rename",
    )
    assert "Property 'label' does not exist on type 'LabelsTools'" in str(scripts[0])
    ran = run(project, "run", "labelled", "--input", '{"text": "a"}')
    assert ran.returncode == 1
    assert "on type 'LabelsTools' (members: makeLabel)" in ran.stderr


def doit_with_labels(directory: Path, servers: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """Standalone doit (exit 0) in ``directory``: ``servers`` beside the tool file labels.py."""
    (directory / "tools").mkdir(exist_ok=True)
    (directory / "tools" / "labels.py").write_text(LABELS)
    config = {"mcpServers": servers, "localTools": {"dir": "tools"}}
    (directory / ".toolscript.json").write_text(json.dumps(config))
    built = run_doit(directory, env={"TOOLSCRIPT_HOME": str(directory / "home")})
    assert built.returncode == 0, built.stderr
    return built


def test_standalone_doit_says_which_server_it_could_not_reach_and_why(tmp_path: Path) -> None:
    # doit ran every task, exit 0, and said nothing: its warning was written inside a task,
    # whose output doit keeps unless the task fails, so the server's missing types were a
    # surprise for the next script.
    failing = "import sys; sys.stderr.write('no account configured\\n'); sys.exit(3)"
    built = doit_with_labels(
        tmp_path, {"broken": {"command": sys.executable, "args": ["-c", failing]}}
    )
    warning = next(line for line in built.stderr.splitlines() if "broken" in line)
    assert warning.startswith("toolscript: warning: broken: not reachable (")
    assert "no account configured" in warning
    assert "labels" not in built.stderr
    assert "label(params" in (tmp_path / ".toolscript" / "tools.ts").read_text()


def test_standalone_doit_says_which_unset_variable_to_set_to_fetch_a_server(
    tmp_path: Path,
) -> None:
    # It said "start the gateway again", which does nothing for doit's own fetch.
    entry = {"command": sys.executable, "args": ["-c", "pass"]}
    built = doit_with_labels(
        tmp_path, {"needs_token": entry | {"env": {"API_TOKEN": "${HOUR4_UNSET_TOKEN}"}}}
    )
    warning = next(line for line in built.stderr.splitlines() if "needs_token" in line)
    assert "HOUR4_UNSET_TOKEN is not set (${HOUR4_UNSET_TOKEN} in env.API_TOKEN)" in warning
    assert "run doit again: it fetches needs_token then" in warning, warning
    assert "gateway" not in warning, warning


def test_doit_after_a_server_was_removed_leaves_none_of_its_files(tmp_path: Path) -> None:
    # Its tool list, names and types stayed in .toolscript/ (servers/, names/, types/,
    # offered/), read as current by whoever opened them; `doit clean` did not name them.
    cache = tmp_path / ".toolscript"
    doit_with_labels(tmp_path, {"Old Server": {"command": sys.executable, "args": ["-c", "pass"]}})
    assert any(path.name.startswith("old_server") for path in cache.glob("*/*"))
    doit_with_labels(tmp_path, {})
    assert not [path for path in cache.glob("*/*") if path.name.startswith("old_server")]
    assert {path.name for path in (cache / "types").iterdir()} == {"labels.ts", "labels.json"}


def test_a_policy_rule_naming_no_tool_is_a_warning_with_the_name_it_may_mean(
    project: Path,
) -> None:
    # "fial": "deny" was taken without a word, and fx.fail stayed callable: the user who
    # meant to deny it (or to be asked first) had no way to see the rule matched nothing.
    status = run(project, "gateway", "status").stdout
    assert (
        'warning: fx: policy rule "fial" names none of its' in status
        and '(did you mean "fail"?)' in status
    )
    assert 'warning: sums: policy rule "ad" names none of its 3 tools (did you mean "add"?)' in (
        status
    )
    # patterns may guard tools to come, and rules that name a tool are quiet
    assert "plain_*" not in status and "delete_*" not in status and '"wipe' not in status


def test_a_tool_files_args_section_describes_its_parameters_in_the_types(
    project: Path,
) -> None:
    # The Args section stayed in the tool's description, and each parameter was documented
    # only by pydantic's title of its own name ("/** A */ a: number;").
    types = run(project, "get-types", "sums", "add")
    assert types.returncode == 0, types.stderr
    assert "/** The first number. */\n  a: number;" in types.stdout
    assert "/** The number added to it. */\n  b: number;" in types.stdout
    assert "/** Add two numbers. */" in types.stdout and "Args:" not in types.stdout


def test_a_script_calling_a_denied_tool_is_told_the_policy_denies_it(project: Path) -> None:
    # The type error listed the server's other members ("Property 'wipe' does not exist on
    # type 'SumsTools' (members: add)") and no word of the policy: the agent looked for it.
    script = 'import { tools } from "toolscript";\nawait tools.sums.wipe({ target: "x" });\n'
    ran = run(project, "exec", script)
    assert ran.returncode == 1
    assert "on type 'SumsTools' (members: add); sums.wipe is denied by the policy of server " in (
        ran.stderr
    )
    assert ".toolscript.json" in ran.stderr
    missing = run(project, "exec", script.replace("wipe", "erase"))
    assert "on type 'SumsTools' (members: add)" in missing.stderr
    assert "denied" not in missing.stderr
    face = face_call(project, "execute", f"code={script}")
    assert face["isError"] is True
    assert "sums.wipe is denied by the policy of server 'sums'" in face["content"][0]["text"]


ADDER = """import { tools } from "toolscript";

/** Adds two numbers. */
export default async function adder(input: { a: number; b: number }) {
  return await tools.sums.add(input);
}
"""


def test_running_a_saved_script_without_its_input_says_how_to_give_it(project: Path) -> None:
    # It said only that "{}" misses a and b, in a file named "<run adder>.ts" the user never
    # wrote: nothing said the input is given with --input.
    (project / "adder.ts").write_text(ADDER)
    saved = run(project, "save", "adder", "adder.ts")
    assert saved.returncode == 0, saved.stderr
    ran = run(project, "run", "adder")
    assert ran.returncode == 1
    assert """hint: give its input: toolscript run adder --input '{"a": ..., "b": ...}'""" in (
        ran.stderr
    )
    half = run(project, "run", "adder", "--input", '{"a": 1}')
    assert half.returncode == 1
    assert """--input '{"b": ...}'""" in half.stderr
    assert run(project, "run", "adder", "--input", '{"a": 1, "b": 2}').stdout.strip() == "3"


WIPER = """import { tools } from "toolscript";

/** Wipes every target. */
export default async function wiper(input: { target: string }) {
  return await tools.sums.wipeAll(input);
}
"""


def test_a_denied_tool_asked_by_the_name_scripts_call_it_is_denied_too(project: Path) -> None:
    # `get-types sums wipe_all` said the policy denies it, `get-types sums wipeAll` (the
    # name a script calls it by) said "tool not found".
    for asked_for in (("sums", "wipe_all"), ("sums", "wipeAll"), ("sums.wipeAll",)):
        asked = run(project, "get-types", *asked_for)
        assert asked.returncode != 0
        assert "sums.wipe_all is denied by the policy of server 'sums'" in asked.stderr
        assert "not found" not in asked.stderr


def test_a_background_run_or_saved_script_calling_a_denied_tool_is_told_so(
    project: Path,
) -> None:
    # exec said that the policy denies the tool; a background run and `toolscript run NAME`
    # of a saved script calling it said only that the type has no such member.
    script = 'import { tools } from "toolscript";\nawait tools.sums.wipeAll({ target: "x" });\n'
    started = run(project, "exec", "--background", script)
    assert started.returncode == 0, started.stderr
    waited = run(project, "runs", "wait", started.stdout.strip(), "--timeout", "120")
    assert waited.returncode == 1
    assert "(members: add); sums.wipe_all is denied by the policy of server 'sums'" in (
        waited.stderr
    )
    kept = project / "toolscripts" / "wiper.ts"
    kept.parent.mkdir(exist_ok=True)
    kept.write_text(WIPER)
    try:
        wait_until(
            lambda: json.loads(run(project, "list-scripts", "--json").stdout)["scripts"],
            lambda scripts: any(s["name"] == "wiper" and s["status"] == "broken" for s in scripts),
            30,
            "the saved script found broken",
        )
        ran = run(project, "run", "wiper", "--input", '{"target": "x"}')
        assert ran.returncode == 1
        assert "(members: add); sums.wipe_all is denied by the policy of server 'sums'" in (
            ran.stderr
        )
    finally:
        kept.unlink()
