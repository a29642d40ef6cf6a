"""`toolscript approve --tool`: only tools the project has (issue 44.16), and
`approve --revoke SERVER.TOOL` (44.22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from toolscript.cli.main import app
from toolscript.pipeline.artifacts import CacheLayout

runner = CliRunner()
TIME = {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}


PROJECT_CONFIG = TIME  # the project fixture writes it (tests/unit/conftest.py)
pytestmark = pytest.mark.usefixtures("project")  # (tests/unit/conftest.py)


def _fetched(project: Path) -> None:
    """The time server's tools as the pipeline keeps them once fetched."""
    path = CacheLayout(project / ".toolscript").server_tools("time")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{"name": "convert_time"}, {"name": "get_current_time"}]))


def _said(result: Result) -> str:
    """What a command printed, and the error it ended with (its message and hint)."""
    error = result.exception
    return result.output + (f"{error} {getattr(error, 'hint', '')}" if error else "")


def _approvals() -> list[str]:
    listed = runner.invoke(app, ["approve", "--list", "--json"])
    return [approval["tool"] for approval in json.loads(listed.stdout)]


def test_an_unknown_tool_is_not_approved_and_near_names_are_offered(project: Path) -> None:
    _fetched(project)
    typo = runner.invoke(app, ["approve", "--tool", "time.convert_tim"])
    assert typo.exit_code != 0
    assert "no tool 'convert_tim'" in _said(typo) and "time.convert_time" in _said(typo)
    unknown_server = runner.invoke(app, ["approve", "--tool", "nosuch.tool"])
    assert unknown_server.exit_code != 0 and "server not found: 'nosuch'" in _said(unknown_server)
    assert _approvals() == []
    known = runner.invoke(app, ["approve", "--tool", "time.convert_time"])
    assert known.exit_code == 0, known.output
    assert _approvals() == ["time__convert_time"]


def test_without_a_gateway_or_fetched_tools_approve_refuses_with_a_hint(project: Path) -> None:
    blind = runner.invoke(app, ["approve", "--tool", "time.convert_time"])
    assert blind.exit_code != 0
    assert "cannot check that time.convert_time exists" in _said(blind)
    assert "gateway start" in _said(blind)
    assert _approvals() == []


def test_revoke_takes_the_tool_as_its_argument(project: Path) -> None:
    _fetched(project)
    assert runner.invoke(app, ["approve", "--tool", "time.convert_time"]).exit_code == 0
    revoked = runner.invoke(app, ["approve", "--revoke", "time.convert_time"])
    assert revoked.exit_code == 0, revoked.output
    assert "revoked" in revoked.output
    assert _approvals() == []
    again = runner.invoke(app, ["approve", "--revoke", "time.convert_time"])
    assert again.exit_code != 0 and "was not approved" in _said(again)


def test_a_tool_is_approved_as_messages_name_it_when_names_hold_dots_or_underscores(
    project: Path,
) -> None:
    """Messages name a tool ``server.tool`` (errors.tool_named) and the hint's command is
    ``approve --tool`` with that spelling: a server's name may hold a dot and a tool's
    "__", and the command takes it back as the gateway names the tool."""
    servers = {
        "my.docs": {"command": "uvx", "args": ["docs"]},
        "gh": {"command": "uvx", "args": ["gh"]},
    }
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": servers}))
    layout = CacheLayout(project / ".toolscript")
    for server, tools in (("my.docs", ["search"]), ("gh", ["repo__list"])):
        path = layout.server_tools(server)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([{"name": name} for name in tools]))
    for spelled in ("my.docs.search", "gh.repo__list"):
        approved = runner.invoke(app, ["approve", "--tool", spelled])
        assert approved.exit_code == 0, _said(approved)
    assert sorted(_approvals()) == ["gh__repo__list", "my.docs__search"]
    for spelled in ("my.docs.search", "gh.repo__list"):
        revoked = runner.invoke(app, ["approve", "--revoke", spelled])
        assert revoked.exit_code == 0, _said(revoked)
    assert _approvals() == []


def test_a_disabled_servers_tools_are_not_approved(project: Path) -> None:
    """A disabled server is offered nowhere (its fetched tools are dropped at the next
    build): approving one of its tools said "start the gateway", which fetches nothing of
    it, or took the tool list a build had not dropped yet."""
    off = {"mcpServers": {"time": TIME["mcpServers"]["time"] | {"disabled": True}}}
    (project / ".toolscript.json").write_text(json.dumps(off))
    for fetched in (False, True):
        if fetched:
            _fetched(project)
        refused = runner.invoke(app, ["approve", "--tool", "time.convert_time"])
        assert refused.exit_code != 0
        assert "server 'time' is disabled in the config" in _said(refused)
        assert 'remove "disabled": true' in _said(refused) and "gateway start" not in _said(refused)
    assert _approvals() == []
