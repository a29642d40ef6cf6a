"""A user's first hour, fifteenth pass: what tripped new users the earlier passes
(test_first_hour.py to test_first_hour14.py) did not meet. `exec` right after `gateway
start &` waited for the slowest server though the script called another; the MCP face's
list_servers and search_tools declared none of the fields their data and the CLI's --json
carry (`last_known_tools`, `weak`, `unsearched`); and keyword-only search answered "convert
this PDF to text" with a clock's convert_time and no word that it cannot tell a request no
tool fits.

Each test asserts what the user is told, with real processes; they share one gateway, whose
slow server connects only when a test says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.helpers import (
    SERVERS,
    clean_env,
    command_held_by,
    gated_server,
    python_bin,
    starting_gateway,
    toolscript_cli,
    wait_for_start_mark,
)

PDF = "convert this PDF to text"


@dataclass
class Project:
    directory: Path
    config_path: Path
    log: Path
    go: Path  # the slow server connects once this file exists
    url: str = ""

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``toolscript ARGS`` in the project, finding its gateway as a user's shell does."""
        return toolscript_cli(*args, cwd=self.directory)

    def cli_with_stdin(self, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
        """``toolscript ARGS`` with ``stdin`` piped in (a heredoc, a pipe)."""
        return toolscript_cli(*args, cwd=self.directory, stdin=stdin)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    """A project of a clock, an echo server, a slow server that connects when told and an
    npx server on a machine without Node (the gateway's PATH has no npx), its search
    keyword-only; `toolscript gateway start` begun in it and not waited for."""
    directory = tmp_path_factory.mktemp("two speeds")
    go = directory / "go"
    clock = python_bin("mcp-server-time")
    config = {
        "mcpServers": {
            "clock": {"command": clock},
            "echo": {"command": sys.executable, "args": [str(SERVERS / "faulty_server.py")]},
            "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]},
            "slow": gated_server(go, clock),
        },
        "search": {"semantic": False},
    }
    (directory / ".toolscript.json").write_text(json.dumps(config))
    no_node = directory / "bin"  # the gateway's PATH: no node, no npx
    no_node.mkdir()
    # the run calling the slow server waits the gateway's whole ready wait for it
    with starting_gateway(directory, go, clean_env(PATH=str(no_node))) as log:
        yield Project(directory, directory / ".toolscript.json", log, go)


def _face(project: Project, *calls: tuple[str, dict[str, Any]]) -> tuple[dict[str, Any], list[Any]]:
    """The face's tools by name and the results of ``calls``, through the `mcp` SDK's client
    over stdio (`toolscript mcp` in the project: it uses the project's running gateway). The
    SDK checks each result's data against its tool's output schema."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(project.config_path)],
        cwd=str(project.directory),
        env=clean_env(),
    )

    async def work() -> tuple[dict[str, Any], list[Any]]:
        async with (
            stdio_client(parameters) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
            return listed, [await session.call_tool(name, args) for name, args in calls]

    return anyio.run(work)


def test_exec_waits_only_for_the_servers_its_script_calls(project: Project) -> None:
    """`gateway start &` then `exec` of a clock script waited for the slow server the script
    never calls, up to the gateway's whole ready wait, saying only that the gateway "tries
    every server first"; the MCP face then searched without saying in its data that the
    slow server was not searched, nor declared `weak`, `unsearched` or `last_known_tools`."""
    wait_for_start_mark(project.directory, "slow")
    # a script calling the slow server waits for it, and says so
    with command_held_by(
        project.go,
        project.directory,
        "exec",
        'import { tools } from "toolscript";\nreturn (await tools.slow.getCurrentTime('
        '{ timezone: "UTC" })).timezone;',
    ) as slow_run:
        assert slow_run.stderr is not None
        said = slow_run.stderr.readline()
        assert said.startswith("toolscript: waiting for this project's gateway (pid "), said
        assert "to connect slow, which the script calls" in said, said
        # one calling the clock does not: the gateway serves without the slow one
        clock = project.cli(
            "exec",
            'import { tools } from "toolscript";\nreturn (await tools.clock.getCurrentTime('
            '{ timezone: "UTC" })).timezone;',
        )
        assert (clock.returncode, clock.stdout) == (0, '"UTC"\n'), clock
        assert (
            "toolscript: this project's gateway is still connecting slow; the script calls "
            "none of them, so it serves now without them (they join when connected)"
        ) in clock.stderr, clock.stderr
        assert "serving without slow (still connecting; a command that calls none of them" in (
            project.log.read_text()
        )
        # the face, meanwhile: the slow server unsearched, keyword search unable to flag
        listed, (found, servers) = _face(
            project, ("search_tools", {"query": "current time"}), ("list_servers", {})
        )
        assert not found.is_error and not servers.is_error, (found, servers)
        assert found.structured_content["unsearched"] == [{"name": "slow", "state": "connecting"}]
        assert found.structured_content["weak"] is None  # keywords alone cannot tell
        search_schema = listed["search_tools"].output_schema
        assert {"weak", "unsearched", "hits"} <= set(search_schema["properties"])
        jsonschema.validate(found.structured_content, search_schema)
        list_schema = listed["list_servers"].output_schema
        assert "last_known_tools" in list_schema["properties"]["servers"]["items"]["properties"]
        jsonschema.validate(servers.structured_content, list_schema)
        rows = {row["name"]: row for row in servers.structured_content["servers"]}
        assert rows["slow"]["state"] == "connecting" and rows["clock"]["tools"] == 2, rows
        project.go.touch()
        out, err = slow_run.communicate(timeout=120)
        assert (slow_run.returncode, out) == (0, '"UTC"\n'), err


def test_keyword_search_says_it_cannot_flag_a_request_no_tool_fits(project: Project) -> None:
    """Keyword-only search answered "convert this PDF to text" with the clock's
    convert_time first, `"weak": false` in --json, and no word that keyword search cannot
    tell a request no tool fits (the flag needs semantic search)."""
    found = project.cli("search", PDF, "-n", "2")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("clock\tconvert_time\t"), found.stdout
    assert "note: keyword search only (semantic search is turned off); a first hit may " in (
        found.stderr
    )
    assert "only semantic search flags a request no tool fits" in found.stderr
    as_json = json.loads(project.cli("search", PDF, "--json").stdout)
    assert as_json["mode"] == "keyword" and as_json["weak"] is None, as_json
    _, (answer,) = _face(project, ("search_tools", {"query": PDF}))
    assert "a request no tool fits is not flagged" in answer.content[0].text, answer


def test_npx_on_a_machine_without_node_says_what_to_install(project: Project) -> None:
    """A config naming npx servers on a machine without Node: the gateway's start, its
    status, list-servers and the session hook said "command not found: npx" and nothing
    of what to do."""
    project.go.touch()  # run alone, it need not wait for the slow server
    listed = project.cli("list-servers")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if line.startswith("files\t"))
    assert "\tfailed\t0\tcommand not found: npx (npx comes with Node.js (its npm): install " in (
        row
    ), row
    assert 'write its full path in "command" (`command -v npx` in your shell prints it))' in row
    status = project.cli("gateway", "status")
    assert status.returncode == 3, status  # degraded: a server failed
    assert "files\tfailed\t0\tcommand not found: npx (npx comes with Node.js" in status.stdout


def test_an_agents_script_on_stdin_runs_however_it_is_piped(project: Project) -> None:
    """`toolscript exec <<'EOF'` (no `-`) said "nothing to run", `--file -` "not a TypeScript
    or JavaScript file: -", and a script saved with a byte order mark before its import
    failed with Deno's "'import', and 'export' cannot be used outside of module code"."""
    project.go.touch()
    heredoc = project.cli_with_stdin(
        "exec", stdin="const x = [1, 2];\nreturn x.map((n) => n * 2);\n"
    )
    assert (heredoc.returncode, heredoc.stdout) == (0, "[2,4]\n"), heredoc
    dash = project.cli_with_stdin("exec", "--file", "-", stdin='return "dash";\n')
    assert (dash.returncode, dash.stdout) == (0, '"dash"\n'), dash
    windows = (
        '\ufeff#!/usr/bin/env toolscript\r\nimport { tools } from "toolscript";\r\n'
        'return (await tools.clock.getCurrentTime({ timezone: "UTC" })).timezone;\r\n'
    )
    ran = project.cli_with_stdin("exec", stdin=windows)
    assert (ran.returncode, ran.stdout) == (0, '"UTC"\n'), ran
    (project.directory / "bom.ts").write_text(windows, newline="")
    as_file = project.cli("bom.ts")
    assert (as_file.returncode, as_file.stdout) == (0, '"UTC"\n'), as_file
    # a pipe no one writes to (an agent's shell may leave one open): said, not waited on
    silent = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec"],
        cwd=project.directory,
        env=clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert silent.wait(60) == 2  # its stdin still open, never written
    finally:
        if silent.poll() is None:
            silent.kill()
        out, err = silent.communicate()
    assert not out, out
    assert "nothing to run: give CODE, pipe it (or '-' for stdin), or a .ts file" in err


def test_a_first_script_importing_from_jsr_is_told_to_declare_an_npm_package(
    project: Project,
) -> None:
    """`import { parse } from "jsr:@std/csv"` in a first script file was told "scripts import
    only \\"toolscript\\" (tried \\"jsr.io:443\\"); call a tool that fetches it"."""
    project.go.touch()
    (project.directory / "first.ts").write_text(
        'import { parse } from "jsr:@std/csv";\nreturn parse("a,b");\n'
    )
    ran = project.cli("first.ts")
    assert ran.returncode == 1, ran
    assert '(tried "jsr.io:443"): jsr: packages are not offered; declare the package' in ran.stderr
    assert "fetches it" not in ran.stderr and "Traceback" not in ran.stderr
