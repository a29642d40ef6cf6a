"""The Claude Code plugin: hooks run as Claude Code runs them, manifests validated, skill examples run."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import (
    ROOT,
    SERVERS,
    GatewayProcess,
    clean_env,
    node_server,
    python_bin,
    running_gateway,
    wait_for_exit,
)

PLUGIN = ROOT / "plugin"
SKILL = PLUGIN / "skills" / "toolscript"
CLAUDE = SERVERS / "node_modules" / ".bin" / "claude"  # npm's link: the same on every system


def hook(
    name: str,
    session: str,
    project: Path,
    home: Path,
    env_file: Path,
    path: str | None = None,
    *,
    trusted: bool = True,
    **fields: str,
) -> subprocess.CompletedProcess[str]:
    argv, env, payload = hook_call(
        name, session, project, home, env_file, path, trusted=trusted, **fields
    )
    return subprocess.run(argv, input=payload, env=env, capture_output=True, text=True, timeout=120)


def hook_call(
    name: str,
    session: str,
    project: Path,
    home: Path,
    env_file: Path,
    path: str | None = None,
    *,
    trusted: bool = True,
    **fields: str,
) -> tuple[list[str], dict[str, str], str]:
    """The hook's command line, environment and input, as Claude Code gives them."""
    env = clean_env(
        CLAUDE_PLUGIN_ROOT=str(PLUGIN),
        CLAUDE_PROJECT_DIR=str(project),
        CLAUDE_ENV_FILE=str(env_file),
        TOOLSCRIPT_HOME=str(home),
        TOOLSCRIPT_CONFIG_HOME=str(home / "config"),
        TOOLSCRIPT_TRUSTED_PATHS="",  # trusted only through `toolscript trust`
    )
    if trusted and name == "SessionStart" and (project / ".toolscript.json").exists():
        subprocess.run(
            [sys.executable, "-m", "toolscript", "trust"],
            cwd=project,
            env=env,
            capture_output=True,
            timeout=60,
        )
    env["PATH"] = (
        path if path is not None else f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    )
    payload = {
        "session_id": session,
        "cwd": str(project),
        "hook_event_name": name,
        "transcript_path": "/dev/null",
        **fields,
    }
    command = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"][name][0]["hooks"][
        0
    ]["command"]
    return ["bash", "-c", command], env, json.dumps(payload)


def pid_of(home: Path, session: str) -> int:
    return int((home / "sessions" / f"{session}.pid").read_text())


def processes_in(directory: Path) -> list[str]:
    """The processes whose working directory is in ``directory``."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        try:
            if process.info["cwd"] and Path(process.info["cwd"]).is_relative_to(directory):
                found.append(" ".join(process.info["cmdline"] or [])[:120])
        except (psutil.Error, ValueError):
            continue
    return found


def family(pid: int) -> list[psutil.Process]:
    process = psutil.Process(pid)
    return [process, *process.children(recursive=True)]


def test_session_lifecycle(tmp_path: Path) -> None:
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    (project / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}})
    )
    started = hook("SessionStart", "s1", project, home, env_file)
    assert started.returncode == 0, started.stderr
    assert "1/1 servers connected, 2 tools" in started.stdout
    assert "toolscript search" in started.stdout
    pid_file = home / "sessions" / "s1.pid"
    assert re.fullmatch(r"\d+", pid_file.read_text())
    processes = family(pid_of(home, "s1"))
    assert len(processes) >= 2  # the gateway and its stdio server
    exported = env_file.read_text()
    assert exported.startswith("export TOOLSCRIPT_GATEWAY_URL=http://127.0.0.1:")

    script = 'import { tools } from "toolscript"; return (await tools.time.getCurrentTime({ timezone: "UTC" })).timezone;'
    ran = subprocess.run(
        ["bash", "-c", f"source {env_file} && {sys.executable} -m toolscript exec '{script}'"],
        cwd=project,
        env=clean_env(TOOLSCRIPT_HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == "UTC"

    ended = hook("SessionEnd", "s1", project, home, env_file)
    assert ended.returncode == 0
    assert not pid_file.exists()
    _, alive = psutil.wait_procs(processes, timeout=5)
    assert alive == []
    again = hook("SessionEnd", "s1", project, home, env_file)
    assert again.returncode == 0


def test_two_sessions_at_once(tmp_path: Path) -> None:
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    assert hook("SessionStart", "a", project, home, env_file).returncode == 0
    assert hook("SessionStart", "b", project, home, env_file).returncode == 0
    first, second = pid_of(home, "a"), pid_of(home, "b")
    assert first != second
    urls = [line.split("=", 1)[1] for line in env_file.read_text().splitlines()]
    assert len(set(urls)) == 2
    hook("SessionEnd", "a", project, home, env_file)
    wait_for_exit(first, 5)
    assert psutil.Process(second).is_running()
    hook("SessionEnd", "b", project, home, env_file)
    assert not (home / "sessions" / "b.pid").exists()


def test_no_config_tells_how_to_add_servers(tmp_path: Path) -> None:
    home, env_file = tmp_path / "home", tmp_path / "env.sh"
    started = hook("SessionStart", "empty", tmp_path, home, env_file)
    assert started.returncode == 0
    assert "no servers" in started.stdout
    assert ".toolscript.json" in started.stdout
    hook("SessionEnd", "empty", tmp_path, home, env_file)


def test_servers_added_after_start_join_the_session_gateway(tmp_path: Path) -> None:
    """A Claude Code project with its servers in .mcp.json only: the status line names
    `toolscript init`, which imports them, and (once trusted) the running gateway starts
    them with no restart of the session. It says no machine path."""
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    (project / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}})
    )
    started = hook("SessionStart", "later", project, home, env_file)
    try:
        assert "no servers" in started.stdout and "`toolscript init --yes`" in started.stdout
        assert "restart" not in started.stdout and str(tmp_path) not in started.stdout
        env = clean_env(
            TOOLSCRIPT_HOME=str(home),
            TOOLSCRIPT_CONFIG_HOME=str(home / "config"),
            TOOLSCRIPT_TRUSTED_PATHS="",
        )
        agent = f"source {env_file} && {sys.executable} -m toolscript"

        def toolscript(command: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["bash", "-c", f"{agent} {command}"],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )

        for command in ("init --yes", "trust"):  # the agent, then the user
            ran = toolscript(command)
            assert ran.returncode == 0, ran.stderr
        listed = ""
        for _ in range(100):
            listed = toolscript("list-servers --json").stdout
            if '"connected"' in listed:
                break
            time.sleep(0.2)
        assert '"connected"' in listed, listed
    finally:
        hook("SessionEnd", "later", project, home, env_file)


def test_invalid_config_never_fails_the_session(tmp_path: Path) -> None:
    home, env_file = tmp_path / "home", tmp_path / "env.sh"
    (tmp_path / ".toolscript.json").write_text('{"mcpServers": {"x": {"type": "websocket"}}}')
    started = hook("SessionStart", "bad", tmp_path, home, env_file)
    assert started.returncode == 0
    assert "did not start" in started.stdout
    assert "mcpServers.x.type" in started.stdout
    assert "`toolscript config check` in the project" in started.stdout  # not the machine's path
    assert not (home / "sessions" / "bad.pid").exists()
    assert not env_file.exists()


def test_without_toolscript_installed(tmp_path: Path) -> None:
    started = hook(
        "SessionStart",
        "none",
        tmp_path,
        tmp_path / "home",
        tmp_path / "env.sh",
        path="/usr/bin:/bin",
    )
    assert started.returncode == 0
    assert "not installed" in started.stdout
    assert "pip install '.[semantic]'" in started.stdout  # what the README says
    assert "toolscript[semantic]" not in started.stdout  # no registry serves that
    ended = hook(
        "SessionEnd", "none", tmp_path, tmp_path / "home", tmp_path / "env.sh", path="/usr/bin:/bin"
    )
    assert ended.returncode == 0


def test_end_hook_when_the_gateway_already_died(tmp_path: Path) -> None:
    home, env_file = tmp_path / "home", tmp_path / "env.sh"
    hook("SessionStart", "dead", tmp_path, home, env_file)
    pid = pid_of(home, "dead")
    psutil.Process(pid).kill()
    wait_for_exit(pid)
    assert hook("SessionEnd", "dead", tmp_path, home, env_file).returncode == 0
    assert not (home / "sessions" / "dead.pid").exists()


@pytest.mark.parametrize("target", [PLUGIN, ROOT])
def test_manifests_validate_strictly(target: Path, tmp_path: Path) -> None:
    assert CLAUDE.exists(), "run the README's install command (npm ci --prefix tests/servers)"
    result = subprocess.run(
        [str(CLAUDE), "plugin", "validate", "--strict", str(target)],
        env={
            **clean_env(),
            "HOME": str(tmp_path),  # the CLI keeps its state there, never in the repository
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ICON_MISSING" not in result.stdout + result.stderr
    assert "Validation passed" in result.stdout
    for leftover in (ROOT / ".claude.json", PLUGIN / ".claude.json"):
        assert not leftover.exists(), f"the CLI wrote its per-machine state into {leftover}"


def test_plugin_version_matches_the_package() -> None:
    from toolscript import __version__

    assert (
        json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["version"]
        == __version__
    )
    marketplace = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert marketplace["plugins"][0]["source"] == "./plugin"


# -- every example of the skill is real ---------------------------------------------------

FENCE = re.compile(r"```(\w+)\n(.*?)```", re.S)
DOCUMENTS = [SKILL / "SKILL.md", *sorted((SKILL / "references").glob("*.md"))]
BLOCKS = [
    (document, index, language, code)
    for document in DOCUMENTS
    for index, (language, code) in enumerate(FENCE.findall(document.read_text()))
]


def test_skill_is_lean_and_points_at_references() -> None:
    text = (SKILL / "SKILL.md").read_text()
    assert text.startswith("---\nname: toolscript\ndescription: ")
    assert len(text.splitlines()) < 80
    for reference in (SKILL / "references").glob("*.md"):
        assert f"references/{reference.name}" in text


@pytest.fixture(scope="module")
def skill_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("skill")
    tools = directory / "tools"
    tools.mkdir()
    for _, _, language, code in BLOCKS:
        if language == "python":
            name = re.search(r"tools/(\w+)\.py", code)
            assert name, "each Python example names its file: tools/NAME.py"
            (tools / f"{name.group(1)}.py").write_text(code)
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time")},
            "everything": {"command": node_server("mcp-server-everything")},
            "memory": {
                "command": node_server("mcp-server-memory"),
                "env": {"MEMORY_FILE_PATH": str(directory / "memory.jsonl")},
            },
        },
        "localTools": {"dir": "tools"},
    }
    with running_gateway(config, directory) as gateway:
        yield gateway


@pytest.mark.parametrize(
    ("document", "index", "language", "code"),
    BLOCKS,
    ids=[f"{d.name}-{i}-{lang}" for d, i, lang, _ in BLOCKS],
)
def test_skill_example_runs(
    document: Path,
    index: int,
    language: str,
    code: str,
    skill_gateway: GatewayProcess,
    tmp_path: Path,
) -> None:
    env = clean_env(
        TOOLSCRIPT_GATEWAY_URL=skill_gateway.url, TOOLSCRIPT_HOME=str(tmp_path / "home")
    )
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    if language == "typescript":
        result = subprocess.run(
            [sys.executable, "-m", "toolscript", "exec", "-"],
            input=code,
            cwd=skill_gateway.directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"{document.name} block {index}:\n{code}\n{result.stderr}"
    elif language == "bash":
        result = subprocess.run(
            ["bash", "-e", "-c", code],
            cwd=skill_gateway.directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode in (0, 3), (
            f"{document.name} block {index}:\n{code}\n{result.stderr}"
        )
        assert result.stdout.strip()
    elif language == "json":
        from toolscript.config import load_config

        (tmp_path / "tools").mkdir()
        (tmp_path / ".toolscript.json").write_text(code)
        config = load_config(tmp_path / ".toolscript.json", environ={})
        assert config.servers or json.loads(code).get("localTools")
    elif language == "python":
        name = re.search(r"tools/(\w+)\.py", code)
        assert name is not None
        listed = skill_gateway.client.get(f"servers/{name.group(1)}/tools").json()
        assert listed, f"{document.name}: the Python example describes no tool"
    else:
        pytest.fail(f"{document.name} block {index}: no runner for ```{language}")


def test_an_untrusted_project_config_starts_nothing(tmp_path: Path) -> None:
    """A cloned repository's config runs nothing until the user trusts it; an edit untrusts it."""
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    marker = tmp_path / "ran.txt"
    config = project / ".toolscript.json"
    config.write_text(
        json.dumps({"mcpServers": {"evil": {"command": "sh", "args": ["-c", f"touch {marker}"]}}})
    )
    started = hook("SessionStart", "u1", project, home, env_file, trusted=False)
    assert started.returncode == 0
    assert "is not trusted yet" in started.stdout and "toolscript trust" in started.stdout
    # said to the agent: the user trusts it (an agent told to run it would), and no paths
    assert "ask them to read it" in started.stdout and "not yours" in started.stdout
    assert str(tmp_path) not in started.stdout
    assert not (home / "sessions" / "u1.pid").exists(), "no gateway was started"
    # Nothing runs in the project (a gateway starting late would) and nothing ran there.
    assert processes_in(project) == []
    assert not marker.exists()

    env = clean_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_CONFIG_HOME=str(home / "config"))
    config.write_text(
        json.dumps({"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}})
    )
    trusting = subprocess.run(
        [sys.executable, "-m", "toolscript", "trust"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert trusting.returncode == 0, trusting.stderr
    assert "trusted:" in trusting.stdout and "time:" in trusting.stdout
    assert (home / "config" / "trusted.json").stat().st_mode & 0o077 == 0
    started = hook("SessionStart", "u2", project, home, env_file, trusted=False)
    assert "1/1 servers connected" in started.stdout
    assert hook("SessionEnd", "u2", project, home, env_file).returncode == 0

    config.write_text(config.read_text().replace("mcp-server-time", "mcp-server-time "))
    edited = hook("SessionStart", "u3", project, home, env_file, trusted=False)
    assert "is not trusted yet" in edited.stdout, "an edited config needs trusting again"
    revoke = subprocess.run(
        [sys.executable, "-m", "toolscript", "trust", "--revoke"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert revoke.returncode == 0 and "no longer trusted" in revoke.stdout


def test_the_readme_asks_for_the_node_the_pinned_packages_need() -> None:
    """npm warns EBADENGINE when the README's Node is older than a pinned package asks for."""
    import re

    pinned = json.loads((SERVERS / "package.json").read_text())["dependencies"]
    needed = {}
    for name in pinned:
        manifest = json.loads((SERVERS / "node_modules" / name / "package.json").read_text())
        found = re.match(r"\s*>=\s*(\d+)", str((manifest.get("engines") or {}).get("node", "")))
        if found:
            needed[name] = int(found.group(1))
    said = re.search(r"Node (\d+)\+", (ROOT / "README.md").read_text())
    assert said, "the README's install section names the Node version"
    assert all(int(said.group(1)) >= version for version in needed.values()), needed


def test_a_stale_pid_file_stops_no_other_process(tmp_path: Path) -> None:
    """A session's PID file left by a crash or a reboot names a number another process may
    have taken since: ending (or resuming) that session must not kill it."""
    home, env_file = tmp_path / "home", tmp_path / "env.sh"
    (home / "sessions").mkdir(parents=True)
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        pid_file = home / "sessions" / "crashed.pid"
        pid_file.write_text(str(bystander.pid))
        an_hour_ago = pid_file.stat().st_mtime - 3600  # written before the crash
        os.utime(pid_file, (an_hour_ago, an_hour_ago))
        assert hook("SessionEnd", "crashed", tmp_path, home, env_file).returncode == 0
        assert bystander.poll() is None, "the hook killed a process it did not start"
        assert not pid_file.exists()
    finally:
        bystander.kill()
        bystander.wait()


def test_the_status_line_names_a_server_still_connecting(tmp_path: Path) -> None:
    """A server that has not answered when the gateway starts serving is named, so the agent
    does not read "1/2 servers connected" and guess which one is missing."""
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    servers = {
        "time": {"command": python_bin("mcp-server-time")},
        "slow": {"command": "sleep", "args": ["300"]},  # never answers initialize
    }
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": servers}))
    started = hook("SessionStart", "late", project, home, env_file)
    try:
        assert started.returncode == 0, started.stderr
        assert "1/2 servers connected" in started.stdout
        assert "Still connecting" in started.stdout and "slow" in started.stdout
    finally:
        processes = family(pid_of(home, "late"))
        hook("SessionEnd", "late", project, home, env_file)
        _, alive = psutil.wait_procs(processes, timeout=5)
        assert alive == []


# Claude Code as the hooks see it: a program that runs a hook, then goes on (until killed).
FAKE_CLAUDE_CODE = """
import json, subprocess, sys, time
argv, env, payload = json.loads(sys.argv[1])
subprocess.run(argv, input=payload, env=env, text=True, capture_output=True, timeout=120)
print("hook done", flush=True)
time.sleep(600)
"""


def test_a_killed_claude_code_stops_its_session_gateway(tmp_path: Path) -> None:
    """No SessionEnd ever comes for a Claude Code that was killed (or its terminal closed):
    the session's gateway follows that process (the hook's first ancestor that is not a
    shell) and stops with its servers."""
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    (project / ".toolscript.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": python_bin("mcp-server-time")}}})
    )
    call = hook_call("SessionStart", "killed", project, home, env_file)
    claude_code = subprocess.Popen(
        [sys.executable, "-c", FAKE_CLAUDE_CODE, json.dumps(call)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert claude_code.stdout is not None
        assert claude_code.stdout.readline().strip() == "hook done"
        gateway = family(pid_of(home, "killed"))  # the gateway, its server, its workers
        server = [p for p in gateway if "mcp-server-time" in " ".join(p.cmdline())]
        time.sleep(3)  # the gateway looks at its owner: it serves while that one runs
        assert gateway[0].is_running() and server and server[0].is_running()
    finally:
        claude_code.kill()
        claude_code.wait()
    _, alive = psutil.wait_procs(gateway, timeout=30)
    assert alive == [], alive


def test_a_compaction_keeps_the_session_gateway(tmp_path: Path) -> None:
    """Claude Code runs SessionStart again (source "compact") in the same session after a
    compaction: the gateway goes on (its runs, its port), and the agent is told again."""
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    assert hook("SessionStart", "k", project, home, env_file, source="startup").returncode == 0
    first = pid_of(home, "k")
    compacted = hook("SessionStart", "k", project, home, env_file, source="compact")
    assert compacted.returncode == 0
    assert "gateway ready" in compacted.stdout
    assert pid_of(home, "k") == first and psutil.Process(first).is_running()
    urls = [line.split("=", 1)[1] for line in env_file.read_text().splitlines()]
    assert len(urls) == 2 and urls[0] == urls[1]
    hook("SessionEnd", "k", project, home, env_file)
    wait_for_exit(first, 15)


def test_the_configuration_reference_says_an_edit_needs_trust() -> None:
    """An edited config is untrusted: restarting the session (the reference's old advice)
    then starts no gateway at all, while the user's `toolscript trust` lets the running
    gateway follow the edit."""
    text = (SKILL / "references" / "configuration.md").read_text()
    assert "restart the session" not in text
    assert "`toolscript trust`" in text and "do not run it yourself" in text


def test_a_failing_start_hook_tells_the_agent_why(tmp_path: Path) -> None:
    """The agent reads only stdout: when the hook itself fails, the reason (on stderr) is
    in what it says, not only "run toolscript gateway start" (which blocks a shell)."""
    not_a_folder = tmp_path / "home"
    not_a_folder.write_text("")
    started = hook("SessionStart", "f", tmp_path, not_a_folder, tmp_path / "env.sh")
    assert started.returncode == 0
    assert "failed (exit 1)" in started.stdout
    assert "set TOOLSCRIPT_HOME to a folder you can write" in started.stdout
    assert "gateway start" not in started.stdout


def test_list_servers_says_why_an_edited_server_is_not_there(tmp_path: Path) -> None:
    """An edit waits for `toolscript trust` while the gateway keeps its previous config:
    list-servers, which the skill names, says so for the new server instead of "unknown"."""
    project, home, env_file = tmp_path / "project", tmp_path / "home", tmp_path / "env.sh"
    project.mkdir()
    servers = {"time": {"command": python_bin("mcp-server-time")}}
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": servers}))
    hook("SessionStart", "edit", project, home, env_file)
    try:
        servers["clock"] = servers["time"]
        (project / ".toolscript.json").write_text(json.dumps({"mcpServers": servers}))
        listed = subprocess.run(
            ["bash", "-c", f"source {env_file} && {sys.executable} -m toolscript list-servers"],
            cwd=project,
            env=clean_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_CONFIG_HOME=str(home / "config")),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
        (clock,) = [line for line in listed.stdout.splitlines() if line.startswith("clock")]
        assert "not loaded: see `toolscript gateway status`" in clock
    finally:
        hook("SessionEnd", "edit", project, home, env_file)


def test_session_end_removes_its_files_before_it_waits(tmp_path: Path) -> None:
    """Claude Code gives SessionEnd about 1.5 s in all, whatever the hook's timeout says,
    then cancels it (seen with the real CLI: "SessionEnd hook ... cancelled"). The gateway
    gets its TERM and the session's files go before the wait for it to end, so a cancelled
    hook leaves neither. A stand-in gateway that ignores TERM shows the order."""
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    stubborn = subprocess.Popen(
        ["bash", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"],
        stdout=subprocess.PIPE,
        text=True,
    )
    hook_process = None
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
        pid_file = home / "sessions" / "slow.pid"
        pid_file.write_text(str(stubborn.pid))
        env = clean_env(
            CLAUDE_PLUGIN_ROOT=str(PLUGIN),
            CLAUDE_PROJECT_DIR=str(tmp_path),
            TOOLSCRIPT_HOME=str(home),
            PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        )
        command = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]["SessionEnd"]
        hook_process = subprocess.Popen(
            ["bash", "-c", command[0]["hooks"][0]["command"]],
            stdin=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        assert hook_process.stdin is not None
        hook_process.stdin.write(json.dumps({"session_id": "slow"}).encode())
        hook_process.stdin.close()
        while pid_file.exists() and hook_process.poll() is None:
            time.sleep(0.02)
        assert not pid_file.exists()
        assert stubborn.poll() is None, "the files were removed only after the wait and KILL"
    finally:
        if hook_process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(hook_process.pid, signal.SIGKILL)  # as Claude Code cancels it
            hook_process.wait()
        stubborn.kill()
        stubborn.wait()


def test_the_hooks_skip_the_command_line_parser() -> None:
    """PreToolUse runs before every Bash command and SessionEnd has about 1.5 s: the hooks
    do not load typer (about half a second on a busy machine)."""
    loaded = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "toolscript", "hook", "pre-tool-use"],
        input=json.dumps({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert not re.search(r"\|\s+(typer|click)\b", loaded.stderr)


def test_session_end_returns_before_the_gateway_has_ended(tmp_path: Path) -> None:
    """So Claude Code does not cancel it ("Hook cancelled" at every exit): the hook returns
    once the gateway has its TERM, and a child of its own still KILLs a gateway that does
    not end within the grace. A stand-in gateway that ignores TERM shows both."""
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    stubborn = subprocess.Popen(
        ["bash", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
        (home / "sessions" / "quick.pid").write_text(str(stubborn.pid))
        ended = hook("SessionEnd", "quick", tmp_path, home, tmp_path / "env.sh")
        assert ended.returncode == 0
        assert stubborn.poll() is None, "the hook waited for the gateway to end"
        assert not (home / "sessions" / "quick.pid").exists()
        wait_for_exit(stubborn.pid, 60)  # KILLed after the grace, by the hook's child
    finally:
        stubborn.kill()
        stubborn.wait()
