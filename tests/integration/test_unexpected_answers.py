"""A program that answers in JSON where the gateway should be, but not as a gateway does:
exec ended in a Python traceback (``AttributeError: 'str' object has no attribute 'get'``
reading ``GET /servers``), as did list-servers and search. Another program (a session
gateway gone, its port another's) proves no token and is sent nothing (test_attacks_stop80);
a broken gateway that proves its token but answers oddly: exec says what it was answered
and sends it no script; any fault no code path expected is said in one line (``--json``: one
object), exit 1, the traceback only with ``--debug``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import LocalHTTPServer, toolscript_cli


@pytest.fixture(scope="module")
def impostor() -> object:
    other = LocalHTTPServer(b'{"hash": "5", "name": "x"}', token="token")
    yield other
    other.close()


def test_exec_says_the_answer_is_no_gateway_s_and_sends_no_script(
    impostor: LocalHTTPServer, tmp_path: Path
) -> None:
    env = {"TOOLSCRIPT_GATEWAY_URL": f"http://127.0.0.1:{impostor.port}/token"}
    done = toolscript_cli("exec", "return 1", cwd=tmp_path, env=env)
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr, done.stderr
    assert "as its module's hash" in done.stderr, done.stderr
    assert all(not path.startswith("/token/runs") for path in impostor.seen), impostor.seen


@pytest.mark.parametrize("command", [["list-servers"], ["search", "issues"]])
def test_an_unexpected_fault_is_one_line_and_json_with_json(
    impostor: LocalHTTPServer, tmp_path: Path, command: list[str]
) -> None:
    env = {"TOOLSCRIPT_GATEWAY_URL": f"http://127.0.0.1:{impostor.port}/token"}
    done = toolscript_cli(*command, cwd=tmp_path, env=env)
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("toolscript: error: "), done.stderr
    assert "--debug" in done.stderr, done.stderr
    answered = toolscript_cli(*command, "--json", cwd=tmp_path, env=env)
    assert answered.returncode == 1, answered
    assert json.loads(answered.stdout)["error"] == "internal_error", answered.stdout
    debugged = toolscript_cli("--debug", *command, cwd=tmp_path, env=env)
    assert "Traceback" in debugged.stderr, debugged.stderr
