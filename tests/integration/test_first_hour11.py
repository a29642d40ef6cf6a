"""A user's first hour, eleventh pass: what tripped new users the earlier passes
(test_first_hour.py to test_first_hour10.py) did not meet. A Python developer who adds a
second tool file while the gateway runs, and a user who mistypes a server's command or
names it by a path relative to their shell.

Each test asserts what the user is told, as the CLI shows it, with real processes; they
share one gateway.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import (
    GatewayProcess,
    InteractiveShell,
    gateway_cli,
    toolscript_cli,
    wait_until,
)

VENV_BIN = Path(sys.executable).parent  # where mcp-server-time is installed
GREET = '''def hello(name: str) -> str:
    """Greet someone."""
    return "hello " + name
'''
ADD = '''def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''

# A Python developer's habits of scripts, in tool files: sys.exit() in a function, a
# script's `sys.exit(main())` at the end, input() in a worker's (PEP 723) file.
EXITS = '''import sys


def leave(code: int) -> str:
    """Leave with a code."""
    sys.exit(code)
'''
SCRIPT = '''import sys


def main() -> int:
    """Run as a script."""
    return 0


sys.exit(main())
'''
ASKS = '''# /// script
# dependencies = []
# ///


def ask() -> str:
    """Ask the person."""
    return input("name? ")


def double(n: int) -> int:
    """Double it."""
    return n * 2
'''


LOCAL_TOOLS = {"localTools": {"dir": "tools"}, "search": {"semantic": False}}


def tool_folder(directory: Path, files: dict[str, str], **config: Any) -> dict[str, Any]:
    """``directory`` as a project of tool files (``tools/NAME.py`` for each of ``files``):
    its config (``LOCAL_TOOLS`` and ``config``), written as ``.toolscript.json``."""
    (directory / "tools").mkdir()
    for name, source in files.items():
        (directory / "tools" / f"{name}.py").write_text(source)
    written = {**config, **LOCAL_TOOLS}
    (directory / ".toolscript.json").write_text(json.dumps(written))
    return written


def start_gateway(directory: Path, config: dict[str, Any]) -> GatewayProcess:
    """The project's gateway, with a toolscript home of its own."""
    return GatewayProcess(config, directory, env={"TOOLSCRIPT_HOME": str(directory / "home")})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project of tool files with none yet (the test writes its own into ``tools/``)."""
    tool_folder(tmp_path, {})
    return tmp_path


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """A project with one tool file and two servers the user got wrong: a command one letter
    off an installed program's, and a script named from the shell's folder, not the
    config's."""
    directory = tmp_path_factory.mktemp("project")
    path = f"{VENV_BIN}:/usr/bin:/bin"
    servers = {
        "clock": {"command": "mcp-server-tiem", "env": {"PATH": path}},
        "mine": {"command": "./bin/server.sh"},
        "tilde": {"command": "~/bin/fh11-server"},
    }
    files = {"greet": GREET, "exits": EXITS, "script": SCRIPT, "asks": ASKS}
    gateway = start_gateway(directory, tool_folder(directory, files, mcpServers=servers))
    yield gateway
    assert gateway.stop() == []


def servers(gateway: GatewayProcess) -> dict[str, Any]:
    return {
        server["name"]: server
        for server in json.loads(gateway_cli(gateway, "list-servers", "--json").stdout)
    }


def test_a_tool_file_added_while_the_gateway_runs_is_served(gateway: GatewayProcess) -> None:
    """The user wrote tools/greet.py, started the gateway, then wrote tools/calc.py: exec said
    "Property 'calc' does not exist on type 'Tools'" and `list-servers` showed calc "not
    loaded: see `toolscript gateway status`", which did not name it, until a restart
    (docs/security.md says a file added after `trust` is loaded). Removing it takes it out."""
    added = gateway.directory / "tools" / "calc.py"
    added.write_text(ADD)
    try:
        gateway.wait_for_health(
            lambda health: health["servers"].get("calc", {}).get("state") == "connected",
            60,
            "calc.py served",
        )
        result = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript"; return await tools.calc.add({ a: 1, b: 2 })',
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "3"
        assert "config: added calc" in gateway.log
    finally:
        added.unlink()
    gateway.wait_for_health(lambda health: "calc" not in health["servers"], 60, "calc.py gone")
    assert "calc" not in servers(gateway)
    hello = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript"; return await tools.greet.hello({ name: "Ada" })',
    )
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout.strip() == '"hello Ada"'


def test_a_mistyped_or_relative_command_says_what_to_write(gateway: GatewayProcess) -> None:
    """ "command not found: mcp-server-tiem" and "command not found: ./bin/server.sh" were all
    the user saw: not that mcp-server-time is installed, nor that a relative command is read
    from the config's folder (the user had run it from their shell's)."""
    gateway.wait_for_health(
        lambda health: all(health["servers"][name]["error"] for name in ("clock", "mine", "tilde")),
        60,
        "both servers failed",
    )
    listed = servers(gateway)
    assert listed["clock"]["error"] == (
        f'command not found: mcp-server-tiem (did you mean "mcp-server-time"? PATH has it in {VENV_BIN})'
    )
    where = gateway.directory / "bin" / "server.sh"
    assert listed["mine"]["error"] == (
        f"command not found: ./bin/server.sh (no such file: {where}; a relative command is "
        "read from the config's folder, or from the entry's \"cwd\")"
    )
    assert listed["tilde"]["error"] == (
        "command not found: ~/bin/fh11-server (~ is not expanded: no shell runs the command; "
        'write "command": "${HOME}/bin/fh11-server", or the full path)'
    )
    # `config check`, run before any gateway, says so too (it looks the programs up)
    checked = toolscript_cli("config", "check", cwd=gateway.directory)
    assert checked.returncode == 0, checked.stderr
    assert (
        f"warning: {gateway.config_path}: mcpServers.clock.command: command not found: "
        'mcp-server-tiem (did you mean "mcp-server-time"?'
    ) in checked.stderr
    assert "mcpServers.mine.command: command not found: ./bin/server.sh" in checked.stderr
    status = gateway_cli(gateway, "gateway", "status")
    assert status.returncode == 3
    assert 'did you mean "mcp-server-time"?' in status.stdout


def test_trust_tells_a_variable_with_a_default_from_one_to_export(tmp_path: Path) -> None:
    """The user wrote ${LOG_LEVEL:-info}, as the docs advise for an optional variable, and
    `trust` told them to export it with the token the server cannot start without."""
    config = {
        "mcpServers": {
            "api": {
                "command": "mcp-server-time",
                "env": {"TOKEN": "${FH11_TOKEN}", "LEVEL": "${FH11_LEVEL:-info}"},
            }
        }
    }
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    user = {"TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "trust"), "TOOLSCRIPT_TRUSTED_PATHS": ""}
    trusted = toolscript_cli("trust", cwd=tmp_path, env=user)
    assert trusted.returncode == 0, trusted.stderr
    assert "note: not set here: FH11_TOKEN; export each" in trusted.stderr
    assert "note: not set here, their defaults used: FH11_LEVEL" in trusted.stderr


def test_an_empty_run_id_is_said_to_be_empty(gateway: GatewayProcess) -> None:
    """running-scripts.md's `ID=$(toolscript exec --background ...)` then `runs wait "$ID"`:
    when the first command failed, `runs show ""` and `approve ""` said the empty id "is
    ambiguous" and listed every run (one run alone was taken as meant), `exec --resume ""`
    said "Not Found", and `runs wait ""` named a run "" not under way."""
    for _ in range(2):
        assert gateway_cli(gateway, "exec", "return 1").returncode == 0
    for command in (
        ["runs", "show", ""],
        ["runs", "wait", ""],
        ["runs", "stop", ""],
        ["approve", ""],
        ["exec", "--resume", ""],
    ):
        result = gateway_cli(gateway, *command)
        assert result.returncode == 2, (command, result.stderr)
        assert "toolscript: error: the run id is empty\n" in result.stderr, command
        assert "did the command that printed it fail?" in result.stderr
        assert "ambiguous" not in result.stderr and "Traceback" not in result.stderr


def test_a_tool_file_added_while_the_gateway_starts_is_served(project: Path) -> None:
    """The user ran `toolscript gateway start &` and saved tools/late.py while its servers
    connected: the watch began after them, from what the files were then, and late.py
    stayed out until a restart. Here the slow file's import writes late.py itself, so it
    lands after the config was read and before the gateway serves."""
    tools = project / "tools"
    late = tools / "late.py"
    (tools / "slow.py").write_text(
        "import pathlib, time\n"
        f"pathlib.Path({str(late)!r}).write_text({ADD!r})\n"
        "time.sleep(1)\n\n\n" + GREET
    )
    gateway = start_gateway(project, LOCAL_TOOLS)
    try:
        gateway.wait_for_health(
            lambda health: health["servers"].get("late", {}).get("state") == "connected",
            60,
            "late.py served",
        )
        result = gateway_cli(
            gateway,
            "exec",
            'import { tools } from "toolscript"; return await tools.late.add({ a: 2, b: 2 })',
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "4"
    finally:
        assert gateway.stop() == []


def test_a_tool_that_exits_or_reads_stdin_fails_alone(gateway: GatewayProcess) -> None:
    """sys.exit() in an internal tool's function, or a script's `sys.exit(main())` at the end
    of a tool file, raised SystemExit in the gateway: its task group ended (the servers, the
    config watch), SIGTERM no longer stopped it, and every later call failed. input() in a
    worker's tool read the next request from the worker's stdin, and waited for its timeout."""
    gateway.wait_for_health(
        lambda health: health["servers"]["script"]["state"] == "failed", 60, "script.py failed"
    )
    assert gateway.health()["servers"]["script"]["error"] == (
        "ImportError: script.py called sys.exit(0) while it was imported: a tool file defines "
        'functions; put what it runs as a script under `if __name__ == "__main__":`'
    )
    left = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript"; return await tools.exits.leave({ code: 3 })',
    )
    assert left.returncode == 1
    assert (
        "ToolError: exits.leave: RuntimeError: leave() called sys.exit(3): a tool returns its "
        "result or raises an exception, it does not end the process it runs in"
    ) in left.stderr
    asked = gateway_cli(
        gateway, "exec", 'import { tools } from "toolscript"; return await tools.asks.ask()'
    )
    assert asked.returncode == 1
    assert "ToolError: asks.ask: EOFError: EOF when reading a line" in asked.stderr
    for call, answer in (
        ("asks.double({ n: 21 })", "42"),
        ('greet.hello({ name: "Bo" })', '"hello Bo"'),
    ):
        after = gateway_cli(
            gateway, "exec", f'import {{ tools }} from "toolscript"; return await tools.{call}'
        )
        assert after.returncode == 0, after.stderr
        assert after.stdout.strip() == answer


def test_input_in_a_tool_of_a_gateway_started_with_ampersand_does_not_stop_it(
    project: Path,
) -> None:
    """`toolscript gateway start &` in an interactive shell, then a call of an internal tool
    that calls input(): the gateway, a background job reading its terminal, was stopped by
    the shell ("[1]+ Stopped"), and the exec, `gateway status` and every call hung."""
    (project / "tools" / "asker.py").write_text(
        'def ask() -> str:\n    """Ask the person."""\n    return input("name? ")\n'
    )
    toolscript = f"{sys.executable} -m toolscript"
    shell = InteractiveShell(project)
    try:
        shell.type(f"{toolscript} gateway start 2>/dev/null &")
        wait_until(shell.read, lambda seen: "http://127.0.0.1:" in seen, 60, "the gateway's URL")
        call = 'import { tools } from "toolscript"; return await tools.asker.ask()'
        shell.type(f"{toolscript} exec '{call}'; echo exit=$?")
        wait_until(shell.read, lambda seen: re.search(r"exit=\d", seen), 120, "the exec's end")
        assert "ToolError: asker.ask: EOFError: EOF when reading a line" in shell.seen
        assert "exit=1" in shell.seen and "Stopped" not in shell.seen
        shell.type(f"{toolscript} gateway stop")
        wait_until(shell.read, lambda seen: "gateway: stopped" in seen, 60, "the stop")
    finally:
        for left in psutil.Process(shell.pid).children(recursive=True):  # a stopped gateway
            left.kill()
        shell.close()


def test_help_and_a_gateway_command_without_gateway_say_what_to_type(tmp_path: Path) -> None:
    """`toolscript help exec` said "No such command 'help'", and `toolscript status` (or
    start, stop) "No such command 'status'" with no word of `gateway status`."""
    helped = toolscript_cli("help", "exec", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("Usage: toolscript exec [OPTIONS] [code]")
    assert toolscript_cli("help", cwd=tmp_path).stdout.startswith("Usage: toolscript [OPTIONS]")
    for word in ("start", "stop", "status"):
        result = toolscript_cli(word, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr == (
            f"toolscript: error: no command '{word}': it is a gateway's\n"
            f"hint: `toolscript gateway {word}`\n"
        )
