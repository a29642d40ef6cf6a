"""A script that uses a server that failed to start is told why (issue 49, item 16)."""

from __future__ import annotations

import json
from pathlib import Path

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
