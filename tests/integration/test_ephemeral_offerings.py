"""exec's own gateway starts only the servers a script names as ``tools.<namespace>``
(issue 45); a script that reaches servers by name instead (``resources``, ``prompts``,
``describe``, ``search``) gets every server started with it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import toolscript_cli
from tests.integration.test_offerings import ARCHITECTURE, everything_config


def test_exec_s_own_gateway_starts_the_servers_a_script_reads_resources_of(
    tmp_path: Path,
) -> None:
    (tmp_path / ".toolscript.json").write_text(json.dumps(everything_config()))
    code = (
        'import { describe, resources } from "toolscript";\n'
        f"const read = await resources.everything.read({json.dumps(ARCHITECTURE)});\n"
        'const described = await describe("everything", "echo");\n'
        "return { read: read.length > 0, call: described.call };\n"
    )
    done = toolscript_cli(
        "exec", code, cwd=tmp_path, env={"TOOLSCRIPT_HOME": str(tmp_path / "home")}, timeout=240
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["read"] is True and "everything" in seen["call"]
