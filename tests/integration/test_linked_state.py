"""A cloned repository's `.toolscript/`, `.toolscript.json` and `toolscripts/` are the
attacker's: beyond the artifacts (`test_linked_cache.py`), nothing toolscript reads or
writes there may go through a link to a file of the user's. Each attack made for real,
with the gateway and the commands started as a user starts them, in a temporary home."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.helpers import GatewayProcess, clean_env, fixture_server, run_doit, toolscript_cli
from tests.integration.test_linked_cache import (
    DATABASES,
    SECRET,
    link,
    tables,
    user_database,
    user_file,
)

GONE = {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}
SECRET_TOOLS = json.dumps(
    [{"name": "leak", "description": SECRET, "inputSchema": {"type": "object"}}]
)


def cloned(
    tmp_path: Path, toolscript_home: Path, config: dict[str, Any]
) -> tuple[Path, dict[str, str]]:
    """A project whose cache a gateway built for ``config``, as a repository would commit it."""
    project = tmp_path / "cloned"
    project.mkdir()
    env = {"TOOLSCRIPT_HOME": str(toolscript_home)}
    gateway = GatewayProcess(config, project, "--no-warm-checker", env=env)
    try:
        assert "add_tool" in gateway.client.get("runtime/tools.ts").text
    finally:
        gateway.stop()
    return project, env


def commands(project: Path, env: dict[str, str], config: dict[str, Any], *servers: str) -> str:
    """What the user runs in the cloned project, its output and a gateway's answers."""
    said = []
    script = 'import { tools } from "toolscript";\nreturn "ran:" + Object.keys(tools.fx).length;'
    runs = [["list-tools", *servers[:1]], ["search", "leak"], ["exec", script]]
    runs += [["get-types", server] for server in servers]
    for args in runs:
        done = toolscript_cli(*args, cwd=project, env=env)
        said.append(done.stdout + done.stderr)
    gateway = GatewayProcess(config, project, "--no-warm-checker", env=env)
    try:
        said.append(gateway.client.get("runtime/tools.ts").text)
        said.append(gateway.client.get("search?q=leak").text)
        for server in servers:
            said.append(gateway.client.get(f"servers/{server}/tools").text)
            said.append(gateway.client.get(f"types?server={server}").text)
        said.append(gateway.log)
    finally:
        gateway.stop()
    return "\n".join(said)


def test_an_unreachable_servers_linked_tool_list_is_neither_read_nor_written(
    tmp_path: Path, toolscript_home: Path
) -> None:
    # keyword search alone: what is linked here is no database (no model to load, each time)
    config = {"mcpServers": {"fx": fixture_server(), "gone": GONE}, "search": {"semantic": False}}
    project, env = cloned(tmp_path, toolscript_home, config)
    cache = project / ".toolscript"
    secret = user_file(tmp_path / "user" / "gone.json", SECRET_TOOLS)
    link(cache, "servers/gone.json", secret)
    (cache / "offered" / "gone.json").unlink()
    os.mkfifo(cache / "offered" / "gone.json")  # reading a FIFO would never end

    built = run_doit(project, env=env)  # `gone` is not reached: its files are kept...
    said = built.stdout + built.stderr + commands(project, env, config, "fx", "gone")

    assert built.returncode == 0, built.stdout + built.stderr  # ...but never a link
    assert SECRET not in said
    assert "ran:" in said
    assert secret.read_text() == SECRET_TOOLS  # not written through, not removed
    assert json.loads((cache / "servers" / "gone.json").read_text()) == []  # as not reached
    assert (cache / "offered" / "gone.json").is_file()


def saved_script(description: str) -> str:
    return (
        f"/** {description} */\n"
        "export default async function mine(input: { a: number }): Promise<number> {\n"
        "  return input.a;\n"
        "}\n"
    )


def test_a_linked_scripts_folder_is_neither_read_nor_written_into(
    tmp_path: Path, toolscript_home: Path
) -> None:
    config = {"mcpServers": {"fx": fixture_server()}}
    project, env = cloned(tmp_path, toolscript_home, config)
    theirs = tmp_path / "user" / "scripts"
    user_file(theirs / "mine.ts", saved_script(f"{SECRET} Counts the quokkas."))
    (project / "toolscripts").symlink_to(theirs)
    draft = user_file(project / "draft.ts", saved_script("Returns a."))

    gateway = GatewayProcess(config, project, "--no-warm-checker", env=env)
    try:
        said = [gateway.client.get(route).text for route in ("runtime/tools.ts", "scripts")]
        said.append(gateway.client.get("search", params={"q": "count quokkas"}).text)
        listed = toolscript_cli("list-scripts", "--json", cwd=project, env=env)
        saved = toolscript_cli("save", "report", str(draft), cwd=project, env=env)
    finally:
        gateway.stop()

    assert SECRET not in "\n".join(said) + listed.stdout + listed.stderr
    assert "toolscripts/ skipped: a symbolic link" in listed.stdout
    assert saved.returncode != 0
    assert "is a symbolic link" in saved.stderr
    assert sorted(p.name for p in theirs.iterdir()) == ["mine.ts"]  # nothing written into it


def test_a_fifo_among_saved_scripts_is_skipped(tmp_path: Path, toolscript_home: Path) -> None:
    config = {"mcpServers": {"fx": fixture_server()}}
    project, env = cloned(tmp_path, toolscript_home, config)
    user_file(project / "toolscripts" / "mine.ts", saved_script("Returns a."))
    os.mkfifo(project / "toolscripts" / "hang.ts")  # reading it would never end

    listed = toolscript_cli("list-scripts", "--json", cwd=project, env=env, timeout=60)

    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert [s["name"] for s in found["scripts"]] == ["mine"]
    assert any("hang.ts skipped" in warning for warning in found["warnings"])


def test_init_writes_no_config_or_gitignore_through_a_link(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "cloned"
    user_file(project / ".mcp.json", json.dumps({"mcpServers": {"a": fixture_server()}}))
    env = {"HOME": str(home), "TOOLSCRIPT_HOME": str(tmp_path / "toolscript")}
    autostart = home / ".config" / "autostart" / "evil.desktop"  # its folder only, yet
    autostart.parent.mkdir(parents=True)
    (project / ".toolscript.json").symlink_to(autostart)
    bashrc = user_file(home / ".bashrc", "export PATH=mine\n")

    refused = toolscript_cli("init", "--yes", cwd=project, env=env)

    assert refused.returncode != 0
    assert "is a symbolic link" in refused.stderr and "Traceback" not in refused.stderr
    assert not autostart.exists()

    (project / ".toolscript.json").unlink()  # a config of the project's own, now
    (project / ".gitignore").symlink_to(bashrc)
    written = toolscript_cli("init", "--yes", cwd=project, env=env)

    assert written.returncode == 0, written.stderr
    assert bashrc.read_text() == "export PATH=mine\n"
    assert "add it yourself" in written.stderr
    assert json.loads((project / ".toolscript.json").read_text()) == {"import": ["claude-code"]}


STATE_FILES = ["result-shapes.json", "recent-calls.json", "runs.sqlite", "mcp-token"]
STATE_FOLDERS = ["background", "runs", "projects", "gateways"]


def test_what_a_gateway_keeps_for_the_project_is_never_kept_in_its_folder(
    tmp_path: Path, toolscript_home: Path, monkeypatch: Any
) -> None:
    """Learned result types, recent calls, the run log, background runs, kept output, the
    state file: all in the user's own folders, keyed by the project, so a link planted under
    their names in `.toolscript/` is never reached (no fix: this keeps it so)."""
    config = {"mcpServers": {"fx": fixture_server()}}
    project, env = cloned(tmp_path, toolscript_home, config)
    cache = project / ".toolscript"
    planted = {name: user_file(tmp_path / "user" / name, "mine\n") for name in STATE_FILES}
    for name, mine in planted.items():
        link(cache, name, mine)
    folders = {name: tmp_path / "user" / f"{name}-folder" for name in STATE_FOLDERS}
    for name, folder in folders.items():
        user_file(folder / "mine", "mine\n")
        link(cache, name, folder)

    gateway = GatewayProcess(config, project, "--no-warm-checker", env=env)
    try:
        for _ in range(3):
            assert gateway.call("fx__env", {"name": "HOME"}).status_code == 200
        script = 'import { tools } from "toolscript";\nconsole.log("x".repeat(300000));'
        ran = toolscript_cli("exec", "--max-output", "1000", script, cwd=project, env=env)
        background = toolscript_cli("exec", "--background", script, cwd=project, env=env)
        run = background.stdout.split()[-1]
        waited = toolscript_cli("runs", "wait", run, cwd=project, env=env)
    finally:
        gateway.stop()

    assert ran.returncode != 0 and "output" in ran.stderr  # past --max-output: kept
    assert background.returncode == 0 and waited.returncode == 0, waited.stderr
    assert "Traceback" not in ran.stderr + background.stderr + waited.stderr
    for name, mine in planted.items():
        assert mine.read_text() == "mine\n", name
    for name, folder in folders.items():
        assert [p.name for p in folder.iterdir()] == ["mine"], name
    monkeypatch.setenv("TOOLSCRIPT_HOME", str(toolscript_home))
    from toolscript.plumbing.paths import project_state_dir

    kept = project_state_dir(project)
    assert set(STATE_FILES[:3]) | {"background", "runs"} <= {p.name for p in kept.iterdir()}


def test_a_fifo_as_the_packages_lock_does_not_hang_the_build(
    tmp_path: Path, toolscript_home: Path
) -> None:
    config = {"mcpServers": {"fx": fixture_server()}}
    project, env = cloned(tmp_path, toolscript_home, config)
    os.mkfifo(project / ".toolscript.lock")  # reading it would never end
    (project / ".toolscript" / ".doit.db").unlink()  # so the packages task runs

    listed = toolscript_cli("list-tools", "fx", cwd=project, env=env, timeout=90)

    assert listed.returncode == 0, listed.stderr
    assert "add_tool" in listed.stdout


def test_hard_linked_databases_are_not_written_into(tmp_path: Path, toolscript_home: Path) -> None:
    config = {"mcpServers": {"fx": fixture_server()}}
    project, env = cloned(tmp_path, toolscript_home, config)
    cache = project / ".toolscript"
    theirs = {name: user_database(tmp_path / "user" / f"mine{name}") for name in DATABASES}
    for name, database in theirs.items():
        (cache / name).unlink()
        os.link(database, cache / name)  # one file, two names: SQLite writes in place

    said = commands(project, env, config, "fx")

    assert "ran:" in said
    for name, database in theirs.items():
        assert tables(database) == ["mine"], name
        assert (cache / name).stat().st_nlink == 1, name


def test_the_mcp_face_neither_reads_nor_saves_into_a_linked_scripts_folder(
    tmp_path: Path, toolscript_home: Path
) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    config = {"mcpServers": {"fx": fixture_server()}}
    project, env = cloned(tmp_path, toolscript_home, config)
    theirs = tmp_path / "user" / "scripts"
    user_file(theirs / "mine.ts", saved_script(f"{SECRET} Counts the quokkas."))
    (project / "toolscripts").symlink_to(theirs)
    face = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp"],
        cwd=str(project),
        env=clean_env(**env),
    )
    listing = 'import { scripts } from "toolscript";\nreturn Object.keys(scripts);'

    async def session_work() -> list[Any]:
        async with stdio_client(face) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [
                await session.call_tool("search_tools", {"query": "count quokkas"}),
                await session.call_tool("execute", {"code": listing}),
                await session.call_tool(
                    "save_script", {"name": "report", "code": saved_script("Returns a.")}
                ),
            ]

    searched, listed, saved = anyio.run(session_work)
    texts = [block.text for answer in (searched, listed, saved) for block in answer.content]
    assert SECRET not in "\n".join(texts)
    assert not listed.is_error and listed.structured_content["result"] == []
    assert saved.is_error and "is a symbolic link" in "\n".join(texts)
    assert sorted(p.name for p in theirs.iterdir()) == ["mine.ts"]
