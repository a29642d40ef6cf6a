"""Approvals are a person's: the attacks of the security run (issue 42, findings 2 and 10)
made for real, with the plugin's SessionStart hook, a gateway, exec in Deno and the MCP face.

The agent's environment gets a URL whose token runs scripts and reads tools but answers no
approval prompt; the gateway's own token stays in the user's 0600 cache files, where an
interactive exec on a terminal finds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import ROOT, answer_on_a_terminal, clean_env, records_server, toolscript_cli
from toolscript.plumbing.processes import stop_process

PLUGIN = ROOT / "plugin"

WRITE_THEN_DELETE = """import { tools } from "toolscript";
console.log(JSON.stringify(await tools.records.writeRecord({ key: "KEY", text: "hello" })));
console.log(JSON.stringify(await tools.records.deleteRecord({ key: "KEY" })));
console.log("finished");
"""

# What the attack's script did with the URL the agent's shell pasted into it: register an
# interactive run, call a destructive tool as that run, read the prompt, answer "always".
SELF_APPROVAL = """const url = "GATEWAY_URL";
const post = (path: string, body: unknown) =>
  fetch(url + path, { method: "POST", body: JSON.stringify(body) });
const seen: Record<string, number> = {};
const interactive = await post("/runs", { interactive: true });
seen.interactive = interactive.status;
let run = interactive.ok ? await interactive.json() : null;
if (run === null) {
  await interactive.body?.cancel();
  const plain = await post("/runs", {});
  seen.plain = plain.status;
  run = await plain.json();
}
const base = url.slice(0, url.lastIndexOf("/"));
const call = fetch(`${base}/${run.token}/tools/records__delete_record`, {
  method: "POST", body: JSON.stringify({ key: "a" }),
});
const prompt = await fetch(`${url}/runs/${run.id}/prompt?wait=10`);
seen.read_prompt = prompt.status;
const found = prompt.ok ? await prompt.json() : null;
if (found === null) await prompt.body?.cancel();
const answer = await post(`/runs/${run.id}/prompt`, { seq: found?.prompt?.seq ?? 1, answer: "always" });
seen.answer = answer.status;
await answer.body?.cancel();
const called = await call;
seen.call = called.status;
await called.body?.cancel();
console.log(JSON.stringify(seen));
"""


def journal_tools(journal: Path) -> list[str]:
    if not journal.exists():
        return []
    return [json.loads(line)["tool"] for line in journal.read_text().splitlines()]


class Session:
    """A Claude Code session of the plugin: its SessionStart hook ran in ``project``."""

    def __init__(self, tmp_path: Path) -> None:
        self.project, self.home = tmp_path / "project", tmp_path / "home"
        self.env_file, self.journal = tmp_path / "env.sh", tmp_path / "journal.jsonl"
        self.project.mkdir()
        entry = records_server(env={"RECORDS_JOURNAL": str(self.journal)})
        config = {"mcpServers": {"records": entry}, "search": {"semantic": False}}
        (self.project / ".toolscript.json").write_text(json.dumps(config))
        self.env = clean_env(
            CLAUDE_PLUGIN_ROOT=str(PLUGIN),
            CLAUDE_PROJECT_DIR=str(self.project),
            CLAUDE_ENV_FILE=str(self.env_file),
            TOOLSCRIPT_HOME=str(self.home),
            TOOLSCRIPT_CONFIG_HOME=str(self.home / "config"),
        )
        self.env["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
        trusted = toolscript_cli("trust", cwd=self.project, env=self._own())
        assert trusted.returncode == 0, trusted.stderr
        started = self._hook("SessionStart")
        assert started.returncode == 0 and "gateway ready" in started.stdout, started.stdout
        exported = self.env_file.read_text().strip()
        assert exported.startswith("export TOOLSCRIPT_GATEWAY_URL="), exported
        self.agent_url = exported.split("=", 1)[1]
        self.owner_url = (self.home / "sessions" / "s1.url").read_text().strip()

    def _own(self, **extra: str) -> dict[str, str]:
        keep = ("TOOLSCRIPT_HOME", "TOOLSCRIPT_CONFIG_HOME")
        return {name: self.env[name] for name in keep} | extra

    def _hook(self, name: str) -> subprocess.CompletedProcess[str]:
        command = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"][name][0][
            "hooks"
        ][0]["command"]
        payload = {"session_id": "s1", "cwd": str(self.project), "hook_event_name": name}
        return subprocess.run(
            ["bash", "-c", command],
            input=json.dumps(payload),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def agent(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A command of the agent's shell: the session's environment, no terminal."""
        return toolscript_cli(
            *args, cwd=self.project, env=self._own(TOOLSCRIPT_GATEWAY_URL=self.agent_url)
        )

    def end(self) -> None:
        self._hook("SessionEnd")


@pytest.fixture
def session(tmp_path: Path) -> Any:
    started = Session(tmp_path)
    try:
        yield started
    finally:
        started.end()


def test_a_script_given_the_agents_url_cannot_approve_its_own_call(session: Session) -> None:
    """Finding 2: the URL of the agent's environment, pasted into a script, registered an
    interactive run, read its prompt and answered "always"; the tool ran, and was approved
    for good, with no person asked."""
    (session.project / "attack.ts").write_text(
        SELF_APPROVAL.replace("GATEWAY_URL", session.agent_url)
    )
    done = session.agent("exec", "--no-check", "attack.ts")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {
        "interactive": 403,
        "plain": 200,
        "read_prompt": 403,
        "answer": 403,
        "call": 403,
    }
    assert "delete_record" not in journal_tools(session.journal)
    approvals = session.agent("approve", "--list", "--json")
    assert approvals.returncode == 0
    # no approval on record: its call still waits for a person (`approve --list` names it)
    listed = json.loads(approvals.stdout)
    assert [(a["scope"], a["tool"]) for a in listed] == [("waiting", "records__delete_record")]
    assert session.owner_url.rsplit("/", 1)[1] not in session.env_file.read_text()
    # The gateway's own token still answers prompts (what a person's terminal uses).
    owned = httpx.get(session.owner_url + "/runs/nope/prompt")
    assert owned.status_code == 404 and owned.json()["error"] == "not_found"


def test_the_agents_url_runs_stops_and_resumes_and_a_terminal_still_asks(
    session: Session,
) -> None:
    (session.project / "job.ts").write_text(WRITE_THEN_DELETE.replace("KEY", "a"))
    stopped = session.agent("exec", "job.ts")
    assert stopped.returncode == 120, stopped.stderr
    marker = "toolscript approve "
    run_id = stopped.stderr[stopped.stderr.index(marker) + len(marker) :].split("`", 1)[0]
    approved = toolscript_cli("approve", run_id, cwd=session.project, env=session._own())
    assert approved.returncode == 0, approved.stderr
    resumed = session.agent("exec", "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert "finished" in resumed.stdout
    assert journal_tools(session.journal) == ["write_record", "delete_record"]

    # A person's terminal with the agent's URL in its environment: exec finds the
    # gateway's own token in the session's file and asks there.
    (session.project / "job.ts").write_text(WRITE_THEN_DELETE.replace("KEY", "b"))
    code, seen, out = answer_on_a_terminal(
        "exec",
        "job.ts",
        cwd=session.project,
        env=clean_env(**session._own(TOOLSCRIPT_GATEWAY_URL=session.agent_url)),
        asked=b"allow it?",
        answer=b"y\n",
    )
    assert b"records.delete_record" in seen, seen
    assert code == 0, seen
    assert b"finished" in out
    assert journal_tools(session.journal)[-2:] == ["write_record", "delete_record"]


def test_a_planted_project_mcp_token_is_not_the_faces_secret(tmp_path: Path) -> None:
    """Finding 10: `toolscript mcp --http` took its secret from a world-readable
    `.toolscript/mcp-token` a repository planted; whoever knew it could run `execute`."""
    project, home = tmp_path / "project", tmp_path / "home"
    (project / ".toolscript").mkdir(parents=True)
    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    planted = "planted-by-a-repository-0123456789abcdefghijkl"
    (project / ".toolscript" / "mcp-token").write_text(planted + "\n")
    (project / ".toolscript" / "mcp-token").chmod(0o644)
    face = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "mcp", "--http", "--config", ".toolscript.json"],
        cwd=project,
        env=clean_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_LOG_LEVEL="WARNING"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert face.stdout is not None
        url = face.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        assert planted not in url
        base = url.split("/", 3)
        guessed = f"{base[0]}//{base[2]}/{planted}/mcp"
        assert httpx.post(guessed, json={}).status_code == 401
    finally:
        stop_process(face, 30)
    assert face.stderr is not None
    assert "ignoring" in face.stderr.read()
