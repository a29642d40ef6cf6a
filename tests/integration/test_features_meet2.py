"""Where features meet, second pass (the first is test_features_meet.py): one real gateway
with the records server (its journal counts what reached it), the fixture server holding a
`${VAR}` secret in its env, and a local tool file with a declared secret and an `ask` rule,
and the real Deno: a server that sends its secret back (whole, split, base64) to a
background run that stops for approval and is resumed, and what every record of it shows; a
local tool that needs approval with the secret in its arguments (or the one it sent back),
resumed; a background run
held to --max-calls, resumed; a tool file whose function is renamed while the gateway runs,
for search and get-types; a standalone `doit` during the gateway's build."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    DODO,
    GatewayProcess,
    clean_env,
    fixture_server,
    gateway_cli,
    journal_of,
    records_server,
    run_id_of,
    wait_until,
)

SECRET = "sk-live-meet2-0123456789abcdef"
VAULT_SECRET = "vault-meet2-fedcba9876543210"


def forms_of(secret: str) -> list[str]:
    """The spellings a secret may be seen in: whole, base64, and runs of 8 of its characters."""
    return [
        secret,
        base64.b64encode(secret.encode()).decode(),
        secret[:10],
        secret[10:20],
        secret[-10:],
    ]


def assert_masked(text: str, *secrets: str) -> None:
    for secret in secrets:
        for form in forms_of(secret):
            assert form not in text, (form, text[:3000])


def assert_whole_masked(text: str, secret: str) -> None:
    """Where a call's arguments are shown as the script wrote them (the run log, an approval):
    a whole secret in any spelling is masked, a run of one is the script's own text (masked,
    it told a script which of its guesses were runs of a token: stop 72)."""
    for form in (secret, base64.b64encode(secret.encode()).decode()):
        assert form not in text, (form, text[:3000])


VAULT = '''def rotate(name: str, key: str, context=None) -> dict:
    """Rotate a named key (writes the key file)."""
    with open(context.config["ledger"], "a", encoding="utf-8") as ledger:
        ledger.write(name + "\\n")
    return {"rotated": name, "matches": key == context.secrets["VAULT_KEY"]}


def peek(name: str) -> str:
    """Peek at a key's name."""
    return name


def reveal(context=None) -> str:
    """The key itself, as a careless tool sends it back."""
    return context.secrets["VAULT_KEY"]
'''

NOTES = '''def jot_down(text: str) -> str:
    """Write a memo about a rhinoceros onto the corkboard."""
    return text
'''

NOTES_RENAMED = '''def pin_up(text: str) -> str:
    """Write a memo about a rhinoceros onto the corkboard."""
    return text
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayProcess, Path]]:
    directory = tmp_path_factory.mktemp("features-meet2")
    journal = directory / "journal.jsonl"
    (directory / "tools").mkdir()
    (directory / "tools" / "vault.py").write_text(VAULT)
    (directory / "tools" / "notes.py").write_text(NOTES)
    config = {
        "mcpServers": {
            "records": records_server(env={"RECORDS_JOURNAL": str(journal)}),
            "fx": fixture_server(env={"FX_API_KEY": "${MEET2_API_KEY}"}),
        },
        "localTools": {
            "dir": "tools",
            "files": {
                "vault": {
                    "config": {"ledger": str(directory / "ledger.txt")},
                    "secrets": {"VAULT_KEY": "${MEET2_VAULT_KEY}"},
                    "policy": {"rotate": "ask"},
                }
            },
        },
        "search": {"semantic": False},
    }
    gateway = GatewayProcess(
        config,
        directory,
        env={"MEET2_API_KEY": SECRET, "MEET2_VAULT_KEY": VAULT_SECRET},
    )
    try:
        yield gateway, journal
    finally:
        gateway.stop()


ECHOED = """import { tools } from "toolscript";
const key = String(await tools.fx.env({ name: "FX_API_KEY" }));
console.log("got a key of", key.length);
const split = key.slice(0, 12) + " / " + key.slice(12);
await tools.records.writeRecord({ key: "echoed", text: split });
const dropped: any = await tools.records.dropTable({ name: btoa(key), password: split });
return { dropped: dropped.dropped.length };
"""


def test_a_secret_a_server_sends_back_stays_out_of_a_background_runs_records_and_resume(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Masking x background runs x approvals x the run log (`runs`, `runs show`) x resume x get-types' recent calls: a server sends a `${VAR}` secret back, the
    script passes it on whole, split and base64'd to a call that needs approval; the stop
    and what the resumed run prints show `***`, the records of both runs mask it whole and
    base64'd (its pieces are the script's own text, shown as written), and the server gets
    the values the script gave."""
    gateway, journal = project
    before = len(journal_of(journal))
    started = gateway_cli(gateway, "exec", "--background", "--json", ECHOED)
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    waited = gateway_cli(gateway, "runs", "wait", run_id, "--timeout", "60", "--json")
    assert waited.returncode == 120, (waited.stdout, waited.stderr)
    assert "records.drop_table needs approval" in waited.stderr
    assert_masked(waited.stdout + waited.stderr, SECRET)
    assert "***" in waited.stderr
    assert json.loads(waited.stdout)["stdout"] == f"got a key of {len(SECRET)}\n"
    assert [e["tool"] for e in journal_of(journal)[before:]] == ["write_record"]

    waiting = gateway_cli(gateway, "runs", "show", run_id)
    assert waiting.returncode == 0, waiting.stderr
    assert "awaiting_approval" in waiting.stdout and "drop_table" in waiting.stdout
    assert_whole_masked(waiting.stdout + waiting.stderr, SECRET)
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    assert_whole_masked(approved.stdout + approved.stderr, SECRET)

    resumed = gateway_cli(gateway, "exec", "--resume", run_id)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert_masked(resumed.stdout + resumed.stderr, SECRET)
    # the replayed answer is the key the server sent, not the log's `***` (which diverged)
    assert resumed.stdout == f'got a key of {len(SECRET)}\n{{"dropped":40}}\n', resumed.stdout
    calls = journal_of(journal)[before:]
    assert [e["tool"] for e in calls] == ["write_record", "drop_table"]
    split = SECRET[:12] + " / " + SECRET[12:]
    assert calls[1]["arguments"] == {
        "name": base64.b64encode(SECRET.encode()).decode(),
        "password": split,
    }
    assert calls[0]["arguments"]["text"] == split

    history = gateway_cli(gateway, "runs", "--json")
    assert history.returncode == 0, history.stderr
    assert_whole_masked(history.stdout, SECRET)
    for shown_run in (run_id, json.loads(history.stdout)[0]["id"]):
        shown = gateway_cli(gateway, "runs", "show", shown_run, "--json")
        assert shown.returncode == 0, shown.stderr
        assert "drop_table" in shown.stdout or "dropTable" in shown.stdout
        assert_whole_masked(shown.stdout + shown.stderr, SECRET)
    # get-types' examples show a call's arguments as the script sent them (what the script
    # passed on it could print: masking them by content was a guessing oracle, stop 70), so
    # only the result the server sent is checked there
    for tool in (("fx", "env"),):
        types = gateway_cli(gateway, "get-types", *tool)
        assert types.returncode == 0, types.stderr
        assert_masked(types.stdout, SECRET)
    assert_masked(gateway.log, SECRET)


ROTATE = f"""import {{ tools }} from "toolscript";
const name = await tools.vault.peek({{ name: "main" }});
return await tools.vault.rotate({{ name, key: "{VAULT_SECRET}" }});
"""


def test_a_local_tool_that_asks_with_a_secret_in_its_arguments_is_resumed_once(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Python tool files x a file's `ask` rule x masking x resume: the stop names the local
    tool with its declared secret as `***`, the tool has not run; approved and resumed, it
    runs once with the value the script gave, and the run log shows `***`."""
    gateway, _journal = project
    ledger = gateway.directory / "ledger.txt"
    # a script holding a configured secret is not kept by the log: the file is given again
    script = gateway.directory / "rotate.ts"
    script.write_text(ROTATE)
    stopped = gateway_cli(gateway, "exec", str(script))
    assert stopped.returncode == 120, (stopped.stdout, stopped.stderr)
    assert "vault.rotate needs approval" in stopped.stderr, stopped.stderr
    assert "***" in stopped.stderr
    assert_masked(stopped.stdout + stopped.stderr, VAULT_SECRET)
    assert not ledger.exists()
    run_id = run_id_of(stopped.stderr)
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    kept_none = gateway_cli(gateway, "exec", "--resume", run_id)
    assert kept_none.returncode != 0
    assert "give the script too" in kept_none.stderr, kept_none.stderr
    resumed = gateway_cli(gateway, "exec", "--resume", run_id, str(script))
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert json.loads(resumed.stdout) == {"rotated": "main", "matches": True}
    assert ledger.read_text() == "main\n"
    for shown_run in (run_id, json.loads(gateway_cli(gateway, "runs", "--json").stdout)[0]["id"]):
        shown = gateway_cli(gateway, "runs", "show", shown_run, "--json")
        assert shown.returncode == 0, shown.stderr
        assert "rotate" in shown.stdout
        assert_masked(shown.stdout, VAULT_SECRET)
    # The tool sends its secret back and the script passes it on: the log keeps this
    # script (it holds no secret), the resume replays the key whole (the call's `matches`),
    # and get-types' recent call shows `***`.
    second = gateway_cli(gateway, "exec", REVEALED)
    assert second.returncode == 120, (second.stdout, second.stderr)
    assert_masked(second.stdout + second.stderr, VAULT_SECRET)
    second_id = run_id_of(second.stderr)
    assert gateway_cli(gateway, "approve", second_id).returncode == 0
    resumed = gateway_cli(gateway, "exec", "--resume", second_id)
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert json.loads(resumed.stdout) == {"rotated": "second", "matches": True}
    assert ledger.read_text() == "main\nsecond\n"
    types = gateway_cli(gateway, "get-types", "vault", "reveal")
    assert types.returncode == 0, types.stderr
    assert "***" in types.stdout
    assert_masked(types.stdout, VAULT_SECRET)
    assert_masked(gateway.log, VAULT_SECRET)


REVEALED = """import { tools } from "toolscript";
const key = await tools.vault.reveal({});
return await tools.vault.rotate({ name: "second", key });
"""


COUNTED = """import { tools } from "toolscript";
await tools.records.counter({ step: 1 });
await tools.records.counter({ step: 2 });
await tools.records.deleteRecord({ key: "counted" });
await tools.records.counter({ step: 3 });
return "all four";
"""


def test_a_background_run_held_to_max_calls_stops_for_approval_and_its_resume_counts_on(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Limits (--max-calls) x background runs x approval x resume: the calls a resume
    answers from the log count toward its --max-calls, so the run stops at the same call it
    would have without the stop, and no call is made twice."""
    gateway, journal = project
    before = len(journal_of(journal))
    started = gateway_cli(gateway, "exec", "--background", "--json", "--max-calls", "3", COUNTED)
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]
    waited = gateway_cli(gateway, "runs", "wait", run_id, "--timeout", "60")
    assert waited.returncode == 120, (waited.stdout, waited.stderr)
    assert "records.delete_record needs approval" in waited.stderr
    approved = gateway_cli(gateway, "approve", run_id)
    assert approved.returncode == 0, approved.stderr
    resumed = gateway_cli(gateway, "exec", "--resume", run_id, "--max-calls", "3")
    assert resumed.returncode == 122, (resumed.stdout, resumed.stderr)
    assert "more than 3 tool calls" in resumed.stderr, resumed.stderr
    made = [(e["tool"], e["arguments"]) for e in journal_of(journal)[before:]]
    assert made == [
        ("counter", {"step": 1}),
        ("counter", {"step": 2}),
        ("delete_record", {"key": "counted"}),
    ]


def search_hits(gateway: GatewayProcess, query: str) -> list[tuple[str, str]]:
    found = gateway_cli(gateway, "search", query, "--json")
    assert found.returncode == 0, found.stderr
    return [(hit["server"], hit["tool"]) for hit in json.loads(found.stdout)["hits"]]


def test_a_tool_files_function_renamed_while_the_gateway_runs_leaves_no_stale_hit(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Python tool files x live reload x search x get-types: a function renamed in its file
    is found by its new name only, get-types of the old name says it is gone and what the
    file offers, and exec calls the new one."""
    gateway, _journal = project
    query = "memo about a rhinoceros on the corkboard"
    assert ("notes", "jot_down") in search_hits(gateway, query)
    (gateway.directory / "tools" / "notes.py").write_text(NOTES_RENAMED)
    wait_until(
        lambda: gateway.client.get("runtime/tools.ts").text,
        lambda module: "pinUp(" in module and "jotDown(" not in module,
        what="the renamed function in the module",
    )
    wait_until(
        lambda: search_hits(gateway, query),
        lambda hits: ("notes", "pin_up") in hits,
        what="the renamed function in search",
    )
    hits = search_hits(gateway, query)
    assert ("notes", "jot_down") not in hits, hits
    gone = gateway_cli(gateway, "get-types", "notes", "jot_down")
    assert gone.returncode != 0
    assert "tool not found: notes.jot_down" in gone.stderr, gone.stderr
    assert "server 'notes' has 1 tool (notes.pin_up)" in gone.stderr, gone.stderr
    types = gateway_cli(gateway, "get-types", "notes", "pin_up")
    assert types.returncode == 0, types.stderr
    assert "pinUp" in types.stdout
    called = gateway_cli(
        gateway,
        "exec",
        'import { tools } from "toolscript"; return await tools.notes.pinUp({ text: "hi" });',
    )
    assert called.returncode == 0, called.stderr
    assert called.stdout.strip() == '"hi"'


def test_doit_run_while_the_gateway_builds_waits_and_leaves_the_artifacts_whole(
    project: tuple[GatewayProcess, Path],
) -> None:
    """Standalone `doit` x the gateway's build (two writers on `.toolscript/`): doit waits
    for a build under way (here held by the test, as the gateway's holds it) and says so; the
    gateway, which learned a tool meanwhile, waits too; after, the artifact on disk and the
    served module both hold the tool and a second `doit` finds all up to date. (doit read
    its database at start and wrote it whole at its end: run during a gateway build, it lost
    the gateway's records and wrote the server's fresh list over the learned one.)"""
    from toolscript.pipeline.buildlock import hold_build_lock

    gateway, _journal = project
    cache = gateway.directory / ".toolscript"
    (gateway.directory / "dodo.py").write_text(DODO)
    doit_env = clean_env(
        TOOLSCRIPT_CONFIG=str(gateway.config_path),
        MEET2_API_KEY=SECRET,
        MEET2_VAULT_KEY=VAULT_SECRET,
    )
    held = hold_build_lock(cache, lambda: None, wait=60)
    assert held is not None
    try:
        doit = subprocess.Popen(
            [sys.executable, "-m", "doit"],
            cwd=gateway.directory,
            env=doit_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert doit.stderr is not None
        said = doit.stderr.readline()
        assert "waiting for the build of" in said, (said, doit.communicate(timeout=60))
        assert doit.poll() is None
        assert gateway.call("fx__add_tool", {"name": "learned_meanwhile"}).status_code == 200
    finally:
        os.close(held)
    out, err = doit.communicate(timeout=120)
    assert doit.returncode == 0, out + err
    artifact = cache / "tools.ts"
    wait_until(
        lambda: (gateway.client.get("runtime/tools.ts").text, artifact.read_text()),
        lambda modules: all("learnedMeanwhile(" in module for module in modules),
        what="the learned tool in the served module and its artifact",
    )
    again = subprocess.run(
        [sys.executable, "-m", "doit"],
        cwd=gateway.directory,
        env=doit_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "learnedMeanwhile(" in artifact.read_text()
    assert "learnedMeanwhile(" in gateway.client.get("runtime/tools.ts").text
