"""A script that uses a server that failed to start is told why (issue 49, item 16)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import running_gateway, toolscript_cli

BAD_DEPENDENCY = (
    "# /// script\n"
    '# dependencies = ["no-such-package-toolscript-49b"]\n'
    "# ///\n"
    "def f() -> int:\n"
    "    return 1\n"
)


def test_a_script_using_a_failed_tool_file_gets_uvs_error(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "baddep.py").write_text(BAD_DEPENDENCY)
    config = {"mcpServers": {}, "localTools": {"dir": "tools"}}
    with running_gateway(config, tmp_path, "--no-warm-checker") as gateway:
        status = json.loads(toolscript_cli("gateway", "status", "--json", cwd=tmp_path).stdout)
        failure = status["servers"]["baddep"]["error"]
        assert "uv could not run baddep.py" in failure
        script = 'import { tools } from "toolscript"; return await tools.baddep.f({});'
        for extra in ([], ["--no-check"]):  # the type check says so, and so does the run
            result = toolscript_cli(
                "exec", *extra, script, cwd=tmp_path, env={"TOOLSCRIPT_GATEWAY_URL": gateway.url}
            )
            assert result.returncode != 0
            assert "baddep (UpstreamError: uv could not run baddep.py" in result.stderr, (
                result.stderr
            )


# Waits for a file, then is the fixture server: a first start as slow as the test wants.
GATED = (
    "import pathlib, runpy, sys, time\n"
    "gate = pathlib.Path(sys.argv[1])\n"
    "while not gate.exists():\n"
    "    time.sleep(0.05)\n"
    "sys.argv = [sys.argv[2]]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def test_exec_waits_for_a_server_still_connecting_then_runs(tmp_path: Path) -> None:
    """A server the script names, still connecting through a running gateway: the type check
    failed at once ("Property 'slow' does not exist"); exec now says it waits, waits for it
    (its tools join the module), checks and runs."""
    import subprocess
    import sys

    from tests.helpers import FIXTURE_SERVER, clean_env, fixture_server

    config: dict[str, Any] = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    gate = tmp_path / "gate"
    with running_gateway(config, tmp_path, "--ready-wait", "60") as gateway:
        slow = {"command": sys.executable, "args": ["-c", GATED, str(gate), str(FIXTURE_SERVER)]}
        config["mcpServers"]["slow"] = slow  # a server added while it serves: not waited for
        gateway.config_path.write_text(json.dumps(config))
        gateway.wait_for_health(
            lambda h: (h["servers"].get("slow") or {}).get("state") == "connecting",
            30,
            "slow connecting",
        )
        script = 'import { tools } from "toolscript"; console.log(await tools.slow.plainText({}));'
        run = subprocess.Popen(
            [sys.executable, "-m", "toolscript", "exec", script],
            cwd=tmp_path,
            env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert run.stderr is not None
        said = run.stderr.readline()
        assert said.startswith("toolscript: waiting up to 60 s for slow, still connecting"), said
        gate.write_text("")
        out, rest = run.communicate(timeout=120)
        assert run.returncode == 0, said + rest
        assert out.strip() == "hello"
