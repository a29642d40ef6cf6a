"""A cloned repository's `.toolscript/` is the attacker's: its files may be links to the
user's secrets or files, its doit database may say every task is up to date. Each attack
made for real on a cache the fixture server built: nothing is read, written or removed
through a link; each link is replaced by the artifact it stood for."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.helpers import GatewayProcess, fixture_server, toolscript_cli

SECRET = "TOPSECRET-linked-0123456789"
ARTIFACTS = [
    "tools.ts",
    "tools-only.ts",
    "names.json",
    "saved-scripts.json",
    "packages.json",
    "servers/fx.json",
    "offered/fx.json",
    "names/fx.json",
    "types/fx.ts",
    "types/fx.json",
]
DATABASES = [".doit.db", "catalogue.db", "embeddings.db"]


def built_project(tmp_path: Path, toolscript_home: Path) -> tuple[Path, dict[str, str]]:
    """A project whose cache the pipeline built (its doit database as the attacker would
    commit it: every task up to date)."""
    project = tmp_path / "cloned"
    project.mkdir()
    env = {"TOOLSCRIPT_HOME": str(toolscript_home)}
    gateway = GatewayProcess({"mcpServers": {"fx": fixture_server()}}, project, env=env)
    try:
        assert "add_tool" in gateway.client.get("runtime/tools.ts").text
    finally:
        gateway.stop()
    return project, env


def user_file(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def user_database(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("create table mine (x)")
        db.execute("insert into mine values ('precious')")
    return path


def tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return sorted(row[0] for row in db.execute("select name from sqlite_master"))


def link(cache: Path, name: str, target: Path) -> None:
    place = cache / name
    if place.is_dir() and not place.is_symlink():
        for child in place.iterdir():
            child.unlink()
        place.rmdir()
    else:
        place.unlink(missing_ok=True)
    place.symlink_to(target)


def every_command(project: Path, env: dict[str, str]) -> str:
    """What the user runs in the cloned project, its output and the gateway's answers."""
    said = []
    script = 'import { tools } from "toolscript";\nreturn "ran:" + Object.keys(tools.fx).length;'
    for args in (["list-tools", "fx"], ["get-types", "fx"], ["search", "add"], ["exec", script]):
        done = toolscript_cli(*args, cwd=project, env=env)
        said.append(done.stdout + done.stderr)
    gateway = GatewayProcess({"mcpServers": {"fx": fixture_server()}}, project, env=env)
    try:
        for route in ("runtime/tools.ts", "search?q=add", "servers/fx/tools", "types?server=fx"):
            said.append(gateway.client.get(route).text)
    finally:
        gateway.stop()
    return "\n".join(said)


def test_linked_artifacts_are_neither_served_nor_written_through(
    tmp_path: Path, toolscript_home: Path
) -> None:
    project, env = built_project(tmp_path, toolscript_home)
    cache = project / ".toolscript"
    secrets = {
        name: user_file(tmp_path / "user" / name.replace("/", "_"), f"{SECRET} {name}\n")
        for name in ARTIFACTS
    }
    for name, secret in secrets.items():
        link(cache, name, secret)

    said = every_command(project, env)

    assert SECRET not in said
    assert "ran:" in said  # exec ran a script on the module built anew
    for name, secret in secrets.items():
        assert secret.read_text() == f"{SECRET} {name}\n"  # not written through, not removed
        assert not (cache / name).is_symlink(), name  # the link replaced by the artifact
    assert "add_tool" in (cache / "tools.ts").read_text()


def test_a_link_planted_as_a_partial_file_is_not_written_through(
    tmp_path: Path, toolscript_home: Path
) -> None:
    project, env = built_project(tmp_path, toolscript_home)
    cache = project / ".toolscript"
    bashrc = user_file(tmp_path / "user" / ".bashrc", "export PATH=mine\n")
    for name in ARTIFACTS:
        (cache / f"{name}.tmp").symlink_to(bashrc)
        with (cache / name).open("a") as edited:  # so each is written again
            edited.write("\n")

    every_command(project, env)

    assert bashrc.read_text() == "export PATH=mine\n"
    assert "add_tool" in (cache / "tools.ts").read_text()


def test_a_linked_cache_folder_is_not_written_into(tmp_path: Path, toolscript_home: Path) -> None:
    project, env = built_project(tmp_path, toolscript_home)
    cache = project / ".toolscript"
    folders = {}
    for name in ("servers", "offered", "names", "types", "saved-check"):
        folder = tmp_path / "user" / f"app-{name}"
        user_file(folder / "fx.json", '{"mine": "precious"}\n')
        user_file(folder / "fx.ts", "// mine\n")
        folders[name] = folder
        link(cache, name, folder)

    every_command(project, env)

    for name, folder in folders.items():
        assert sorted(p.name for p in folder.iterdir()) == ["fx.json", "fx.ts"], name
        assert (folder / "fx.json").read_text() == '{"mine": "precious"}\n'
        assert (folder / "fx.ts").read_text() == "// mine\n"
    assert (cache / "servers" / "fx.json").is_file()
    assert not (cache / "servers").is_symlink()


def test_linked_databases_are_not_written_into(tmp_path: Path, toolscript_home: Path) -> None:
    project, env = built_project(tmp_path, toolscript_home)
    cache = project / ".toolscript"
    theirs = {name: user_database(tmp_path / "user" / f"mine{name}") for name in DATABASES}
    for name, database in theirs.items():
        link(cache, name, database)

    every_command(project, env)

    for name, database in theirs.items():
        assert tables(database) == ["mine"], name
        assert not (cache / name).is_symlink(), name
