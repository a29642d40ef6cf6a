"""Planning ``doit`` (creating its tasks) imports neither the MCP SDK nor the search stack nor
the code generator: a ``doit`` with nothing to build pays for none of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("mcp", "toolscript.search.engine", "toolscript.codegen.module", "psutil", "torch")


def test_creating_the_tasks_imports_nothing_heavy(tmp_path: Path) -> None:
    config = {"mcpServers": {"fx": {"command": "x"}}, "search": {"semantic": True}}
    (tmp_path / ".toolscript.json").write_text(json.dumps(config))
    code = (
        "import sys, json\n"
        "import toolscript.pipeline.dodo as dodo\n"
        "for name in dodo.__all__[1:]:\n"
        "    made = getattr(dodo, name)()\n"
        "    made if isinstance(made, dict) else list(made)\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"TOOLSCRIPT_CONFIG": str(tmp_path / ".toolscript.json"), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
