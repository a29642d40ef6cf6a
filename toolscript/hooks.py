"""Claude Code hooks: start a gateway per session, stop it when the session ends.

Both never fail the session: every problem becomes a message for the agent and
exit code 0. Files per session live in ``<toolscript home>/sessions/``:
``<id>.pid`` (the process id only), ``<id>.url`` (0600) and ``<id>.log``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from toolscript.gateway.launch import start_gateway
from toolscript.paths import user_cache_dir
from toolscript.processes import process_alive, terminate_tree

__all__ = ["approval_decision", "pre_tool_use", "session_end", "session_start"]

START_WAIT = 45.0  # seconds for every server to be tried and the URL printed
STOP_GRACE = 10.0


def _read_input() -> dict[str, Any]:
    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _session_files(session_id: str) -> tuple[Path, Path, Path]:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id) or "default"
    directory = user_cache_dir() / "sessions"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory / f"{safe}.pid", directory / f"{safe}.url", directory / f"{safe}.log"


def session_start() -> int:
    """Start the session's gateway; print a status line for the agent; always exit 0."""
    data = _read_input()
    session_id = str(data.get("session_id") or os.environ.get("CLAUDE_SESSION_ID") or os.getpid())
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or data.get("cwd") or os.getcwd())
    pid_file, url_file, log_file = _session_files(session_id)
    if pid_file.exists():
        session_end_for(session_id)  # a resumed session: replace its old gateway
    untrusted = _untrusted_config(project)
    if untrusted is not None:
        print(
            f"toolscript: {untrusted} is not trusted yet, so its MCP servers were not started "
            "(a repository's config names programs to run). Read it, then run `toolscript trust` "
            f"in {project} and restart the session."
        )
        return 0
    url_file.touch(mode=0o600)
    os.chmod(url_file, 0o600)
    with open(log_file, "w") as log_out:
        gateway = start_gateway(
            "--port",
            "0",
            cwd=project,
            stderr=log_out,
            url_file=url_file,
            detach=True,  # it serves the whole session, long after this hook returns
            wait=START_WAIT,
            on_spawn=lambda process: pid_file.write_text(str(process.pid)),
        )
    process, url = gateway.process, gateway.url
    if not url:
        problem = _last_error(log_file)
        if process.poll() is None:
            session_end_for(session_id)
        else:
            _cleanup(session_id)
        print(
            f"toolscript: the gateway did not start ({problem}). Tools are unavailable this session; "
            f"fix the problem (try `toolscript gateway start` in {project}) and restart the session."
        )
        return 0
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if env_file:
        with open(env_file, "a") as handle:
            handle.write(f"export TOOLSCRIPT_GATEWAY_URL={url}\n")
    print(_status_line(url, project))
    return 0


def _untrusted_config(project: Path) -> Path | None:
    """The project's config file when the user has not trusted it as it is now.

    A config chosen with TOOLSCRIPT_CONFIG is the user's own setting, so it is trusted.
    """
    from toolscript.trust import needs_trust

    config = project / ".toolscript.json"
    if not needs_trust(config):
        return None
    from toolscript.config import load_config
    from toolscript.errors import ConfigError

    try:
        load_config(config)
    except ConfigError:
        return None  # it can start nothing; the gateway reports what is wrong with it
    return config


def _last_error(log_file: Path) -> str:
    lines = [line for line in log_file.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[-1].replace("toolscript: error: ", "")[:400]


def _status_line(url: str, project: Path) -> str:
    from toolscript.cli.client import GatewayClient
    from toolscript.errors import GatewayError

    try:
        with GatewayClient(url, timeout=10) as client:
            health = client.get_json("/health")
    except GatewayError as exc:
        return f"toolscript: gateway started but did not answer /health ({exc.message})."
    servers = health.get("servers", {})
    if not servers:
        return (
            f"toolscript: gateway ready with no servers (no .toolscript.json in {project}). "
            "Add MCP servers under mcpServers in .toolscript.json (Claude Code's format) and restart "
            "the session; `toolscript exec` already works."
        )
    connected = [name for name, s in servers.items() if s["state"] == "connected"]
    failed = [f"{name} ({s['error']})" for name, s in servers.items() if s["state"] == "failed"]
    line = (
        f"toolscript: gateway ready, {len(connected)}/{len(servers)} servers connected, "
        f'{health.get("tools", 0)} tools. Find tools with `toolscript search "what you need"`, '
        "see types with `toolscript get-types SERVER TOOL`, run TypeScript with `toolscript exec`."
    )
    if failed:
        line += " Not connected: " + "; ".join(failed) + "."
    signing = [name for name, s in servers.items() if s["state"] == "needs_auth"]
    if signing:
        line += (
            " Need a sign-in (ask the user to run it; it opens a browser): "
            + "; ".join(f"`toolscript auth {name}`" for name in signing)
            + "."
        )
    return line


def session_end() -> int:
    """Stop the session's gateway (TERM, then KILL), remove its files; always exit 0."""
    data = _read_input()
    session_id = str(data.get("session_id") or os.environ.get("CLAUDE_SESSION_ID") or "")
    if session_id:
        session_end_for(session_id)
    return 0


def session_end_for(session_id: str) -> None:
    pid_file, _, _ = _session_files(session_id)
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        _cleanup(session_id)
        return
    if process_alive(pid):
        terminate_tree(pid, STOP_GRACE)
    _cleanup(session_id)


def _cleanup(session_id: str) -> None:
    for path in _session_files(session_id):
        path.unlink(missing_ok=True)


# A shell command that approves toolscript calls, or reaches into the file approvals live in.
_APPROVING = re.compile(r"\btoolscript\b.*\bapprove\b|runs\.sqlite", re.DOTALL)


def approval_decision(data: dict[str, Any]) -> dict[str, Any] | None:
    """PreToolUse's answer for one tool use: "ask" for a command that approves toolscript
    calls (whatever the user's allow rules say), None for anything else."""
    tool_input = data.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not _APPROVING.search(command):
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": (
                "toolscript: this approves tool calls that the project's policy holds for a "
                "person to approve; an agent must not approve its own calls. Read the call "
                "(`toolscript runs show RUN_ID`) before you allow it."
            ),
        }
    }


def pre_tool_use() -> int:
    """PreToolUse (Bash): make Claude Code ask the user before any `toolscript approve`."""
    decision = approval_decision(_read_input())
    if decision is not None:
        sys.stdout.write(json.dumps(decision) + "\n")
    return 0
