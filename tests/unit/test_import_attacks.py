"""The `import` key attacked: what a cloned repository (or a broken file of the user's) can do
through the other clients' configs toolscript reads, and what it must not."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.config import load_config
from toolscript.errors import ConfigError, UntrustedConfigError, UsageError
from toolscript.otherclients import is_toolscript_itself, read_imports, strip_json_comments
from toolscript.plumbing.jsonpos import JsonLocator, parse_with_positions
from toolscript.store import trust

runner = CliRunner()
SAMPLES = Path(__file__).resolve().parents[1] / "client_configs"


def write(path: Path, value: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def a_project(repo: Path) -> Path:
    """A .toolscript.json of its own server that imports Claude Code and Cursor; Cursor's
    project file defines one more."""
    write(repo / ".cursor" / "mcp.json", {"mcpServers": {"cursors": {"command": "echo"}}})
    return write(
        repo / ".toolscript.json",
        {"import": ["claude-code", "cursor"], "mcpServers": {"own": {"command": "echo"}}},
    )


# -- files that are no files: a FIFO, a device ----------------------------------------------


@pytest.mark.timeout(60)
def test_a_fifo_planted_as_mcp_json_is_refused_and_the_other_servers_stay(
    home: Path, repo: Path
) -> None:
    config = a_project(repo)
    os.mkfifo(repo / ".mcp.json")  # reading it would wait for a writer forever
    trust.trust(config)
    loaded = load_config(config, require_trust=True)
    assert {server.name for server in loaded.servers} == {"own", "cursors"}
    assert any(
        str(repo / ".mcp.json") in warning and "not a regular file" in warning
        for warning in loaded.import_warnings
    )


@pytest.mark.timeout(60)
def test_a_mcp_json_linked_to_dev_zero_is_refused_not_read_forever(home: Path, repo: Path) -> None:
    config = a_project(repo)
    (repo / ".mcp.json").symlink_to("/dev/zero")
    trust.trust(config)
    loaded = load_config(config, require_trust=True)
    assert {server.name for server in loaded.servers} == {"own", "cursors"}


@pytest.mark.timeout(60)
def test_an_env_file_that_is_a_fifo_skips_its_server_and_trust_does_not_hang(
    home: Path, repo: Path
) -> None:
    config = a_project(repo)
    write(
        repo / ".cursor" / "mcp.json",
        {"mcpServers": {"cursors": {"command": "echo", "envFile": "${workspaceFolder}/.env"}}},
    )
    os.mkfifo(repo / ".env")
    trust.trust(config)
    loaded = load_config(config, require_trust=True)
    assert {server.name for server in loaded.servers} == {"own"}
    assert any("envFile" in warning for warning in loaded.import_warnings)


# -- an envFile trust cannot see -------------------------------------------------------------


def test_an_env_file_of_the_project_named_through_the_environment_is_not_read(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trust hashes the project's env files; one reached through ${env:PWD} was read but not
    hashed, so a `git pull` could add LD_PRELOAD to a trusted command's environment."""
    config = write(repo / ".toolscript.json", {"import": ["cursor"]})
    write(
        repo / ".cursor" / "mcp.json",
        {"mcpServers": {"cursors": {"command": "printenv", "envFile": "${env:PWD}/.env"}}},
    )
    write(repo / ".env", "MODE=1\n")
    monkeypatch.setenv("PWD", str(repo))
    trust.trust(config)
    write(repo / ".env", "LD_PRELOAD=/tmp/evil.so\n")  # after trust: unseen by its hash
    loaded = load_config(config, require_trust=True)
    assert "cursors" not in {server.name for server in loaded.servers}
    assert any("toolscript trust" in warning for warning in loaded.import_warnings)


def test_an_env_file_in_a_folder_named_like_a_variable_is_still_covered(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "${userHome}"
    repo.mkdir()
    monkeypatch.chdir(repo)
    config = write(repo / ".toolscript.json", {"import": ["cursor"]})
    write(
        repo / ".cursor" / "mcp.json",
        {"mcpServers": {"c": {"command": "echo", "envFile": "${workspaceFolder}/.env"}}},
    )
    write(repo / ".env", "MODE=1\n")
    assert repo / ".env" in trust.imported_project_files(config)
    trust.trust(config)
    write(repo / ".env", "LD_PRELOAD=/tmp/evil.so\n")
    assert trust.needs_trust(config)


# -- broken files: named, and the other servers kept -----------------------------------------


def test_a_broken_users_claude_json_keeps_every_other_server(home: Path, repo: Path) -> None:
    config = a_project(repo)
    write(home / ".claude.json", '{"mcpServers": {"u": {"command": "x"}},}}')
    loaded = load_config(config)
    assert {server.name for server in loaded.servers} == {"own", "cursors"}
    assert any(
        warning.startswith(f"{home / '.claude.json'}:1:") and "invalid JSON" in warning
        for warning in loaded.import_warnings
    )


def test_a_file_not_utf8_is_named_with_its_line_and_column(home: Path, repo: Path) -> None:
    path = repo / ".mcp.json"
    path.write_bytes(b'{\n  "mcpServers": {"a": {"command": "\xff"}}}')
    imports = read_imports(["claude-code"], repo, {"HOME": str(home)})
    assert imports.broken[0].startswith(f"{path}:2:36: not UTF-8")


def test_a_byte_order_mark_is_read_past(home: Path, repo: Path) -> None:
    (repo / ".mcp.json").write_bytes(b'\xef\xbb\xbf{"mcpServers": {"a": {"command": "echo"}}}')
    imports = read_imports(["claude-code"], repo, {"HOME": str(home)})
    assert [server.name for server in imports.servers] == ["a"]
    assert not imports.warnings


def test_list_servers_with_a_broken_import_lists_the_rest_and_names_the_file(
    home: Path, repo: Path
) -> None:
    a_project(repo)
    write(repo / ".mcp.json", "{\n  oops\n}")
    result = runner.invoke(app, ["list-servers"])
    assert result.exit_code == 0, result.output
    assert "own" in result.stdout and "cursors" in result.stdout
    assert f"{repo / '.mcp.json'}:2:3: invalid JSON" in result.stderr


# -- init --force and a .toolscript.json it cannot read ----------------------------------------


def test_init_force_never_replaces_a_config_it_cannot_parse(home: Path, repo: Path) -> None:
    write(repo / ".mcp.json", {"mcpServers": {"a": {"command": "echo"}}})
    written = '{\n  "mcpServers": {"mine": {"command": "echo"}},\n}\n'  # a trailing comma
    config = write(repo / ".toolscript.json", written)
    result = runner.invoke(app, ["init", "--force", "--yes"])
    assert isinstance(result.exception, UsageError)
    # The position is the trailing comma's, and the message names it.
    assert f"{config}:2:46: invalid JSON: a comma after the last entry" in str(result.exception)
    assert config.read_text() == written


# -- toolscript mcp in disguise ----------------------------------------------------------------


def test_toolscript_mcp_run_through_a_shell_line_is_recognised(home: Path, repo: Path) -> None:
    """Claude Desktop's entries often run `bash -lc "..."` for a login PATH: imported, the
    gateway would serve its own face as a server (six tools that call back into it)."""
    assert is_toolscript_itself("sh", ["-c", "exec toolscript mcp"])
    assert is_toolscript_itself("bash", ["-lc", "cd ~/p && uvx toolscript@latest mcp --http"])
    assert not is_toolscript_itself("bash", ["-lc", "toolscript exec x.ts"])
    assert not is_toolscript_itself("sh", ["-c", "toolscript list-servers; other-server mcp"])
    write(
        repo / ".mcp.json",
        {"mcpServers": {"ts": {"command": "bash", "args": ["-lc", "cd ~/p && toolscript mcp"]}}},
    )
    imports = read_imports(["claude-code"], repo, {"HOME": str(home)})
    assert not imports.servers and imports.itself


# -- the trust check racing the read ----------------------------------------------------------


def test_an_imported_file_changed_between_the_trust_check_and_its_read_is_refused(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `git pull` can land between hashing the project's files and reading them: what was
    read must still be what was trusted. (The pull is made to land there: a race cannot be
    caused on time for real.)"""
    import toolscript.config
    import toolscript.otherclients

    config = a_project(repo)
    write(repo / ".mcp.json", {"mcpServers": {"a": {"command": "echo"}}})
    trust.trust(config)
    real = toolscript.otherclients.read_imports

    def pulled_meanwhile(*args: Any, **kwargs: Any) -> Any:
        write(repo / ".mcp.json", {"mcpServers": {"a": {"command": "touch", "args": ["pwned"]}}})
        return real(*args, **kwargs)

    monkeypatch.setattr(toolscript.config, "read_imports", pulled_meanwhile)
    with pytest.raises(UntrustedConfigError):
        load_config(config, require_trust=True)


def test_a_live_reload_reading_a_file_changed_after_the_trust_check_is_refused(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolscript.config
    import toolscript.otherclients
    from toolscript.gateway import core

    config = a_project(repo)
    write(repo / ".mcp.json", {"mcpServers": {"a": {"command": "echo"}}})
    trust.trust(config)
    real = toolscript.otherclients.read_imports

    def pulled_meanwhile(*args: Any, **kwargs: Any) -> Any:
        write(repo / ".mcp.json", {"mcpServers": {"a": {"command": "touch", "args": ["pwned"]}}})
        return real(*args, **kwargs)

    monkeypatch.setattr(toolscript.config, "read_imports", pulled_meanwhile)
    with pytest.raises(UntrustedConfigError):
        core._parse_config(config.read_bytes(), config, repo)


# -- positions in a large ~/.claude.json ------------------------------------------------------


def every_path(value: Any, at: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found = [at]
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for part, item in items:
            found.extend(every_path(item, (*at, part)))
    return found


@pytest.mark.parametrize("sample", sorted(SAMPLES.glob("*/*.json")), ids=lambda p: p.name)
def test_the_locator_finds_what_the_full_positions_parse_finds(sample: Path) -> None:
    """Warnings of a megabytes ~/.claude.json were positioned by parsing it all in Python
    (seconds on every command); the locator walks only the path, and agrees."""
    text = strip_json_comments(sample.read_text())
    full = parse_with_positions(text)
    locator = JsonLocator(text)
    for path in [*every_path(full.value), ("missing",), ("mcpServers", "missing", "x")]:
        for key in (False, True):
            assert locator.line_col(path, key=key) == full.line_col(path, key=key), (path, key)


def test_a_warning_in_a_jsonc_file_with_comments_between_entries_is_placed_right(
    home: Path, repo: Path
) -> None:
    path = write(
        repo / ".vscode" / "mcp.json",
        '{\n  // mine\n  "servers": {\n    /* one */ "a": {"command": "echo", "odd": 1},\n  }\n}',
    )
    imports = read_imports(["vscode"], repo, {"HOME": str(home)})
    assert [server.name for server in imports.servers] == ["a"]
    assert imports.warnings == (
        f"{path}:4:40: servers.a.odd: not supported by toolscript; ignored",
    )


# -- one name, two clients ---------------------------------------------------------------------


def test_a_name_two_clients_define_differently_says_which_one_is_used(
    home: Path, repo: Path
) -> None:
    write(repo / ".mcp.json", {"mcpServers": {"gh": {"command": "from-claude"}}})
    write(home / ".cursor" / "mcp.json", {"mcpServers": {"gh": {"command": "from-cursor"}}})
    imports = read_imports(["cursor", "claude-code"], repo, {"HOME": str(home)})
    assert [(server.name, server.entry["command"]) for server in imports.servers] == [
        ("gh", "from-cursor")
    ]
    assert imports.warnings == (
        f"{repo / '.mcp.json'}:1:17: mcpServers.gh: Cursor defines 'gh' too "
        f"({home / '.cursor' / 'mcp.json'}), first in import; this one is not used",
    )
    # the same entry in both: nothing to say
    write(repo / ".mcp.json", {"mcpServers": {"gh": {"command": "from-cursor"}}})
    assert not read_imports(["cursor", "claude-code"], repo, {"HOME": str(home)}).warnings


def test_files_nested_too_deeply_are_named_and_the_rest_stays(home: Path, repo: Path) -> None:
    config = a_project(repo)
    deep = "[" * 50_000 + "]" * 50_000
    write(repo / ".mcp.json", '{\n  "mcpServers": ' + deep + "\n}")
    write(home / ".codex" / "config.toml", "[mcp_servers.x]\nargs = " + deep + "\n")
    loaded = load_config(
        write(config, {"import": ["claude-code", "codex", "cursor"], "mcpServers": {}})
    )
    assert {server.name for server in loaded.servers} == {"cursors"}
    warnings = "\n".join(loaded.import_warnings)
    assert f"{repo / '.mcp.json'}:2:" in warnings and "nested too deeply" in warnings
    assert f"{home / '.codex' / 'config.toml'}:2:" in warnings
    trust.trust(config)  # the project's deep file is hashed, not parsed: no error
    write(config, '{"mcpServers": ' + deep + "}")
    with pytest.raises(ConfigError) as failed:
        load_config(config)
    assert failed.value.message.startswith(f"{config}:1:")


def test_init_adds_to_a_gitignore_not_utf8_and_survives_one_it_cannot_write(
    home: Path, repo: Path
) -> None:
    write(repo / ".mcp.json", {"mcpServers": {"a": {"command": "echo"}}})
    (repo / ".gitignore").write_bytes(b"caf\xe9/")  # Latin-1, no newline at its end
    result = runner.invoke(app, ["init", "--yes"])
    assert result.exit_code == 0, result.output
    assert (repo / ".gitignore").read_bytes() == b"caf\xe9/\n.toolscript/\n"
    (repo / ".toolscript.json").unlink()
    (repo / ".gitignore").unlink()
    (repo / ".gitignore").mkdir()
    result = runner.invoke(app, ["init", "--yes"])
    assert result.exit_code == 0, result.output
    assert json.loads((repo / ".toolscript.json").read_text()) == {"import": ["claude-code"]}
    assert "could not add .toolscript/ to" in result.stderr


def test_an_env_file_reached_through_a_symlinked_folder_and_dotdot_is_the_one_trusted(
    home: Path, repo: Path
) -> None:
    """`.cursor/../evil.env` with `.cursor` a link to `sub/deeper`: trust hashed
    `evil.env` (".." taken away), the OS read `sub/evil.env`, which a pull could change."""
    config = write(repo / ".toolscript.json", {"import": ["cursor"]})
    deeper = repo / "sub" / "deeper"
    write(
        deeper / "mcp.json",
        {
            "mcpServers": {
                "c": {"command": "echo", "envFile": "${workspaceFolder}/.cursor/../evil.env"}
            }
        },
    )
    (repo / ".cursor").symlink_to(deeper)
    write(repo / "evil.env", "MODE=1\n")
    write(repo / "sub" / "evil.env", "MODE=1\n")
    trust.trust(config)
    write(repo / "sub" / "evil.env", "LD_PRELOAD=/tmp/evil.so\n")  # a pull: not hashed
    loaded = load_config(config, require_trust=True)
    assert dict(loaded.server("c").env) == {"MODE": "1"}
