"""A new user's first hour, seventh pass: the angles the earlier ones (test_first_hour.py to
test_first_hour6.py, test_agent_first_hour.py) did not take. A project folder whose path
has spaces and non-ASCII letters, reached through a symbolic link, under a home with a
space; a server entry copied from a Windows client's config; a second config in the
project's folder; and the user's cache cleared by hand under a running gateway.

Each test asserts what the user is told, as the CLI shows it, with real processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    GatewayProcess,
    fixture_server,
    remove_tree_being_written,
    toolscript_cli,
    wait_until,
)

# Claude Desktop's and Cursor's guides for Windows wrap npx in the Windows shell.
FROM_WINDOWS = {
    "command": "cmd",
    "args": ["/c", "npx", "-y", "@modelcontextprotocol/server-memory"],
}
CALL = 'import { tools } from "toolscript"; return await tools.fx.plainText({ text: "hi" })'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    base = tmp_path_factory.mktemp("first-hour7")
    (base / "real dir" / "Prøjekt é").mkdir(parents=True)
    (base / "link").symlink_to(base / "real dir")
    (base / "home with space").mkdir()
    project = base / "link" / "Prøjekt é"  # as the user's `cd` reached it
    config = {
        "mcpServers": {"fx": fixture_server(), "win": FROM_WINDOWS},
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(config, project, env={"HOME": str(base / "home with space")})
    try:
        gateway.wait_for_health(
            lambda h: (
                h["servers"]["win"]["state"] == "failed"
                and h["servers"]["fx"]["state"] == "connected"
            ),
            what="win failed and fx connected",
        )
        yield gateway
    finally:
        gateway.stop()


def run(gateway: GatewayProcess, *args: str) -> tuple[int, str, str]:
    done = toolscript_cli(*args, cwd=gateway.directory, env={"HOME": _home(gateway)})
    return done.returncode, done.stdout, done.stderr


def _home(gateway: GatewayProcess) -> str:
    return str(gateway.directory.parent.parent / "home with space")


def test_a_server_copied_from_a_windows_config_says_what_to_write(
    gateway: GatewayProcess,
) -> None:
    """`cmd /c npx -y SERVER`, as Claude Desktop's Windows config has it, was said to be
    "command not found: cmd" and nothing more: the user had to know that cmd is Windows'."""
    code, out, _ = run(gateway, "gateway", "status")
    assert code == 3, out
    row = next(line for line in out.splitlines() if line.startswith("win"))
    assert "command not found: cmd" in row
    assert '"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]' in row


def test_the_note_on_a_file_whose_name_has_spaces_quotes_it(gateway: GatewayProcess) -> None:
    """A saved script's shape run with exec: the note's command to save it named the file
    unquoted (`toolscript save NAME my script é.ts`): copied, it saves no such file."""
    (gateway.directory / "my script é.ts").write_text(
        'import { tools } from "toolscript";\n'
        "export default async function main(input: { text: string }) {\n"
        "  return await tools.fx.plainText({ text: input.text });\n}\n"
    )
    code, _, err = run(gateway, "exec", "my script é.ts")
    assert code == 0, err
    assert "`toolscript save NAME 'my script é.ts'`" in err, err


def test_another_config_of_the_folder_is_not_run_through_its_gateway(
    gateway: GatewayProcess,
) -> None:
    """`--config other.json` in a folder whose gateway serves .toolscript.json: the commands
    used that gateway, so a script called servers other.json does not have, list-tools
    answered with the other config's servers, and `gateway stop` stopped it."""
    (gateway.directory / "other.json").write_text(json.dumps({"mcpServers": {}}))
    code, out, err = run(gateway, "exec", "--config", "other.json", CALL)
    assert code == 2, out + err
    assert not out
    assert "serves " in err and ".toolscript.json, not " in err and "other.json" in err, err
    assert "--cache-dir" in err
    code, out, _ = run(gateway, "search", "plain text", "--config", "other.json", "--json")
    assert code == 2 and json.loads(out)["error"] == "config_error", out
    code, out, err = run(gateway, "gateway", "stop", "--config", "missing.json")
    assert code == 2, out + err
    assert gateway.process.poll() is None
    code, out, err = run(gateway, "exec", CALL)  # the project's own config still uses it
    assert (code, out.strip()) == (0, '"hi"'), err


def test_clearing_the_users_cache_keeps_the_running_gateway_found(
    gateway: GatewayProcess,
) -> None:
    """`rm -rf ~/.cache/toolscript` under a running gateway took its state file: the
    commands said it was not running (`gateway stop` could not stop it) and each started a
    gateway of their own beside it."""
    # The gateway may write its state back while the tree goes (what it is for)
    remove_tree_being_written(Path(_home(gateway)) / ".cache" / "toolscript")
    status = wait_until(
        lambda: run(gateway, "gateway", "status", "--json"),
        lambda done: done[0] != 1,
        what="the gateway found again",
    )
    assert json.loads(status[1])["running"] is True, status
    code, out, err = run(gateway, "exec", CALL)
    assert (code, out.strip()) == (0, '"hi"'), err
    assert "no gateway runs" not in err


def test_init_json_that_finds_nothing_says_its_error_in_the_object(tmp_path: Path) -> None:
    """`init --json` in a home with no client's config ended with exit 2 and a report with
    no "error" in it (its error on stderr alone), where every other command's --json says
    an error in its one object: `jq .error` read null."""
    (tmp_path / "home").mkdir()
    done = toolscript_cli("init", "--json", cwd=tmp_path, env={"HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stderr
    said = json.loads(done.stdout)
    assert said["error"] == "usage_error"
    assert said["message"].startswith("found no MCP servers") and said["hint"]
    assert said["found"] == [] and said["written"] is False  # the report, as before
