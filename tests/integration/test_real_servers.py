"""Real MCP servers from npm and PyPI, all in one gateway; and the whole public tool corpus.

Each server here installs from the registries (the README's install command) and
starts without credentials or network. The gateway must connect every one, produce
a module that `deno check` accepts, and carry one call to each; servers whose tools
need a service that is not here (GitHub, Notion, a database) answer with their own
error, which still proves the call went through.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    CORPUS,
    NODE_BIN,
    SERVERS,
    corpus_files,
    deno_check,
    node_server,
    python_bin,
    running_gateway,
)

FAULTY = SERVERS / "faulty_server.py"

# name: (command, args, env, tool, arguments, works offline)
REAL_SERVERS: dict[str, tuple[str, list[str], dict[str, str], str, dict[str, Any], bool]] = {
    "everything": ("node:mcp-server-everything", [], {}, "echo", {"message": "hi"}, True),
    "filesystem": (
        "node:mcp-server-filesystem",
        ["{dir}"],
        {},
        "list_allowed_directories",
        {},
        True,
    ),
    "memory": (
        "node:mcp-server-memory",
        [],
        {"MEMORY_FILE_PATH": "{dir}/memory.jsonl"},
        "read_graph",
        {},
        True,
    ),
    "thinking": (
        "node:mcp-server-sequential-thinking",
        [],
        {},
        "sequentialthinking",
        {"thought": "one step", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False},
        True,
    ),
    "github": (
        "node:mcp-server-github",
        [],
        {},
        "search_repositories",
        {"query": "toolscript"},
        False,
    ),
    "gitlab": (
        "node:mcp-server-gitlab",
        [],
        {
            "GITLAB_PERSONAL_ACCESS_TOKEN": "not-a-token",
            "GITLAB_API_URL": "http://127.0.0.1:9/api/v4",
        },
        "search_repositories",
        {"search": "toolscript"},
        False,
    ),
    "playwright": ("node:playwright-mcp", ["--headless"], {}, "browser_close", {}, False),
    "context7": (
        "node:context7-mcp",
        [],
        {},
        "resolve-library-id",
        {"libraryName": "react", "query": "hooks"},
        False,
    ),
    "kubernetes": (
        "node:mcp-server-kubernetes",
        [],
        {},
        "ping",
        {},
        True,
    ),
    "notion": ("node:notion-mcp-server", [], {}, "API-get-self", {}, False),
    "postgres": (
        "node:mcp-server-postgres",
        ["postgresql://127.0.0.1:9/none"],
        {},
        "query",
        {"sql": "select 1"},
        False,
    ),
    "time": ("py:mcp-server-time", [], {}, "get_current_time", {"timezone": "Asia/Tokyo"}, True),
    "git": (
        "py:mcp-server-git",
        ["--repository", "{dir}/repo"],
        {},
        "git_status",
        {"repo_path": "{dir}/repo"},
        True,
    ),
    "fetch": ("py:mcp-server-fetch", [], {}, "fetch", {"url": "http://127.0.0.1:9/"}, False),
}


def _command(spec: str) -> str:
    kind, name = spec.split(":", 1)
    return node_server(name) if kind == "node" else python_bin(name)


def test_real_servers_in_one_gateway(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    servers: dict[str, Any] = {}
    for name, (command, args, env, *_rest) in REAL_SERVERS.items():
        servers[name] = {
            "command": _command(command),
            "args": [arg.replace("{dir}", str(tmp_path)) for arg in args],
            "env": {key: value.replace("{dir}", str(tmp_path)) for key, value in env.items()},
            "timeout": 60,
        }
    with running_gateway({"mcpServers": servers}, tmp_path, "--ready-wait", "60") as gateway:
        health = gateway.client.get("health").json()
        states = {name: server["state"] for name, server in health["servers"].items()}
        problems = {
            n: (s["error"], s["stderr"])
            for n, s in health["servers"].items()
            if s["state"] != "connected"
        }
        assert problems == {}
        assert states == dict.fromkeys(REAL_SERVERS, "connected")
        assert all(server["tools"] > 0 for server in health["servers"].values())

        module = tmp_path / "tools.ts"
        module.write_text(gateway.client.get("runtime/tools.ts").text)
        checked = deno_check([module], tmp_path / "deno")
        assert checked.returncode == 0, checked.stderr[-3000:]

        for name, (*_spec, tool, arguments, offline) in REAL_SERVERS.items():
            arguments = json.loads(json.dumps(arguments).replace("{dir}", str(tmp_path)))
            response = gateway.call(f"{name}__{tool}", arguments)
            if response.status_code == 403:
                # The default policy: a tool its server annotates destructive asks first.
                listed = gateway.client.get(f"servers/{name}/tools").json()
                annotations = next(t for t in listed if t["name"] == tool).get("annotations")
                assert response.json()["error"] == "approval_required", response.text
                assert (annotations or {}).get("destructiveHint") is True, annotations
                continue
            if offline:
                assert response.status_code == 200, f"{name}: {response.text}"
                continue
            # The server answered, with a result or its own error (no service here).
            assert response.status_code in (200, 422, 502), f"{name}: {response.text}"
            if response.status_code != 200:
                message = response.json()["message"]
                assert "went away" not in message and "not connected" not in message, message
        assert gateway.stop() == []


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/toolcorpus is not beside the repository")
def test_every_tool_of_the_corpus_served_as_it_is(tmp_path: Path) -> None:
    """Each corpus file, as published (no cleaning), behind a stdio server of its own."""
    files = corpus_files()
    servers: dict[str, Any] = {}
    expected: dict[str, set[str]] = {}
    for path in files:
        relative = path.relative_to(CORPUS).with_suffix("")
        name = re.sub(r"[^A-Za-z0-9-]+", "-", "-".join(relative.parts)).strip("-")
        servers[name] = {"command": sys.executable, "args": [str(FAULTY), "--tools", str(path)]}
        tools = json.loads(path.read_text())
        expected[name] = {
            tool["name"]
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"].strip()
        }
    assert len(servers) > 100
    with running_gateway(
        {"mcpServers": servers}, tmp_path, "--ready-wait", "120", "--search-no-cache"
    ) as gateway:
        health = gateway.client.get("health").json()
        failed = {n: s["error"] for n, s in health["servers"].items() if s["state"] != "connected"}
        assert failed == {}
        for name, names in expected.items():
            listed = {tool["name"] for tool in gateway.client.get(f"servers/{name}/tools").json()}
            assert listed == names, name
        assert sum(map(len, expected.values())) == health["tools"]
        assert any("sentry" in w and "whoami" in w for w in health["warnings"])
        module = tmp_path / "tools.ts"
        module.write_text(gateway.client.get("runtime/tools.ts").text)
        checked = deno_check([module], tmp_path / "deno")
        assert checked.returncode == 0, checked.stderr[-3000:]
        assert gateway.stop() == []


def test_node_servers_are_installed() -> None:
    """The README's install command puts every server above in tests/servers."""
    for command, *_rest in REAL_SERVERS.values():
        if command.startswith("node:"):
            assert (NODE_BIN / command.split(":", 1)[1]).exists(), command
