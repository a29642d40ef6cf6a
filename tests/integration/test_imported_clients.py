"""The `import` key while a gateway runs: other clients' config files are read live, as
.toolscript.json is, and trust covers the project's among them.

Every test ends with no process left.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from tests.helpers import SERVERS, GatewayProcess, toolscript_cli

FAULTY = SERVERS / "faulty_server.py"


def faulty(*flags: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAULTY), *flags]}


def answer(gateway: GatewayProcess, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    response = gateway.call(tool, arguments)
    assert response.status_code == 200, response.text
    return response.json()


def wait_for(predicate: Any, gateway: GatewayProcess, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, gateway.log
        time.sleep(0.1)


def write(path: Path, servers: dict[str, Any], key: str = "mcpServers") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: servers}, indent=2))


def test_edits_of_imported_files_reach_the_running_gateway(
    tmp_path: Path, toolscript_home: Path
) -> None:
    home = tmp_path / "home"
    project = home / "repo"
    project.mkdir(parents=True)
    write(project / ".mcp.json", {"a": faulty()})
    env = {"HOME": str(home), "TOOLSCRIPT_HOME": str(toolscript_home)}
    config = {"import": ["claude-code", "cursor"]}
    gateway = GatewayProcess(config, project, env=env)
    try:
        assert answer(gateway, "a__echo", {"text": "hi"}) == "hi"
        a_pid = answer(gateway, "a__pid")

        # A file that did not exist when the gateway started: the user's Cursor config.
        write(home / ".cursor" / "mcp.json", {"b": faulty()})
        gateway.wait_for_log("config: added b")
        wait_for(lambda: gateway.call("b__pid").status_code == 200, gateway)
        assert answer(gateway, "b__echo", {"text": "from cursor"}) == "from cursor"
        assert answer(gateway, "a__pid") == a_pid  # nothing else restarted

        # The project's .mcp.json edited: its server goes.
        write(project / ".mcp.json", {})
        gateway.wait_for_log("config: removed a")
        assert gateway.call("a__pid").status_code == 404

        # .toolscript.json's own entry of the same name wins over the imported one.
        gateway.config_path.write_text(
            json.dumps({**config, "mcpServers": {"b": faulty("--garbage")}})
        )
        gateway.wait_for_log("config: restarted b")
        listed = toolscript_cli("list-servers", "--json", cwd=project, env=env)
        sources = {server["name"]: server["source"] for server in json.loads(listed.stdout)}
        assert sources == {"b": str(project / ".toolscript.json")}
        assert gateway.stop() == [], "processes outlived the gateway"
    finally:
        gateway.stop()


def test_an_edit_of_an_imported_project_file_waits_for_trust(
    tmp_path: Path, toolscript_home: Path
) -> None:
    home = tmp_path / "home"
    project = home / "repo"
    project.mkdir(parents=True)
    write(project / ".vscode" / "mcp.json", {"a": faulty()}, key="servers")
    env = {
        "HOME": str(home),
        "TOOLSCRIPT_HOME": str(toolscript_home),
        "TOOLSCRIPT_CONFIG_HOME": str(tmp_path / "trust"),
        "TOOLSCRIPT_TRUSTED_PATHS": "",  # this project is trusted by `toolscript trust` alone
    }
    (project / ".toolscript.json").write_text(json.dumps({"import": ["vscode"]}))
    assert toolscript_cli("trust", cwd=project, env=env).returncode == 0
    gateway = GatewayProcess({"import": ["vscode"]}, project, env=env)
    try:
        assert answer(gateway, "a__echo", {"text": "trusted"}) == "trusted"
        # The repository's file changes (a pull, a branch): nothing of it runs until trusted.
        write(project / ".vscode" / "mcp.json", {"a": faulty(), "c": faulty()}, key="servers")
        wait_for(lambda: gateway.health()["config"]["error"] is not None, gateway)
        assert "not trusted yet" in gateway.health()["config"]["error"]
        assert ".vscode/mcp.json" in gateway.health()["config"]["error"]
        assert gateway.call("c__pid").status_code == 404
        assert answer(gateway, "a__echo", {"text": "still"}) == "still"
        trusted = toolscript_cli("trust", cwd=project, env=env)
        assert trusted.returncode == 0, trusted.stderr
        gateway.wait_for_log("config: added c")
        wait_for(lambda: gateway.call("c__pid").status_code == 200, gateway)
        assert gateway.health()["config"]["error"] is None
        assert gateway.stop() == [], "processes outlived the gateway"
    finally:
        gateway.stop()
