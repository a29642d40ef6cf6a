"""Stop 67's attack on a server's identity, what an approval is bound to: an edit of the
entry that runs something else (a pulled change the person trusts for its new tool, say)
kept every "always" approval of the old one. The identity was the transport and the command
and args joined with spaces (or the URL), so these compared equal to what was approved:

- the same words split otherwise (``["a b"]`` and ``["a", "b"]``);
- another ``cwd`` (``node server.js`` there is another program);
- another ``env`` (``NODE_OPTIONS=--require ./other.js``, another account's variable);
- another header (``X-Account``, the ``${VAR}`` of another token), the URL the same.

What held: a URL with another query or userinfo, the command or its order of args.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolscript.config import load_config

STDIO: dict[str, Any] = {"command": "node", "args": ["server.js", "--root", "data"]}
HTTP: dict[str, Any] = {"url": "https://mcp.example.com/mcp", "headers": {"X-Account": "me"}}


def identity(tmp_path: Path, entry: dict[str, Any], environ: dict[str, str] | None = None) -> str:
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps({"mcpServers": {"s": entry}}))
    return load_config(path, environ=environ or {}).servers[0].identity


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            {"command": "node", "args": ["server.js --root", "data"]},
            {"command": "node", "args": ["server.js", "--root data"]},
            id="args split otherwise",
        ),
        pytest.param(STDIO | {"cwd": "a"}, STDIO | {"cwd": "b"}, id="cwd"),
        pytest.param(STDIO, STDIO | {"cwd": "b"}, id="cwd added"),
        pytest.param(
            STDIO | {"env": {"NODE_OPTIONS": ""}},
            STDIO | {"env": {"NODE_OPTIONS": "--require ./other.js"}},
            id="env",
        ),
        pytest.param(STDIO, STDIO | {"env": {"API_URL": "https://other.example"}}, id="env added"),
        pytest.param(HTTP, HTTP | {"headers": {"X-Account": "someone-else"}}, id="header"),
        pytest.param(
            HTTP | {"headers": {"Authorization": "Bearer ${MINE}"}},
            HTTP | {"headers": {"Authorization": "Bearer ${THEIRS}"}},
            id="another token's variable",
        ),
    ],
)
def test_an_entry_that_runs_something_else_is_another_server(
    tmp_path: Path, before: dict[str, Any], after: dict[str, Any]
) -> None:
    environ = {"MINE": "token-of-mine-1234", "THEIRS": "token-of-theirs-5678"}
    assert identity(tmp_path, before, environ) != identity(tmp_path, after, environ)


@pytest.mark.parametrize(
    "after",
    [
        pytest.param(HTTP | {"url": "https://mcp.example.com/mcp?tenant=other"}, id="query"),
        pytest.param(HTTP | {"url": "https://other@mcp.example.com/mcp"}, id="userinfo"),
        pytest.param(HTTP | {"type": "sse"}, id="transport"),
    ],
)
def test_what_held_a_url_that_differs(tmp_path: Path, after: dict[str, Any]) -> None:
    assert identity(tmp_path, HTTP) != identity(tmp_path, after)


def test_the_same_entry_is_the_same_server_and_a_token_s_value_is_not_digested(
    tmp_path: Path,
) -> None:
    """Written ``${VAR}``: a token that changes value (a new one, the same account) keeps
    the approvals, and the identity is the same in every process that reads the file."""
    entry = HTTP | {"headers": {"Authorization": "Bearer ${TOKEN}"}}
    first = identity(tmp_path, entry, {"TOKEN": "old-token-value-1234"})
    assert first == identity(tmp_path, entry, {"TOKEN": "new-token-value-5678"})
    assert identity(tmp_path, STDIO) == identity(tmp_path, dict(STDIO))


def imported_identity(tmp_path: Path, entry: dict[str, Any], environ: dict[str, str]) -> str:
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": entry}}))
    path = tmp_path / ".toolscript.json"
    path.write_text(json.dumps({"import": ["claude-code"]}))
    found = load_config(path, environ={"HOME": str(tmp_path / "home"), **environ})
    return found.server("s").identity


def test_an_imported_entry_is_the_server_its_file_writes(tmp_path: Path) -> None:
    """A server of ``.mcp.json``: its env or cwd changed is another server; a ``${VAR}`` of
    it is as written (the gateway's environment and the shell of `approve --tool` agree)."""
    entry = STDIO | {"env": {"ROOT": "${PWD}"}}
    first = imported_identity(tmp_path, entry, {"PWD": "/one"})
    assert imported_identity(tmp_path, entry, {"PWD": "/two"}) == first
    changed = entry | {"env": {"ROOT": "${PWD}", "NODE_OPTIONS": "--require ./other.js"}}
    assert imported_identity(tmp_path, changed, {"PWD": "/one"}) != first
    assert imported_identity(tmp_path, entry | {"cwd": "b"}, {"PWD": "/one"}) != first


def test_a_tool_file_is_its_path_whatever_its_secrets_hold(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "t.py").write_text("def ping() -> str:\n    return 'pong'\n")
    path = tmp_path / ".toolscript.json"
    local = {"dir": "tools", "files": {"t": {"secrets": {"KEY": "${KEY}"}}}}
    path.write_text(json.dumps({"localTools": local}))

    def of(key: str) -> str:
        return load_config(path, environ={"KEY": key}).server("t").identity

    assert of("first-secret-value-1234") == of("second-secret-value-5678")
