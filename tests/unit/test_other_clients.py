"""The `import` key: other clients' MCP configs (tests/client_configs/, as each client writes
them) read as .toolscript.json entries, merged, trusted, listed and written by `init`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolscript.cli.main import app
from toolscript.config import load_config
from toolscript.errors import ConfigError, UntrustedConfigError, UsageError
from toolscript.otherclients import (
    client_files,
    discover,
    is_toolscript_itself,
    read_imports,
    strip_json_comments,
)
from toolscript.store import trust

SAMPLES = Path(__file__).resolve().parents[1] / "client_configs"
runner = CliRunner()


def place(sample: str, target: Path, project_dir: Path | None = None) -> Path:
    """Copy a sample where its client keeps it (``PROJECT_DIR`` made the real folder)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    text = (SAMPLES / sample).read_text()
    if project_dir is not None:
        text = text.replace("PROJECT_DIR", str(project_dir))
    target.write_text(text)
    return target


def environ(home: Path, **values: str) -> dict[str, str]:
    return {"HOME": str(home), **values}


def by_name(clients: list[str], repo: Path, env: dict[str, str], platform: str = "linux"):  # type: ignore[no-untyped-def]
    found = read_imports(clients, repo, env, platform)
    return {server.name: server for server in found.servers}, found


# -- each client's format ------------------------------------------------------------------


def test_claude_code_reads_local_project_and_user_scopes_in_its_precedence(
    home: Path, repo: Path
) -> None:
    place("claude-code/mcp.json", repo / ".mcp.json")
    place("claude-code/claude.json", home / ".claude.json", repo)
    servers, found = by_name(["claude-code"], repo, environ(home, GITHUB_TOKEN="ghp_x"))
    assert sorted(servers) == ["events", "filesystem", "github", "memory", "sentry"]
    # .mcp.json (project scope) wins over the user's github; the other project's is absent
    assert servers["github"].source == repo / ".mcp.json"
    assert servers["github"].entry == {
        "type": "http",
        "url": "https://api.githubcopilot.com/mcp/",
        "headers": {"Authorization": "Bearer ghp_x"},
    }
    assert servers["github"].substituted == (("GITHUB_TOKEN", "ghp_x"),)
    assert servers["sentry"].source == home / ".claude.json"  # the project's own entry
    assert servers["sentry"].entry == {"type": "http", "url": "https://mcp.sentry.dev/mcp"}
    assert servers["filesystem"].entry["args"][-1] == "./docs"  # ${DOCS_DIR:-./docs}
    assert servers["events"].entry == {"type": "sse", "url": "https://events.example.com/sse"}
    assert servers["filesystem"].target == (
        "npx -y @modelcontextprotocol/server-filesystem ${DOCS_DIR:-./docs}"
    )
    assert found.itself == (f"{repo / '.mcp.json'}: toolscript",)  # `toolscript mcp` skipped
    assert found.warnings == ()


def test_claude_code_skips_a_server_whose_variable_is_unset_naming_file_line_and_field(
    home: Path, repo: Path
) -> None:
    place("claude-code/mcp.json", repo / ".mcp.json")
    servers, found = by_name(["claude-code"], repo, environ(home))
    assert "github" not in servers
    assert "filesystem" in servers
    (warning,) = found.warnings
    assert warning.startswith(f"{repo / '.mcp.json'}:7:26: mcpServers.github.headers.Authorization")
    assert "GITHUB_TOKEN is not set" in warning


def test_claude_desktop_is_found_where_each_os_keeps_it(home: Path, repo: Path) -> None:
    mac = home / "Library/Application Support/Claude/claude_desktop_config.json"
    linux = home / ".config/Claude/claude_desktop_config.json"
    assert client_files("claude-desktop", repo, environ(home), "darwin")[0].path == mac
    assert client_files("claude-desktop", repo, environ(home), "linux")[0].path == linux
    windows = client_files("claude-desktop", repo, environ(home, APPDATA="/A"), "win32")
    assert windows[0].path == Path("/A/Claude/claude_desktop_config.json")
    place("claude-desktop/claude_desktop_config.json", mac)
    servers, found = by_name(["claude-desktop"], repo, environ(home), "darwin")
    assert sorted(servers) == ["brave-search", "sqlite"]
    assert servers["brave-search"].entry["env"] == {
        "BRAVE_API_KEY": "BSA-literal-key-from-the-docs"
    }
    assert servers["sqlite"].entry["args"] == [
        "mcp-server-sqlite",
        "--db-path",
        "/Users/me/test.db",
    ]
    assert found.warnings == ()


def test_codex_toml_tables_and_its_named_variables(home: Path, repo: Path) -> None:
    place("codex/config.toml", home / ".codex" / "config.toml")
    env = environ(home, FIGMA_OAUTH_TOKEN="figd_1", DOCS_TOKEN="dt")
    servers, found = by_name(["codex"], repo, env)
    assert sorted(servers) == ["context7", "docs", "figma", "old"]
    assert servers["context7"].entry == {
        "type": "stdio",
        "command": "npx",
        "args": ["-y", "@upstash/context7-mcp"],
        "env": {"MY_ENV_VAR": "MY_ENV_VALUE"},
    }
    assert servers["figma"].entry == {
        "type": "http",
        "url": "https://mcp.figma.com/mcp",
        "headers": {"X-Figma-Region": "us-east-1", "Authorization": "Bearer figd_1"},
    }
    docs = servers["docs"].entry
    assert docs["env"] == {"DOCS_TOKEN": "dt"}
    assert docs["cwd"] == "/srv/docs"
    assert docs["timeout"] == 45.0
    assert docs["includeTools"] == ["search", "read"]
    assert servers["old"].entry["disabled"] is True
    assert found.warnings == ()
    # CODEX_HOME moves it; a token variable unset skips the server at its key's line
    moved = home / "elsewhere"
    place("codex/config.toml", moved / "config.toml")
    servers, found = by_name(["codex"], repo, environ(home, CODEX_HOME=str(moved)))
    assert "figma" not in servers and "docs" not in servers
    assert any(
        w.startswith(f"{moved / 'config.toml'}:13:1: mcp_servers.figma.bearer_token_env_var")
        for w in found.warnings
    )


def test_codex_invalid_toml_names_file_line_and_column(home: Path, repo: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers.x]\ncommand = "a"\nargs = [\n')
    imports = read_imports(["codex"], repo, environ(home))
    assert imports.broken[0].startswith(f"{path}:4:1: invalid TOML")
    assert any(warning.startswith(f"{path}:4:1: invalid TOML") for warning in imports.warnings)


def test_cursor_project_over_global_with_its_variables_and_env_file(home: Path, repo: Path) -> None:
    place("cursor/mcp.json", repo / ".cursor" / "mcp.json")
    place("cursor/global-mcp.json", home / ".cursor" / "mcp.json")
    (repo / ".env.mcp").write_text("# notes\nNOTES_TOKEN='abc'\nexport MODE=fast\n")
    servers, found = by_name(["cursor"], repo, environ(home, LINEAR_API_KEY="lin_1"))
    assert sorted(servers) == ["linear", "local-notes", "time"]
    assert servers["linear"].entry["url"] == "https://mcp.linear.app/mcp"  # the project's
    assert servers["linear"].entry["headers"] == {"Authorization": "Bearer lin_1"}
    notes = servers["local-notes"].entry
    assert notes["args"] == [f"{repo}/tools/notes-server.js"]
    assert notes["env"] == {"NOTES_TOKEN": "abc", "MODE": "fast", "NOTES_DIR": f"{repo}/notes"}
    assert servers["time"].source == home / ".cursor" / "mcp.json"
    assert found.warnings == ()


def test_vscode_servers_inputs_and_workspace_folder(home: Path, repo: Path) -> None:
    place("vscode/mcp.json", repo / ".vscode" / "mcp.json")
    (repo / ".env").write_text("PORT=7\n")
    servers, found = by_name(["vscode"], repo, environ(home, CONTOSO_TOKEN="c1"))
    assert sorted(servers) == ["fetch", "my-remote", "workspace-tools"]
    assert servers["my-remote"].entry["headers"] == {"VERSION": "1.2", "Authorization": "Bearer c1"}
    assert servers["workspace-tools"].entry["args"] == [f"{repo}/server.js"]
    assert servers["workspace-tools"].entry["env"] == {"PORT": "7"}
    (warning,) = found.warnings  # the prompted input: named, with where it is
    assert warning.startswith(
        f"{repo / '.vscode' / 'mcp.json'}:18:31: servers.Perplexity.env.PERPLEXITY_API_KEY: "
        "${input:perplexity-key} is an input VS Code prompts for"
    )
    assert warning.endswith("'Perplexity' skipped")


def test_gemini_settings_with_comments_http_url_and_timeouts(home: Path, repo: Path) -> None:
    place("gemini/settings.json", repo / ".gemini" / "settings.json")
    env = environ(home, DB_CONNECTION_STRING="postgres://db", EXTERNAL_API_KEY="k")
    servers, found = by_name(["gemini"], repo, env)
    assert sorted(servers) == ["docker", "httpServer", "pythonTools", "sseServer"]
    python = servers["pythonTools"].entry
    assert python["env"] == {"DATABASE_URL": "postgres://db", "API_KEY": "k"}
    assert python["cwd"] == "./mcp-servers/python"
    assert python["timeout"] == 15.0
    assert servers["sseServer"].entry == {"type": "sse", "url": "https://sse.example.com/sse"}
    http = servers["httpServer"].entry
    assert http["type"] == "http" and http["url"] == "http://localhost:3000/mcp"
    assert http["includeTools"] == ["safe_tool", "file_reader"]
    assert servers["docker"].entry["excludeTools"] == ["dangerous_tool"]
    assert found.warnings == ()


def test_windsurf_server_url_env_and_file_variables(home: Path, repo: Path) -> None:
    place("windsurf/mcp_config.json", home / ".codeium" / "windsurf" / "mcp_config.json")
    (home / ".figma-token").write_text("figma-secret\n")
    servers, found = by_name(["windsurf"], repo, environ(home, GITHUB_PAT="ghp_w"))
    assert servers["github"].entry["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_w"}
    assert servers["figma"].entry == {
        "type": "http",
        "url": "https://mcp.figma.com/sse",
        "headers": {"Authorization": "Bearer figma-secret"},
    }
    assert servers["puppeteer"].entry["disabled"] is True
    assert servers["puppeteer"].entry["excludeTools"] == ["puppeteer_evaluate"]
    assert found.warnings == ()


def test_an_unsupported_key_is_named_and_the_server_kept(home: Path, repo: Path) -> None:
    (repo / ".mcp.json").write_text(
        '{"mcpServers": {"a": {"command": "x", "alwaysAllow": ["t"]},\n'
        ' "b": {"type": "http", "url": "https://h/mcp", "headersHelper": "get-headers"},\n'
        ' "c__d": {"command": "y"},\n'
        ' "e": {"command": "z", "args": "not-a-list"}}}'
    )
    servers, found = by_name(["claude-code"], repo, environ(home))
    assert list(servers) == ["a"]
    path = repo / ".mcp.json"
    assert found.warnings == (
        f"{path}:1:39: mcpServers.a.alwaysAllow: not supported by toolscript; ignored",
        f"{path}:2:65: mcpServers.b.headersHelper: headers made by a command (headersHelper) "
        "are not supported by toolscript; define the server in .toolscript.json with its "
        "headers as ${VAR}; 'b' skipped",
        f"{path}:3:2: mcpServers.c__d: the name 'c__d' has '/' or '__', which toolscript server "
        "names cannot; skipped (define it in .toolscript.json under another name)",
        f"{path}:4:32: mcpServers.e.args: expected an array of strings, got string; 'e' skipped",
    )


def test_invalid_json_of_an_imported_file_names_its_line_and_column(home: Path, repo: Path) -> None:
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "mcp.json").write_text('{\n  "mcpServers": {\n    "a": {command: 1}\n')
    imports = read_imports(["cursor"], repo, environ(home))
    assert imports.broken[0].startswith(f"{repo / '.cursor' / 'mcp.json'}:3:11: invalid JSON")


def test_toolscript_itself_is_recognised_however_it_is_started() -> None:
    assert is_toolscript_itself("toolscript", ["mcp"])
    assert is_toolscript_itself("/usr/local/bin/toolscript", ["--config", "x.json", "mcp"])
    assert is_toolscript_itself("uvx", ["toolscript", "mcp"])
    assert is_toolscript_itself("uvx", ["toolscript==0.4", "mcp", "--http"])
    assert is_toolscript_itself("python", ["-m", "toolscript", "mcp"])
    assert not is_toolscript_itself("toolscript", ["gateway", "start"])
    assert not is_toolscript_itself("npx", ["toolscript-helper", "mcp"])


def test_comments_and_trailing_commas_are_blanked_in_place() -> None:
    text = '{\n  // a comment\n  "a": "x // not a comment", /* b */\n  "c": [1, 2,],\n}'
    stripped = strip_json_comments(text)
    assert json.loads(stripped) == {"a": "x // not a comment", "c": [1, 2]}
    assert len(stripped) == len(text)
    assert stripped.count("\n") == text.count("\n")


# -- the config: merged, sourced, trusted, listed ------------------------------------------


def test_toolscript_json_entries_win_and_each_server_names_its_source(
    home: Path, repo: Path
) -> None:
    place("claude-code/mcp.json", repo / ".mcp.json")
    place("cursor/mcp.json", repo / ".cursor" / "mcp.json")
    (repo / ".env.mcp").write_text("NOTES_TOKEN=n\n")
    config = repo / ".toolscript.json"
    config.write_text(
        json.dumps(
            {
                "import": ["claude-code", "cursor"],
                "mcpServers": {"github": {"command": "my-github-mcp"}},
            }
        )
    )
    loaded = load_config(config, environ=environ(home, LINEAR_API_KEY="lin_1"))
    servers = {server.name: server for server in loaded.servers}
    assert servers["github"].command == "my-github-mcp"
    assert servers["github"].source == config
    assert servers["linear"].source == repo / ".cursor" / "mcp.json"
    assert servers["linear"].summary()["source"] == str(repo / ".cursor" / "mcp.json")
    assert "Bearer lin_1" in servers["linear"].secrets  # a header: never in a log
    assert servers["filesystem"].cwd == repo  # stdio servers run in the project
    assert "toolscript" not in servers
    assert [s.name for s in loaded.servers] == [
        "github", "filesystem", "events", "linear", "local-notes",
    ]  # fmt: skip
    assert repo / ".vscode" / "mcp.json" not in loaded.imported_files
    assert repo / ".cursor" / "mcp.json" in loaded.imported_files
    assert home / ".cursor" / "mcp.json" in loaded.imported_files  # watched though absent


def test_an_unknown_client_in_import_names_the_line(home: Path, repo: Path) -> None:
    config = repo / ".toolscript.json"
    config.write_text('{\n  "import": ["claude-code", "zed"]\n}')
    with pytest.raises(ConfigError) as failed:
        load_config(config, environ=environ(home))
    assert failed.value.message.startswith(f"{config}:2:29: import[1]: expected one of")


def test_trust_covers_imported_project_files_not_the_users_own(home: Path, repo: Path) -> None:
    config = repo / ".toolscript.json"
    config.write_text(json.dumps({"import": ["claude-code", "cursor"]}))
    place("claude-code/claude.json", home / ".claude.json", repo)
    trust.trust(config)
    env = environ(home)
    assert load_config(config, environ=env, require_trust=True).servers
    # the user's own file changes: still trusted
    place("cursor/global-mcp.json", home / ".cursor" / "mcp.json")
    assert trust.is_trusted(config)
    # the repository adds a project file: untrusted until `toolscript trust`
    place("claude-code/mcp.json", repo / ".mcp.json")
    with pytest.raises(UntrustedConfigError) as refused:
        load_config(config, environ=env, require_trust=True)
    assert "(with the files it imports: .mcp.json)" in refused.value.message
    trust.trust(config)
    assert trust.is_trusted(config)
    (repo / ".mcp.json").write_text('{"mcpServers": {}}')  # edited
    assert not trust.is_trusted(config)
    trust.trust(config)
    (repo / ".mcp.json").unlink()  # removed: back to the version first trusted
    assert trust.is_trusted(config)
    trust.forget(config)
    place("claude-code/mcp.json", repo / ".mcp.json")
    trust.trust(config)
    (repo / ".mcp.json").unlink()  # removed: a version never trusted
    assert not trust.is_trusted(config)


def test_a_config_without_import_is_trusted_by_its_bytes_as_before(home: Path, repo: Path) -> None:
    import hashlib

    config = repo / ".toolscript.json"
    config.write_text('{"mcpServers": {}}')
    trust.trust(config)
    record = trust.trusted()[trust.trust_key(config)]
    assert record["sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    place("claude-code/mcp.json", repo / ".mcp.json")  # not imported: not covered
    assert trust.is_trusted(config)


def test_list_servers_shows_each_servers_source_and_the_import_warnings(
    home: Path, repo: Path
) -> None:
    place("vscode/mcp.json", repo / ".vscode" / "mcp.json")
    place("cursor/global-mcp.json", home / ".cursor" / "mcp.json")
    (repo / ".toolscript.json").write_text(
        json.dumps({"import": ["vscode", "cursor"], "mcpServers": {"own": {"command": "o"}}})
    )
    result = runner.invoke(app, ["list-servers", "--json"])
    assert result.exit_code == 0, result.output
    sources = {server["name"]: server["source"] for server in json.loads(result.stdout)}
    assert sources["own"] == str(repo / ".toolscript.json")
    assert sources["fetch"] == str(repo / ".vscode" / "mcp.json")
    assert sources["time"] == str(home / ".cursor" / "mcp.json")
    assert "warning: import: " in result.stderr and "${input:perplexity-key}" in result.stderr
    table = runner.invoke(app, ["list-servers"])
    rows = {line.split("\t")[0]: line.split("\t")[-1] for line in table.stdout.splitlines()}
    assert rows["own"] == ".toolscript.json"
    assert rows["fetch"] == ".vscode/mcp.json"
    assert rows["time"] == "~/.cursor/mcp.json"


# -- toolscript init ----------------------------------------------------------------------


def test_init_with_claude_code_and_cursor_configs_imports_them(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place("claude-code/mcp.json", repo / ".mcp.json")
    place("cursor/mcp.json", repo / ".cursor" / "mcp.json")
    place("cursor/global-mcp.json", home / ".cursor" / "mcp.json")
    (repo / ".env.mcp").write_text("NOTES_TOKEN=n\n")
    (repo / ".gitignore").write_text("node_modules/")
    result = runner.invoke(app, ["init"], input="y\n")
    assert result.exit_code == 0, result.output
    assert "Claude Code (claude-code)" in result.stdout and ".cursor/mcp.json" in result.stdout
    assert "~/.cursor/mcp.json" in result.stdout
    assert "Write .toolscript.json importing claude-code, cursor?" in result.stderr  # the terminal
    assert json.loads((repo / ".toolscript.json").read_text()) == {
        "import": ["claude-code", "cursor"]
    }
    assert (repo / ".gitignore").read_text() == "node_modules/\n.toolscript/\n"
    assert "toolscript trust" in result.stdout
    # no hand editing: every server the two clients define but toolscript's own
    listed = runner.invoke(app, ["list-servers", "--json"])
    names = sorted(server["name"] for server in json.loads(listed.stdout))
    assert names == ["events", "filesystem", "local-notes", "time"]
    # github and the project's linear wait for their variables (named on stderr, as Claude
    # Code and Cursor expand them); ~/.cursor's linear does not stand in for the project's
    assert "GITHUB_TOKEN is not set" in listed.stderr
    assert "LINEAR_API_KEY is not set" in listed.stderr
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_1")
    monkeypatch.setenv("LINEAR_API_KEY", "lin_1")
    listed = runner.invoke(app, ["list-servers", "--json"])
    servers = {server["name"]: server for server in json.loads(listed.stdout)}
    assert sorted(servers) == ["events", "filesystem", "github", "linear", "local-notes", "time"]
    assert servers["linear"]["target"] == "https://mcp.linear.app/mcp"
    assert listed.stderr == ""


def test_init_asks_first_refuses_to_overwrite_and_force_keeps_other_keys(
    home: Path, repo: Path
) -> None:
    place("cursor/global-mcp.json", home / ".cursor" / "mcp.json")
    declined = runner.invoke(app, ["init"], input="n\n")
    assert declined.exit_code == 1
    assert not (repo / ".toolscript.json").exists()
    assert runner.invoke(app, ["init", "--yes"]).exit_code == 0
    again = runner.invoke(app, ["init", "--yes"])
    assert isinstance(again.exception, UsageError) and "exists already" in str(again.exception)
    config = repo / ".toolscript.json"
    config.write_text(json.dumps({"mcpServers": {"own": {"command": "o"}}, "import": []}))
    assert runner.invoke(app, ["init", "--yes", "--force"]).exit_code == 0
    assert json.loads(config.read_text()) == {
        "mcpServers": {"own": {"command": "o"}},
        "import": ["cursor"],
    }
    assert (repo / ".gitignore").read_text() == ".toolscript/\n"  # added once


def test_init_json_reports_what_it_found_and_writes_only_with_yes(home: Path, repo: Path) -> None:
    place("codex/config.toml", home / ".codex" / "config.toml")
    dry = runner.invoke(app, ["init", "--json"])
    assert dry.exit_code == 0
    report = json.loads(dry.stdout)
    assert report["written"] is False and report["import"] == ["codex"]
    (found,) = report["found"]
    assert found["client"] == "codex"
    assert [s["name"] for s in found["files"][0]["servers"]] == ["context7", "old"]
    assert not (repo / ".toolscript.json").exists()
    written = json.loads(runner.invoke(app, ["init", "--json", "--yes"]).stdout)
    assert written["written"] is True and written["needs_trust"] is True


def test_init_with_nothing_to_import_writes_nothing(home: Path, repo: Path) -> None:
    result = runner.invoke(app, ["init", "--yes"])
    assert isinstance(result.exception, UsageError)
    assert "found no MCP servers" in str(result.exception)
    assert not (repo / ".toolscript.json").exists()


def test_discover_reports_a_broken_file_without_failing(home: Path, repo: Path) -> None:
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text("{")
    place("claude-code/mcp.json", repo / ".mcp.json")
    found = {item.client: item for item in discover(repo, environ(home))}
    assert found["cursor"].error is not None and "invalid JSON" in found["cursor"].error
    assert [s.name for s in found["claude-code"].imports.servers] == ["filesystem", "events"]


def test_config_check_and_trust_name_what_import_skips_and_covers(home: Path, repo: Path) -> None:
    place("vscode/mcp.json", repo / ".vscode" / "mcp.json")
    (repo / ".toolscript.json").write_text(json.dumps({"import": ["vscode"]}))
    checked = runner.invoke(app, ["config", "check"])
    assert checked.exit_code == 0
    assert "valid, 1 server\n" in checked.stdout  # fetch; the others wait (named below)
    assert "${input:perplexity-key}" in checked.stderr and "workspace-tools" in checked.stderr
    report = json.loads(runner.invoke(app, ["config", "check", "--json"]).stdout)
    # an input, CONTOSO_TOKEN, the .env; and fetch's uvx, which this PATH may not have
    warnings = [w for w in report["warnings"] if ": fetch: command not found: uvx" not in w]
    assert len(warnings) == 3
    trusted = runner.invoke(app, ["trust"])
    assert trusted.exit_code == 0
    assert f"with the file it imports: {repo / '.vscode' / 'mcp.json'}" in trusted.stdout
    again = json.loads(runner.invoke(app, ["trust", "--json"]).stdout)
    assert again["imported"] == [str(repo / ".vscode" / "mcp.json")]


def test_init_in_a_subfolder_writes_there_without_naming_the_parents_config(
    home: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    from toolscript.cli.entry import main

    (repo / ".toolscript.json").write_text("{}")
    inside = repo / "service"
    (inside / ".cursor").mkdir(parents=True)
    place("cursor/global-mcp.json", inside / ".cursor" / "mcp.json")
    monkeypatch.chdir(inside)
    monkeypatch.setattr(sys, "argv", ["toolscript", "init", "--yes"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 0
    shown = capsys.readouterr()
    assert "toolscript: using" not in shown.err
    assert json.loads((inside / ".toolscript.json").read_text()) == {"import": ["cursor"]}


def test_trust_covers_an_env_file_in_the_project_that_an_imported_entry_reads(
    home: Path, repo: Path
) -> None:
    """A repository's env file sets a trusted command's environment (NODE_OPTIONS): it is
    config, and changing it asks for trust again, as the entry that names it would."""
    config = repo / ".toolscript.json"
    config.write_text(json.dumps({"import": ["cursor"]}))
    place("cursor/mcp.json", repo / ".cursor" / "mcp.json")  # envFile: .env.mcp
    (repo / ".env.mcp").write_text("NOTES_TOKEN=n\n")
    outside = home / "user.env"
    outside.write_text("A=1\n")
    write = {"mcpServers": {"u": {"command": "x", "envFile": str(outside)}}}
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps(write))
    trust.trust(config)
    assert trust.is_trusted(config)
    outside.write_text("A=2\n")  # the user's own file, outside the project
    assert trust.is_trusted(config)
    (repo / ".env.mcp").write_text("NOTES_TOKEN=n\nNODE_OPTIONS=--require ./x.js\n")
    assert not trust.is_trusted(config)
    with pytest.raises(UntrustedConfigError) as refused:
        load_config(config, environ=environ(home), require_trust=True)
    assert ".env.mcp" in refused.value.message


def test_env_files_are_watched_with_the_files_that_name_them(home: Path, repo: Path) -> None:
    place("vscode/mcp.json", repo / ".vscode" / "mcp.json")
    found = read_imports(["vscode"], repo, environ(home))
    assert found.watched == (repo / ".vscode" / "mcp.json", repo / ".env")  # .env not there yet


def test_a_skipped_entry_shadows_a_lower_one_of_the_same_name(home: Path, repo: Path) -> None:
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "mcp.json").write_text(
        '{"mcpServers": {"db": {"command": "db-mcp", "env": {"URL": "${env:DB_URL}"}}}}'
    )
    place("cursor/global-mcp.json", home / ".cursor" / "mcp.json")
    (home / ".cursor" / "mcp.json").write_text('{"mcpServers": {"db": {"command": "other"}}}')
    servers, found = by_name(["cursor"], repo, environ(home))
    assert servers == {}
    assert "DB_URL is not set" in found.warnings[0]


def test_an_imported_server_name_ending_in_underscore_is_skipped(home: Path, repo: Path) -> None:
    (repo / ".mcp.json").write_text(
        '{"mcpServers": {"a": {"command": "x"}, "a_": {"command": "y"}}}'
    )
    servers, found = by_name(["claude-code"], repo, environ(home))
    assert list(servers) == ["a"]
    assert any("the name 'a_' ends in '_'" in warning for warning in found.warnings), found


def test_an_entry_of_a_transport_toolscript_lacks_is_skipped_naming_its_type(
    home: Path, repo: Path
) -> None:
    """A VS Code entry typed as a transport toolscript does not speak: one with a command
    was run as a stdio server whatever its type said, one with a ws:// URL was told about
    its URL rather than its type."""
    (repo / ".vscode").mkdir()
    (repo / ".vscode" / "mcp.json").write_text(
        '{"servers": {\n'
        ' "a": {"type": "websocket", "command": "x"},\n'
        ' "b": {"type": "websocket", "url": "ws://localhost:1234"},\n'
        ' "c": {"type": "sse", "command": "y"},\n'
        ' "d": {"type": "stdio", "command": "z"}}}'
    )
    servers, found = by_name(["vscode"], repo, environ(home))
    assert list(servers) == ["d"]
    unknown = "transport 'websocket' is not one toolscript connects to (stdio, http, sse)"
    assert [warning.split(": ", 1)[1] for warning in found.warnings] == [
        f"servers.a.type: {unknown}; 'a' skipped",
        f"servers.b.type: {unknown}; 'b' skipped",
        "servers.c.type: an sse server needs 'url'; 'c' skipped",
    ]
