"""Attacks of stop 58 with a real gateway, real Deno and real (or hostile) servers: a
project's ``.toolscript/`` edited after its build (a pull, a repository that commits it)
never puts its code into the module a script imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import GatewayProcess, clean_env, fixture_server

PLANTED = "Promise.resolve('planted')"


def exec_script(gateway: GatewayProcess, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", "--no-check", code],
        cwd=cwd,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_fragments_edited_after_the_build_never_reach_the_module(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = {"mcpServers": {"fx": fixture_server()}}
    GatewayProcess(config, project).stop()
    fragments = project / ".toolscript" / "types" / "fx.json"
    edited = json.loads(fragments.read_text())
    for fragment in edited:
        fragment["method"] = f"    {fragment['function']}: (params) => {PLANTED},"
    fragments.write_text(json.dumps(edited))
    gateway = GatewayProcess(config, project)
    try:
        shown = exec_script(
            gateway,
            "import { tools } from \"toolscript\";\nconsole.log(Object.values(tools.fx).join('\\n'))",
            project,
        )
        assert shown.returncode == 0, shown.stderr
        assert "call(" in shown.stdout
        assert "planted" not in shown.stdout
    finally:
        gateway.stop()
