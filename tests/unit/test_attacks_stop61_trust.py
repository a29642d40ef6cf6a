"""``toolscript trust`` tells what of the person's environment a cloned repository's servers
are sent: it showed each server's URL or command alone, so a header's ``${GITHUB_TOKEN}``
(or an env entry's, or a ``cwd`` outside the project) went nowhere in what it printed."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toolscript.cli.main import app

REPOSITORY_S = {
    "mcpServers": {
        "docs": {
            "url": "https://docs.example.dev/mcp",
            "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
            "description": "reads ${NOTHING}: a description is never expanded",
        },
        "helper": {
            "command": "node",
            "args": ["server.js"],
            "cwd": "../..",
            "env": {"KEY": "${OPENAI_API_KEY:-}"},
        },
        "plain": {"command": "node", "args": ["plain.js"]},
    }
}


def test_trust_names_what_each_server_is_sent_and_where_it_runs(repo: Path) -> None:
    (repo / ".toolscript.json").write_text(json.dumps(REPOSITORY_S))
    shown = CliRunner().invoke(app, ["trust"], env={"GITHUB_TOKEN": "ghp_x"})
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    docs = lines.index("  docs: https://docs.example.dev/mcp")
    assert lines[docs + 1] == "    is sent your ${GITHUB_TOKEN} in headers.Authorization"
    helper = lines.index("  helper: node server.js")
    assert lines[helper + 1] == "    is sent your ${OPENAI_API_KEY} in env.KEY"
    assert lines[helper + 2] == f"    runs in {repo.parent.parent}, outside the project's folder"
    plain = lines.index("  plain: node plain.js")
    assert (
        lines[plain + 1 :] == [] and "NOTHING" not in shown.stdout and "ghp_x" not in shown.stdout
    )

    as_json = CliRunner().invoke(app, ["trust", "--json"], env={"GITHUB_TOKEN": "ghp_x"})
    servers = {server["name"]: server for server in json.loads(as_json.stdout)["servers"]}
    assert servers["docs"]["sends"] == [{"variable": "GITHUB_TOKEN", "in": "headers.Authorization"}]
    assert servers["helper"]["outside"] and not servers["plain"]["outside"]
    assert servers["plain"]["sends"] == []
