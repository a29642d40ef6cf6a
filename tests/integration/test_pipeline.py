"""The doit pipeline: incremental by content, name collisions, artifacts that type-check."""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import clean_env, deno_check, fixture_server, python_bin
from tests.schemas_corpus import TRICKY_TOOLS
from toolscript.config import Config, ServerConfig
from toolscript.pipeline.artifacts import Artifacts, CacheLayout
from toolscript.pipeline.sources import SnapshotSource
from toolscript.pipeline.tasks import load_documents, run_pipeline


def config_of(tmp_path: Path, *servers: ServerConfig) -> Config:
    return Config(path=tmp_path / ".toolscript.json", project_dir=tmp_path, servers=servers)


def tool(name: str, description: str = "", **schema: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object", **schema}}


@pytest.fixture(scope="session")
def deno_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("deno")


def test_tricky_schemas_type_check(tmp_path: Path, deno_dir: Path) -> None:
    servers = (
        ServerConfig(name="tricky", transport="stdio", command="x"),
        ServerConfig(name="tricky-two", transport="stdio", command="x"),
        ServerConfig(name="tricky_two", transport="stdio", command="x"),
        ServerConfig(name="123numbers", transport="stdio", command="x"),
    )
    source = SnapshotSource({server.name: TRICKY_TOOLS for server in servers})
    layout = CacheLayout(tmp_path / "cache")
    result = run_pipeline(config_of(tmp_path, *servers), layout, source)
    assert result.code == 0, result.failures
    files = [layout.module, *(layout.server_module(s.name) for s in servers)]
    checked = deno_check(files, deno_dir)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    module = layout.module.read_text()
    assert "export const tools: Tools = {" in module
    assert "trickyTwo: {" in module and "trickyTwo2: {" in module
    assert "_123numbers: {" in module
    for method in (
        "createIssue(",
        "createIssue2(",
        "createIssue3(",
        "delete(",
        "constructor(",
        "proto(",
        '"new"(',  # quoted: `new(...)` in a type would declare a constructor
        "_123go(",
    ):
        assert method in module
    assert "*\\/" in module  # a "*/" inside a description is escaped
    warnings = json.loads(layout.names.read_text())["warnings"]
    assert any("tricky_two" in w for w in warnings)
    assert any("createIssue2" in w for w in warnings)
    # Unsupported nodes degrade to unknown, with a comment, inside a module that still checks.
    assert "unresolved $ref https://example.com/schema.json" in module


def test_reference_server_schemas_type_check(tmp_path: Path, deno_dir: Path) -> None:
    import anyio

    from tests.helpers import node_server
    from toolscript.upstream.connect import fetch_tools_once

    servers = [
        ServerConfig(
            name="everything", transport="stdio", command=node_server("mcp-server-everything")
        ),
        ServerConfig(
            name="filesystem",
            transport="stdio",
            command=node_server("mcp-server-filesystem"),
            args=(str(tmp_path),),
        ),
        ServerConfig(name="memory", transport="stdio", command=node_server("mcp-server-memory")),
        ServerConfig(name="time", transport="stdio", command=python_bin("mcp-server-time")),
        ServerConfig(name="git", transport="stdio", command=python_bin("mcp-server-git")),
        ServerConfig(name="fetch", transport="stdio", command=python_bin("mcp-server-fetch")),
    ]
    found = anyio.run(fetch_tools_once, servers)
    assert all(found[s.name] for s in servers), {k: bool(v) for k, v in found.items()}
    layout = CacheLayout(tmp_path / "cache")
    assert run_pipeline(config_of(tmp_path, *servers), layout, SnapshotSource(found)).code == 0
    files = [layout.module, *(layout.server_module(s.name) for s in servers)]
    checked = deno_check(files, deno_dir)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    module = layout.module.read_text()
    assert "export type MemoryCreateEntitiesParams" in module
    assert "getStructuredContent(params: EverythingGetStructuredContentParams)" in module


def test_incremental_by_content(tmp_path: Path) -> None:
    servers = tuple(ServerConfig(name=f"s{i}", transport="stdio", command="x") for i in range(3))
    tools = {s.name: [tool(f"{s.name}_a", "first"), tool(f"{s.name}_b", "second")] for s in servers}
    layout = CacheLayout(tmp_path / "cache")
    config = config_of(tmp_path, *servers)

    first = run_pipeline(config, layout, SnapshotSource(copy.deepcopy(tools)))
    assert first.executed == [
        "fetch:s0",
        "fetch:s1",
        "fetch:s2",
        "names",
        "types:s0",
        "types:s1",
        "types:s2",
        "module",
        "packages",
        "scripts",
        "catalogue",
    ]
    assert run_pipeline(config, layout, SnapshotSource(copy.deepcopy(tools))).executed == []

    reordered = {name: list(reversed(items)) for name, items in tools.items()}
    assert run_pipeline(config, layout, SnapshotSource(reordered)).executed == []

    tools["s1"][0]["description"] = "changed"
    changed = run_pipeline(config, layout, SnapshotSource(copy.deepcopy(tools)))
    assert changed.executed == ["fetch:s1", "names", "types:s1", "module", "scripts", "catalogue"]
    assert "changed" in layout.module.read_text()

    # A saved script added, edited or removed runs the scripts task alone.
    saved = tmp_path / "toolscripts" / "one.ts"
    saved.parent.mkdir()
    saved.write_text("export default async (input: { n: number }) => input.n;\n")
    snapshot = SnapshotSource(copy.deepcopy(tools))
    assert run_pipeline(config, layout, snapshot).executed == ["scripts"]
    assert '"toolscript/scripts/one.ts"' in layout.module.read_text()
    assert run_pipeline(config, layout, snapshot).executed == []
    saved.write_text("export default async (input: { n: number }) => input.n.toUpperCase();\n")
    assert run_pipeline(config, layout, snapshot).executed == ["scripts"]
    assert '"toolscript/scripts/one.ts"' not in layout.module.read_text()
    assert "one" in json.loads(layout.saved_scripts.read_text())["broken"]
    saved.unlink()
    assert run_pipeline(config, layout, snapshot).executed == ["scripts"]


def test_unavailable_server_keeps_its_artifacts(tmp_path: Path) -> None:
    server = ServerConfig(name="flaky", transport="stdio", command="x")
    layout = CacheLayout(tmp_path / "cache")
    config = config_of(tmp_path, server)
    run_pipeline(config, layout, SnapshotSource({"flaky": [tool("ping")]}))
    assert run_pipeline(config, layout, SnapshotSource({"flaky": None})).executed == []
    assert "ping(" in layout.module.read_text()


def test_never_seen_unavailable_server_gives_empty_namespace(tmp_path: Path) -> None:
    layout = CacheLayout(tmp_path / "cache")
    server = ServerConfig(name="down", transport="stdio", command="x")
    assert run_pipeline(config_of(tmp_path, server), layout, SnapshotSource({})).code == 0
    assert json.loads(layout.server_tools("down").read_text()) == []


def test_no_servers_gives_empty_tools(tmp_path: Path, deno_dir: Path) -> None:
    layout = CacheLayout(tmp_path / "cache")
    assert run_pipeline(config_of(tmp_path), layout, SnapshotSource({})).code == 0
    assert "export const tools: Tools = {};" in layout.module.read_text()
    assert deno_check([layout.module], deno_dir).returncode == 0


def test_tool_filters_apply(tmp_path: Path) -> None:
    server = ServerConfig(
        name="gh",
        transport="stdio",
        command="x",
        include_tools=("get_*", "list_*"),
        exclude_tools=("get_secret",),
    )
    layout = CacheLayout(tmp_path / "cache")
    source = SnapshotSource(
        {"gh": [tool(n) for n in ("get_issue", "get_secret", "list_repos", "delete_repo")]}
    )
    run_pipeline(config_of(tmp_path, server), layout, source)
    names = [t["name"] for t in json.loads(layout.server_tools("gh").read_text())]
    assert names == ["get_issue", "list_repos"]


def test_parameters_keep_the_order_their_server_declared(tmp_path: Path) -> None:
    """Types and search read a tool's parameters as its author ordered them (the required
    path first), not sorted by name (which put the optional id first)."""
    server = ServerConfig(name="ppt", transport="stdio", command="x")
    layout = CacheLayout(tmp_path / "cache")
    properties = {"template_path": {"type": "string"}, "id": {"type": "string"}}
    created = tool("create_from_template", "New deck", properties=properties)
    created["inputSchema"]["required"] = ["template_path"]
    run_pipeline(config_of(tmp_path, server), layout, SnapshotSource({"ppt": [created]}))
    [listed] = json.loads(layout.server_tools("ppt").read_text())
    assert list(listed["inputSchema"]["properties"]) == ["template_path", "id"]
    types = layout.server_module("ppt").read_text()
    assert types.index("template_path: string") < types.index("id?: string")
    [document] = load_documents(layout, [server])
    assert document.text.endswith("Parameters: template path, id.")


def test_catalogue_is_queryable(tmp_path: Path) -> None:
    server = ServerConfig(name="gh", transport="stdio", command="x", description="GitHub")
    layout = CacheLayout(tmp_path / "cache")
    run_pipeline(
        config_of(tmp_path, server),
        layout,
        SnapshotSource({"gh": [tool("create_issue", "Create an issue"), tool("list_repos")]}),
    )
    with sqlite3.connect(layout.catalogue) as db:
        rows = db.execute(
            "select id, function, type_name, length(content_hash) from tools order by id"
        ).fetchall()
        servers = db.execute(
            "select name, namespace, tool_count, description from servers"
        ).fetchall()
    assert rows == [
        ("gh__create_issue", "createIssue", "GhCreateIssue", 64),
        ("gh__list_repos", "listRepos", "GhListRepos", 64),
    ]
    assert servers == [("gh", "gh", 2, "GitHub")]


def test_artifacts_load_fragments(tmp_path: Path) -> None:
    server = ServerConfig(name="gh", transport="stdio", command="x")
    layout = CacheLayout(tmp_path / "cache")
    run_pipeline(
        config_of(tmp_path, server), layout, SnapshotSource({"gh": [tool("create_issue")]})
    )
    artifacts = Artifacts.load(layout, ["gh"])
    assert [f.function for f in artifacts.fragments] == ["createIssue"]
    assert len(artifacts.module_hash) == 16


def test_standalone_doit_matches_the_gateway(tmp_path: Path) -> None:
    from tests.helpers import running_gateway

    config = {
        "mcpServers": {"time": {"command": python_bin("mcp-server-time")}, "fx": fixture_server()},
        "localTools": {"dir": "tools"},
    }
    project = tmp_path / "project"
    project.mkdir()
    # Local tool files too: one imported (internal), one run by uv (external, PEP 723 header).
    for directory in (project, tmp_path / "gateway"):
        (directory / "tools").mkdir(parents=True)
        (directory / "tools" / "calc.py").write_text(
            'def add(a: int, b: int) -> int:\n    """Add two numbers."""\n    return a + b\n'
        )
        (directory / "tools" / "shout.py").write_text(
            "# /// script\n# dependencies = []\n# ///\n"
            'def shout(text: str) -> str:\n    """Upper-case text."""\n    return text.upper()\n'
        )
    (project / "dodo.py").write_text("from toolscript.pipeline.dodo import *  # noqa: F403\n")
    (project / ".toolscript.json").write_text(json.dumps(config))
    doit = [sys.executable, "-m", "doit"]
    listed = subprocess.run(
        [*doit, "list", "--all"],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    for task in ("fetch:time", "fetch:fx", "fetch:calc", "names", "types:time", "index"):
        assert task in listed.stdout
    # (hang guards: the first build loads the embedding model, CPU-bound: minutes on a
    # machine the whole suite shares)
    built = subprocess.run(
        doit, cwd=project, env=clean_env(), capture_output=True, text=True, timeout=400
    )
    assert built.returncode == 0, built.stdout + built.stderr
    again = subprocess.run(
        doit, cwd=project, env=clean_env(), capture_output=True, text=True, timeout=400
    )
    # every task up to date, the search index and the fetch and types groups too
    assert again.stdout.count("-- ") == 16
    assert ".  " not in again.stdout
    assert "not reachable" not in built.stderr + again.stderr
    standalone = (project / ".toolscript" / "tools.ts").read_text()
    assert "add(params: CalcAddParams)" in standalone
    assert "shout(params: ShoutShoutParams)" in standalone

    gateway_dir = tmp_path / "gateway"
    with running_gateway(config, gateway_dir) as gateway:
        served = gateway.client.get("runtime/tools.ts").text
    assert served == standalone


def test_standalone_doit_without_the_semantic_extra(tmp_path: Path) -> None:
    import sqlite3

    from tests.helpers import hide_semantic_extra

    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    (tmp_path / "dodo.py").write_text("from toolscript.pipeline.dodo import *  # noqa: F403\n")
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    keyword_only = clean_env(PYTHONPATH=hide_semantic_extra(tmp_path / "hidden"))

    def doit(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "doit"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    # Keyword search needs no index: the build succeeds and says how to get semantic search.
    built = doit(keyword_only)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "index: skipped" in built.stderr and "[semantic]" in built.stderr
    assert "Traceback" not in built.stdout + built.stderr
    assert (tmp_path / ".toolscript" / "tools.ts").exists()
    again = doit(keyword_only)
    assert again.returncode == 0 and ".  " not in again.stdout
    # Once the extra is there, the index is due and embeds every tool.
    indexed = doit(clean_env())
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    assert ".  index" in indexed.stdout
    with sqlite3.connect(tmp_path / ".toolscript" / "embeddings.db") as db:
        assert db.execute("select count(*) from embeddings").fetchone() == (2,)


def test_indexing_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    import os
    import pty

    config = {"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}}
    (tmp_path / "dodo.py").write_text("from toolscript.pipeline.dodo import *  # noqa: F403\n")
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    controller, terminal = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "doit", "index"],
        cwd=tmp_path,
        env=clean_env(TERM="xterm", COLUMNS="100"),
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
    ) as process:
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal closed: doit is done
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(120) == 0, shown.decode(errors="replace")
    os.close(controller)
    assert b"embedding tools" in shown


def test_an_upgraded_generator_rebuilds_the_types(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user upgrades toolscript with the same servers: the types are generated again."""
    import toolscript.pipeline.tasks as tasks

    server = ServerConfig(name="s", transport="stdio", command="x")
    tools = {"s": [tool("s_a", "first")]}
    layout = CacheLayout(tmp_path / "cache")
    config = config_of(tmp_path, server)
    run_pipeline(config, layout, SnapshotSource(copy.deepcopy(tools)))
    assert run_pipeline(config, layout, SnapshotSource(copy.deepcopy(tools))).executed == []
    monkeypatch.setattr(tasks, "generator_fingerprint", lambda: "a-newer-generator")
    upgraded = run_pipeline(config, layout, SnapshotSource(copy.deepcopy(tools)))
    # naming rules are codegen too
    assert upgraded.executed == ["names", "types:s", "module", "scripts"]


def test_doit_in_worker_processes_keeps_a_server_s_own_tools_while_it_is_away(
    tmp_path: Path,
) -> None:
    # `doit -n 2` runs the actions in workers forked as the first two tasks were checked: a
    # later fetch there never saw this user's build vouch for its server's file, and
    # emptied it.
    names = ["fx1", "fx2", "fx3", "fx4"]
    servers = {name: fixture_server() for name in names}
    config: dict[str, Any] = {"mcpServers": servers, "search": {"semantic": False}}
    (tmp_path / "dodo.py").write_text("from toolscript.pipeline.dodo import *  # noqa: F403\n")
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    doit = [sys.executable, "-m", "doit"]

    def build(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*doit, *args, "fetch"],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )

    built = build()
    assert built.returncode == 0, built.stdout + built.stderr
    folder = tmp_path / ".toolscript" / "servers"
    listed = {name: json.loads((folder / f"{name}.json").read_text()) for name in names}
    assert all(listed.values())
    # their entries now start nothing (a program not installed any more): not reachable
    config["mcpServers"] = {name: {"command": str(tmp_path / "gone")} for name in names}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    away = build("-n", "2")
    assert away.returncode == 0, away.stdout + away.stderr
    assert "not reachable" in away.stderr
    assert {name: json.loads((folder / f"{name}.json").read_text()) for name in names} == listed
