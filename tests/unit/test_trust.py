"""Trust of a project's config: what it is bound to, and who refuses an untrusted one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolscript.config import load_config
from toolscript.errors import ConfigError, UntrustedConfigError
from toolscript.store import trust


@pytest.fixture(autouse=True)
def trust_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TOOLSCRIPT_CONFIG", "TOOLSCRIPT_TRUSTED_PATHS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLSCRIPT_CONFIG_HOME", str(tmp_path / "trust"))
    return tmp_path / "trust"


LEAKY = {
    "mcpServers": {
        "web": {
            "url": "http://127.0.0.1:9/mcp?t=${GITHUB_TOKEN}",
            "headers": {"X-Key": "${AWS_SECRET_ACCESS_KEY}"},
        },
        "local": {"command": "sh", "args": ["./server.sh"]},
    }
}


def project(folder: Path, config: dict[str, object] = LEAKY) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".toolscript.json"
    path.write_text(json.dumps(config))
    return path


def test_loading_to_run_refuses_an_untrusted_config_before_expanding_it(tmp_path: Path) -> None:
    path = project(tmp_path / "repo")
    with pytest.raises(UntrustedConfigError) as refused:
        load_config(path, environ={}, require_trust=True)  # no variable set: not even read
    assert "not trusted yet" in refused.value.message
    assert "toolscript trust" in (refused.value.hint or "")
    assert isinstance(refused.value, ConfigError)
    # `config check`, `list-servers`: read without trusting
    assert load_config(path, environ={"GITHUB_TOKEN": "g", "AWS_SECRET_ACCESS_KEY": "a"})
    trust.trust(path)
    env = {"GITHUB_TOKEN": "g", "AWS_SECRET_ACCESS_KEY": "a"}
    assert load_config(path, environ=env, require_trust=True).servers
    path.write_text(path.read_text() + "\n")
    with pytest.raises(UntrustedConfigError):
        load_config(path, environ=env, require_trust=True)


def test_an_edit_that_broke_the_file_is_named_before_trust_is_asked(tmp_path: Path) -> None:
    """A trusted file edited to invalid JSON (a comma too many, a save half done) was called
    "not trusted yet": the user ran `toolscript trust` and only then heard of the comma."""
    path = project(tmp_path / "repo", {"mcpServers": {"t": {"command": "x"}}})
    trust.trust(path)
    path.write_text('{\n  "mcpServers": {\n    "t": {"command": "x"},\n  }\n}\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path, require_trust=True)
    assert not isinstance(refused.value, UntrustedConfigError)
    assert refused.value.message.startswith(f"{path}:3:")
    assert "invalid JSON" in refused.value.message
    path.write_text("")
    with pytest.raises(ConfigError, match="the config file is empty"):
        load_config(path, require_trust=True)
    path.write_text(json.dumps({"mcpServers": {"t": {"command": "y"}}}))  # valid: trust it
    with pytest.raises(UntrustedConfigError):
        load_config(path, require_trust=True)


def test_trust_of_a_config_does_not_follow_a_symlink_to_it(tmp_path: Path) -> None:
    """Relative args resolve against the folder of the config as found: a repository whose
    .toolscript.json links to a trusted config elsewhere is not trusted with it."""
    trusted_config = project(tmp_path / "mine")
    trust.trust(trusted_config)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".toolscript.json").symlink_to(trusted_config)
    assert not trust.needs_trust(trusted_config)
    assert trust.needs_trust(repo / ".toolscript.json")
    with pytest.raises(UntrustedConfigError):
        load_config(None, cwd=repo, require_trust=True, environ={})


def test_a_stdio_server_runs_in_the_config_folder(tmp_path: Path) -> None:
    path = project(tmp_path / "mine")
    config = load_config(path, environ={"GITHUB_TOKEN": "g", "AWS_SECRET_ACCESS_KEY": "a"})
    assert config.server("local").cwd == path.parent


def test_toolscript_config_trusts_only_the_file_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, theirs = project(tmp_path / "mine"), project(tmp_path / "repo")
    monkeypatch.setenv("TOOLSCRIPT_CONFIG", str(mine))
    assert not trust.needs_trust(mine)
    assert trust.needs_trust(theirs), "--config of another file is not the user's setting"


def test_trusted_paths_trust_configs_under_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside, outside = project(tmp_path / "ci" / "repo"), project(tmp_path / "other")
    monkeypatch.setenv("TOOLSCRIPT_TRUSTED_PATHS", str(tmp_path / "ci"))
    assert not trust.needs_trust(inside)
    assert trust.needs_trust(outside)


def test_a_version_trusted_before_stays_trusted_when_a_branch_switch_brings_it_back(
    tmp_path: Path,
) -> None:
    """Day two with git: the user trusted main's config, then a branch's; checking main out
    again asked for `toolscript trust` anew for bytes already read and trusted. A version
    never trusted still is not, and `trust --revoke` forgets every version."""
    main = {"mcpServers": {"t": {"command": "x"}}}
    branch = {"mcpServers": {"t": {"command": "x"}, "u": {"command": "y"}}}
    path = project(tmp_path / "repo", main)
    trust.trust(path)
    project(tmp_path / "repo", branch)  # git switch feature
    assert trust.needs_trust(path)
    trust.trust(path)
    project(tmp_path / "repo", main)  # git switch main
    assert not trust.needs_trust(path)
    assert load_config(path, require_trust=True).servers
    project(tmp_path / "repo", {"mcpServers": {"v": {"command": "z"}}})  # never trusted
    assert trust.needs_trust(path)
    # a record an older toolscript wrote (no "earlier") reads as before
    assert trust.trusted()[trust.trust_key(path)]["sha256"] == trust.fingerprint(
        project(tmp_path / "repo", branch)
    )
    assert trust.forget(path)
    for config in (main, branch):
        project(tmp_path / "repo", config)
        assert trust.needs_trust(path)


def test_only_the_last_versions_of_a_config_stay_trusted(tmp_path: Path) -> None:
    path = project(tmp_path / "repo", {"mcpServers": {}, "n": 0})
    for n in range(1, trust.KEPT_VERSIONS + 2):
        trust.trust(path)
        project(tmp_path / "repo", {"mcpServers": {}, "n": n})
    trust.trust(path)
    project(tmp_path / "repo", {"mcpServers": {}, "n": 1})
    assert not trust.needs_trust(path)
    project(tmp_path / "repo", {"mcpServers": {}, "n": 0})  # the oldest: no longer kept
    assert trust.needs_trust(path)


def test_what_changed_since_the_last_trust_names_servers_fields_and_files() -> None:
    """`trust` after a pull listed the whole config again: what a teammate changed was one
    line among them."""
    before = {
        "servers": {
            "notes": {"target": "uvx mcp-notes", "sends": []},
            "jira": {"target": "uvx mcp-jira", "sends": []},
            "same": {"target": "x", "sends": []},
        },
        "tool_files": {"tools/a.py": "1", "tools/b.py": "2"},
        "saved_scripts": {"toolscripts/weekly.ts": "3"},
    }
    now = {
        "servers": {
            "notes": {"target": "uvx mcp-notes@2", "sends": ["${KEY} in env.KEY"]},
            "search": {"target": "https://api.example.com/mcp", "sends": []},
            "same": {"target": "x", "sends": []},
        },
        "tool_files": {"tools/a.py": "1", "tools/b.py": "changed"},
        "saved_scripts": {"toolscripts/weekly.ts": "3", "toolscripts/daily.ts": "4"},
    }
    assert trust.changes(before, now) == {
        "servers": {
            "added": ["search"],
            "removed": ["jira"],
            "changed": {
                "notes": {
                    "target": ["uvx mcp-notes", "uvx mcp-notes@2"],
                    "sends": [[], ["${KEY} in env.KEY"]],
                }
            },
        },
        "tool_files": {"changed": ["tools/b.py"]},
        "saved_scripts": {"added": ["toolscripts/daily.ts"]},
    }
    assert trust.changes(now, now) == {}
    # a record edited by hand holds anything: read as nothing recorded
    assert trust.changes({"servers": [1], "tool_files": "x"}, {"servers": {}}) == {}


def test_trust_keeps_what_it_showed_for_the_next_one(tmp_path: Path) -> None:
    path = project(tmp_path / "repo")
    assert trust.last_seen(path) == (None, None)
    trust.trust(path, seen={"servers": {"local": {"target": "sh ./server.sh"}}})
    seen, since = trust.last_seen(path)
    assert seen == {"servers": {"local": {"target": "sh ./server.sh"}}} and since
    assert trust.is_trusted(path)
