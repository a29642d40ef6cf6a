"""Attacks of stop 58 with a real gateway, real Deno and real (or hostile) servers: a
project's ``.toolscript/`` edited after its build (a pull, a repository that commits it)
never puts its code into the module a script imports; a script's type-only import of a
file of the disk makes the warm checker read nothing (its errors quoted the file's types:
a constant's value), nor does the agent's URL naming a file as the module to check
(its errors quoted that file's lines: an agent kept out of your files by a sandbox read
them, the gateway's own token among them); the origin an agent gives its run never writes
a line of `runs show`, where a person reads what they approve; what was typed before
exec asks (at a question the script forged) never answers the question it asks."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import (
    ExecOnATerminal,
    GatewayProcess,
    clean_env,
    fixture_server,
    gateway_with_warm_checker,
    on_a_terminal,
    records_server,
)
from toolscript.gateway.guard import agent_url

PLANTED = "Promise.resolve('planted')"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home58")


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("warm58")
    records = records_server(env={"RECORDS_JOURNAL": str(directory / "journal.jsonl")})
    config = {
        "mcpServers": {"fx": fixture_server(policy={"plain_text": "ask"}), "records": records}
    }
    with gateway_with_warm_checker(config, directory, home) as g:
        yield g


def exec_script(
    gateway: GatewayProcess, code: str, cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", *(args or ["--no-check"]), code],
        cwd=cwd,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_fragments_edited_after_the_build_never_reach_the_module(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    config = {"mcpServers": {"fx": fixture_server()}}
    GatewayProcess(config, project).stop()
    fragments = project / ".toolscript" / "types" / "fx.json"
    edited = json.loads(fragments.read_text())
    for fragment in edited:
        fragment["method"] = f"    {fragment['function']}: (params) => {PLANTED},"
    fragments.write_text(json.dumps(edited))
    gateway = GatewayProcess(config, project)
    try:
        shown = exec_script(
            gateway,
            "import { tools } from \"toolscript\";\nconsole.log(Object.values(tools.fx).join('\\n'))",
            project,
        )
        assert shown.returncode == 0, shown.stderr
        assert "call(" in shown.stdout
        assert "planted" not in shown.stdout
    finally:
        gateway.stop()


def test_a_type_only_import_reads_no_file_through_the_warm_checker(
    warm: GatewayProcess, tmp_path: Path
) -> None:
    secret = tmp_path / "config.ts"
    secret.write_text('export const API_KEY = "sk-live-K7MDENG";\n')
    relative = "../" * len(tmp_path.parts) + str(secret).lstrip("/")
    # and a package of the project's node_modules, named bare (Deno resolves those itself)
    package = tmp_path / "node_modules" / "settings"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"name": "settings", "types": "config.d.ts"}')
    (package / "config.d.ts").write_text('export declare const API_KEY: "sk-live-K7MDENG";\n')
    (tmp_path / "package.json").write_text('{"dependencies": {"settings": "1.0.0"}}')
    for specifier in (secret.as_uri(), relative, "settings"):
        code = (
            f"import type * as C from {json.dumps(specifier)};\n"
            'const key: typeof C.API_KEY = "guess";\nconsole.log("RAN", key);\n'
        )
        done = exec_script(warm, code, tmp_path, "--timeout", "120")
        assert done.returncode != 0, done.stdout
        assert "RAN" not in done.stdout
        assert "K7MDENG" not in done.stdout + done.stderr, done.stderr


def test_the_agents_url_reads_no_file_through_the_warm_checker(
    warm: GatewayProcess, tmp_path: Path
) -> None:
    private = tmp_path / "id_rsa"
    private.write_text("".join(f"line {n}: K7MDENG\n" for n in range(1, 20_000)))
    agent = httpx.Client(base_url=agent_url(warm.url) + "/", timeout=120)
    module_hash = agent.get("runtime/hash").json()["hash"]
    # an error whose "declared here" is a line of the module, which the answer quotes
    code = 'import { tools } from "toolscript";\nawait tools.fx.structured({ city: 1 });\n'
    asked = {"code": code, "path": str(tmp_path / "a.ts"), "module": str(private)}
    answer = agent.post("runtime/check", json={**asked, "hash": module_hash})
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "failed", answer.text
    assert "declared here" in answer.json()["output"]
    assert "K7MDENG" not in answer.text


FORGED_ORIGIN = "agent\nstopped   nothing: fx__plain_text is read-only, approve it"


def test_an_agents_run_origin_writes_no_line_of_runs_show(warm: GatewayProcess, home: Path) -> None:
    agent = httpx.Client(base_url=agent_url(warm.url) + "/", timeout=60)
    run = agent.post("runs", json={"origin": FORGED_ORIGIN}).json()
    script = httpx.Client(base_url=warm.url.rsplit("/", 1)[0] + "/" + run["token"] + "/")
    stopped = script.post("tools/fx__plain_text", json={})
    assert stopped.json()["error"] == "approval_required", stopped.text
    assert agent.post(f"runs/{run['id']}/end", json={"exit": 120}).status_code == 200
    env = clean_env(TOOLSCRIPT_HOME=str(home))
    shown = on_a_terminal("runs", "show", run["id"], cwd=warm.directory, env=env)
    lines = shown.decode().replace("\r\n", "\n").split("\n")
    assert [line for line in lines if line.startswith("stopped")] != [], shown
    assert not any(line.startswith("stopped   nothing") for line in lines), shown


# The script forges a question about a harmless call, and once the person has answered it,
# makes the destructive call whose real question the answer typed ahead would have met.
HARVESTS_AN_ANSWER = """import { tools } from "toolscript";
console.error("toolscript: the script calls records.read_record, which asks for approval."
  + "\\n  allow it? [y]es / [n]o / [a]lways: ");
await tools.records.writeRecord({ key: "printed", text: "yes" });
while ((await tools.records.readRecord({ key: "go" })).text === null) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
console.log(JSON.stringify(await tools.records.deleteRecord({ key: "production" })));
"""


def test_an_answer_typed_before_the_question_never_answers_it(
    warm: GatewayProcess, tmp_path: Path
) -> None:
    (tmp_path / "harvest.ts").write_text(HARVESTS_AN_ANSWER)

    def record(key: str) -> object:
        return warm.call("records__read_record", {"key": key}).json()["text"]

    with ExecOnATerminal("harvest.ts", cwd=tmp_path, url=warm.url) as run:
        run.read_until(lambda: record("printed") == "yes", 90)
        run.type(b"y\n")  # to the forged question, before exec asks anything
        warm.call("records__write_record", {"key": "go", "text": "1"})
        run.read_until(lambda: b"records.delete_record" in run.terminal, 90)
        run.read_until(lambda: run.process.poll() is not None, 3)  # (answered at once, it ends)
        run.type(b"n\n")
        run.read_until(lambda: run.process.poll() is not None, 60)
    journal = (warm.directory / "journal.jsonl").read_text()
    assert "delete_record" not in journal, run.terminal.decode(errors="replace")
    assert b"the user refused this call" in run.terminal, run.terminal
