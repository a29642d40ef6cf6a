"""A new user's first minutes with `import`: `toolscript init` in a project that Claude Code
and Cursor configure, asked on a terminal (and refused in an agent's shell, where no one can
answer), then trust, a real gateway, list-servers and exec calling an imported server's tool.

Every test ends with no process left.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.helpers import SERVERS, GatewayProcess, answer_on_a_terminal, clean_env, toolscript_cli

FAULTY = SERVERS / "faulty_server.py"


def write(path: Path, servers: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))


def test_a_new_user_inits_trusts_and_calls_imported_tools(
    tmp_path: Path, toolscript_home: Path
) -> None:
    home = tmp_path / "home"
    project = home / "repo"
    server = {"command": sys.executable, "args": [str(FAULTY)]}
    write(project / ".mcp.json", {"a": server})
    write(project / ".cursor" / "mcp.json", {"b": server})
    (project / ".gitignore").write_text("node_modules")  # no newline at its end
    env = clean_env(
        HOME=str(home),
        TOOLSCRIPT_HOME=str(toolscript_home),
        TOOLSCRIPT_CONFIG_HOME=str(tmp_path / "trust"),
        TOOLSCRIPT_TRUSTED_PATHS="",  # trusted as a user trusts it: `toolscript trust`
    )
    config = project / ".toolscript.json"

    # An agent's shell: no terminal, no one to answer. Nothing written, and what to run.
    piped = toolscript_cli("init", cwd=project, env=env, stdin="")
    assert piped.returncode == 2, piped.stderr
    assert "toolscript init --yes" in piped.stderr and "Traceback" not in piped.stderr
    assert not config.exists()

    # On a terminal: the question is asked there (stdout may be piped), the answer typed.
    code, seen, out = answer_on_a_terminal(
        "init", cwd=project, env=env, asked=b"[Y/n]", answer=b"y\n"
    )
    assert code == 0, (seen, out)
    assert b"Write .toolscript.json importing claude-code, cursor?" in seen
    assert b"Claude Code (claude-code)" in out and b"Cursor (cursor)" in out
    assert json.loads(config.read_text()) == {"import": ["claude-code", "cursor"]}
    assert (project / ".gitignore").read_text() == "node_modules\n.toolscript/\n"

    untrusted = toolscript_cli("gateway", "start", cwd=project, env=env, timeout=60)
    assert untrusted.returncode != 0 and "toolscript trust" in untrusted.stderr

    config.write_text(json.dumps(json.loads(config.read_text())))  # as GatewayProcess writes it
    trusted = toolscript_cli("trust", cwd=project, env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert ".mcp.json" in trusted.stdout and ".cursor/mcp.json" in trusted.stdout

    gateway = GatewayProcess(json.loads(config.read_text()), project, env=env)
    try:
        listed = toolscript_cli("list-servers", "--json", cwd=project, env=env)
        sources = {item["name"]: item["source"] for item in json.loads(listed.stdout)}
        assert sources == {
            "a": str(project / ".mcp.json"),
            "b": str(project / ".cursor" / "mcp.json"),
        }
        ran = toolscript_cli(
            "exec",
            'import { tools } from "toolscript";\n'
            'return [await tools.a.echo({ text: "from claude" }), '
            'await tools.b.echo({ text: "from cursor" })]',
            cwd=project,
            env=env,
        )
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == ["from claude", "from cursor"]
        assert gateway.stop() == [], "processes outlived the gateway"
    finally:
        gateway.stop()


def test_an_imported_file_caught_broken_mid_write_keeps_its_servers_running(
    tmp_path: Path, toolscript_home: Path
) -> None:
    """Broken at start, an imported file is a warning and the rest starts; broken while the
    gateway runs (Claude Code rewrites ~/.claude.json often), nothing of it stops."""
    home = tmp_path / "home"
    project = home / "repo"
    server = {"command": sys.executable, "args": [str(FAULTY)]}
    write(project / ".mcp.json", {"a": server})
    write(project / ".cursor" / "mcp.json", {"b": server})
    env = {"HOME": str(home), "TOOLSCRIPT_HOME": str(toolscript_home)}
    gateway = GatewayProcess({"import": ["claude-code", "cursor"]}, project, env=env)
    try:
        a_pid = gateway.call("a__pid").json()
        (project / ".mcp.json").write_text('{"mcpServers": {"a": ')  # half written
        gateway.wait_for_log("invalid JSON", "still serving the previous configuration")
        assert gateway.call("a__pid").json() == a_pid
        write(project / ".mcp.json", {"a": server, "c": server})
        gateway.wait_for_log("config: added c")
        assert gateway.call("a__pid").json() == a_pid
        assert gateway.stop() == [], "processes outlived the gateway"
    finally:
        gateway.stop()
