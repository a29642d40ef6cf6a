"""Mend 16's leftovers where the logic is pure: `help` given an option; a tool file's call
that ends its process, found in its source (`config check` names it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from toolscript.cli.entry import main


def _main(monkeypatch: pytest.MonkeyPatch, *arguments: str) -> int:
    from toolscript.cli import output

    monkeypatch.setattr(output, "json_printed", False)  # (a process prints once)
    monkeypatch.setattr(sys, "argv", ["toolscript", *arguments])
    try:
        main()
    except SystemExit as exited:
        return exited.code if isinstance(exited.code, int) else 0
    return 0


@pytest.mark.parametrize("option", ["--json", "-x"])
def test_help_given_an_option_is_a_usage_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    """`toolscript help --json` was click's "No such option: --json (Possible options:
    --version)" with a hint to run `--help`: help is text; it takes command names."""
    assert _main(monkeypatch, "help", option) == 2
    shown = capsys.readouterr()
    assert f"`toolscript help` takes command names, not options ({option})" in shown.err
    assert "Possible options" not in shown.err + shown.out
    if option == "--json":  # as every command's error with --json: one object on stdout
        assert json.loads(shown.out)["error"] == "usage_error"
    else:
        assert shown.out == ""


def test_help_of_a_command_still_shows_its_help(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(monkeypatch, "help", "exec") == 0
    assert "Usage: toolscript exec" in capsys.readouterr().out


ENDS = {
    "import os\n\ndef stop() -> None:\n    os._exit(3)\n": [(4, "os._exit()")],
    "from os import _exit as bye\nbye(0)\n": [(2, "os._exit()")],
    "import os as o\no.abort()\n": [(2, "os.abort()")],
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n": [
        (2, "os.kill() of its own process")
    ],
    "from os import kill, getpid\nkill(getpid(), 9)\n": [(2, "os.kill() of its own process")],
    "import os\nos.kill(0, 15)\n": [(2, "os.kill() of its own process")],
}
ENDS_NOT = [
    "import sys\nsys.exit(1)\n",  # SystemExit: an exception, caught
    "import os\nos.kill(12345, 9)\nos.getpid()\n",
    "import os\ntext = 'os._exit(1)'\n",
    "def _exit() -> None: ...\n_exit()\n",  # not os's
    "def broken(:\n",
]


@pytest.mark.parametrize("source", list(ENDS))
def test_a_tool_files_call_that_ends_its_process_is_found(source: str) -> None:
    from toolscript.upstream.local import process_enders

    assert process_enders(source) == ENDS[source]


@pytest.mark.parametrize("source", ENDS_NOT)
def test_what_does_not_end_the_process_is_not_found(source: str) -> None:
    from toolscript.upstream.local import process_enders

    assert process_enders(source) == []


def test_config_check_warns_of_an_internal_tool_file_that_ends_the_gateway(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`os._exit` in an internal tool file ended the gateway, which nothing can catch:
    `config check` names the file and line (a PEP 723 file runs in a worker: not named)."""
    tools = project / "tools"
    tools.mkdir()
    (tools / "ender.py").write_text("import os\n\ndef stop() -> None:\n    os._exit(3)\n")
    header = "# /// script\n# dependencies = []\n# ///\n"
    (tools / "apart.py").write_text(header + "import os\n\ndef stop() -> None:\n    os._exit(3)\n")
    (project / ".toolscript.json").write_text(json.dumps({"localTools": {"dir": "tools"}}))
    assert _main(monkeypatch, "config", "check") == 0
    err = capsys.readouterr().err
    assert f"warning: {tools / 'ender.py'}:4: calls os._exit(), which ends the gateway" in err
    assert "PEP 723 header" in err
    assert "apart.py" not in err
    assert _main(monkeypatch, "config", "check", "--json") == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert [w.split(": calls")[0] for w in warnings] == [f"{tools / 'ender.py'}:4"]


def test_a_run_log_of_a_newer_schema_says_so_and_what_to_do(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Back on an older toolscript, the run log a newer one wrote: "was written by a newer
    toolscript (schema 6)", and only "upgrade" to do. It names the run log, both schemas,
    and the way to keep the older toolscript (the log moved aside), never a traceback."""
    import sqlite3

    from toolscript.plumbing.paths import project_state_dir
    from toolscript.store.runlog import SCHEMA_VERSION, RunLog, runlog_path

    (project / ".toolscript.json").write_text(json.dumps({"mcpServers": {}}))
    path = runlog_path(project_state_dir(project))
    RunLog(path).recent()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    assert _main(monkeypatch, "runs") == 1
    err = capsys.readouterr().err
    assert f"the run log {path} is from a newer toolscript" in err
    assert f"(its schema {SCHEMA_VERSION + 1}; toolscript " in err
    assert f"reads schemas up to {SCHEMA_VERSION})" in err
    assert f"`mv {path} {path}.schema{SCHEMA_VERSION + 1}`" in err
    assert "Traceback" not in err
    assert _main(monkeypatch, "runs", "--json") == 1
    assert json.loads(capsys.readouterr().out)["error"] == "run_log_unavailable"


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("/servers/docs/prompts/get", "the arguments of a prompt get refused"),
        ("/servers/docs/resources/read", "the parameters of a resource read refused"),
        ("/runs/r1/prompt", "the contents of an answer to the run's prompt refused"),
    ],
)
def test_a_refused_prompt_get_says_what_was_refused(path: str, refused: str) -> None:
    """A prompt get past the run's budget of JSON values was refused as "the arguments of
    the tool calls under way hold more than ..." while it was no tool call."""
    import types

    import anyio

    from toolscript.gateway.app import ToolCallFastPath
    from toolscript.gateway.connections import BodyBudget
    from toolscript.gateway.guard import RUN_SCOPE_KEY

    gateway = types.SimpleNamespace(call_values=BodyBudget(100, 1000))
    assert gateway.call_values.take("r1", 95)  # a call of the run under way
    body = b'{"name": "p", "arguments": {"x": [' + b"1," * 9 + b"1]}}"
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def never(*_: object) -> None:
        raise AssertionError("refused before the app")

    scope = {"type": "http", "method": "POST", "path": path, "headers": [], RUN_SCOPE_KEY: "r1"}
    anyio.run(ToolCallFastPath(never, gateway), scope, receive, send)
    assert sent[0]["status"] == 413
    message = json.loads(b"".join(m.get("body", b"") for m in sent[1:]))["message"]
    assert message.startswith(refused), message
    assert "with the tool calls, prompt gets and resource reads under way" in message
    assert "more than 100 JSON values for one run at once" in message
