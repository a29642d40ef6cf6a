"""Edits while a gateway runs: the config file as editors save it, and local tool files.

Every test ends with no process left.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from tests.helpers import SERVERS, GatewayProcess, fixture_server, running_gateway, toolscript_cli

FAULTY = SERVERS / "faulty_server.py"


def faulty(*flags: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAULTY), *flags]}


def text_of(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def wait_for(predicate: Any, gateway: GatewayProcess, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, gateway.log
        time.sleep(0.1)


def config_error(gateway: GatewayProcess) -> Any:
    return gateway.client.get("health").json()["config"]["error"]


def test_an_empty_config_file_keeps_the_servers_and_is_an_error(tmp_path: Path) -> None:
    config = {"mcpServers": {"a": faulty(), "b": faulty()}}
    with running_gateway(config, tmp_path) as gateway:
        pids = {name: text_of(gateway.call(f"{name}__pid")) for name in ("a", "b")}

        # The moment of a save that truncates first, held long enough to be seen.
        gateway.config_path.write_text("")
        wait_for(lambda: config_error(gateway) is not None, gateway)
        assert "the config file is empty" in config_error(gateway)
        assert text_of(gateway.call("a__echo", {"text": "still"})) == "still"
        checked = toolscript_cli("config", "check", cwd=tmp_path)
        assert checked.returncode == 2, checked.stdout
        assert "the config file is empty" in checked.stderr

        # The same servers written back (as json.dump formats them): nothing restarts.
        with gateway.config_path.open("w") as handle:
            json.dump(config, handle, indent=2)
        wait_for(lambda: config_error(gateway) is None, gateway)
        assert {name: text_of(gateway.call(f"{name}__pid")) for name in ("a", "b")} == pids
        assert "removed" not in gateway.log and "added" not in gateway.log, gateway.log
        assert gateway.log.count("the config file is empty") == 1, gateway.log

        # One entry changed: that server alone restarts.
        changed = {"mcpServers": {"a": faulty(), "b": faulty("--garbage")}}
        gateway.config_path.write_text(json.dumps(changed))
        wait_for(lambda: "config: restarted b" in gateway.log, gateway)
        wait_for(lambda: gateway.call("b__pid").status_code == 200, gateway)
        assert text_of(gateway.call("b__pid")) != pids["b"]
        assert text_of(gateway.call("a__pid")) == pids["a"]
        assert gateway.stop() == [], "processes outlived the gateway"


def test_a_call_under_way_when_a_reload_lands_is_masked_as_its_config_masked(
    tmp_path: Path,
) -> None:
    # The error of a call made under one config was masked with the next one's secrets when
    # a reload landed during the call: a token of a server taken out meanwhile came back
    # whole in the error (and the run log, and recent calls). The called server knows the
    # value too, under a name no one would take for a credential, and adds it to its error
    # itself: the script never sent it.
    token = "tok-live-edit-0123456789"
    shared = "shared-word-of-live-edits"
    fx = fixture_server(env={"FX_NOTE": shared})
    key = faulty() | {"env": {"API_TOKEN": token, "API_SECRET": shared}}
    with running_gateway({"mcpServers": {"fx": fx, "key": key}}, tmp_path) as gateway:
        message = f"the upstream echoed {token}"
        answers: list[Any] = []
        call = threading.Thread(
            target=lambda: answers.append(
                gateway.call("fx__fail_when_released", {"message": message, "env": "FX_NOTE"})
            )
        )
        call.start()
        try:
            held = gateway.call("fx__wait_for", {"held": message, "within": 60})
            assert text_of(held) == "yes", gateway.log
            gateway.config_path.write_text(json.dumps({"mcpServers": {"fx": fx}}))
            wait_for(lambda: "config: removed key" in gateway.log, gateway)
        finally:
            assert text_of(gateway.call("fx__release")) == "released 1"
            call.join()
        answer = answers[0]
        assert answer.status_code != 200
        assert "the upstream echoed" in answer.text
        # what the server added is masked as the config the call was made under masked it
        assert shared not in answer.text, answer.text
        assert f"{token} ***" in answer.text, answer.text
        # the token is the caller's own argument, echoed: given back as sent (masking what a
        # script sent told it which guesses were runs of a secret, stop 70); the reload landing
        # mid-call neither fails the call nor loses its error
        assert token in answer.text, answer.text
        assert gateway.stop() == [], "processes outlived the gateway"


def test_a_config_file_written_slowly_is_applied_once_whole(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"a": faulty()}}, tmp_path) as gateway:
        a_pid = text_of(gateway.call("a__pid"))
        text = json.dumps({"mcpServers": {"a": faulty(), "c": faulty()}}, indent=2)
        pieces = 20
        step = len(text) // pieces + 1
        # Truncated, then written a piece at a time for about a second: the gateway sees the
        # file half-written, and must wait for it rather than report it broken.
        with gateway.config_path.open("w") as handle:
            for start in range(0, len(text), step):
                handle.write(text[start : start + step])
                handle.flush()
                time.sleep(0.05)
        wait_for(lambda: "config: added c" in gateway.log, gateway)
        wait_for(lambda: gateway.call("c__pid").status_code == 200, gateway)
        assert text_of(gateway.call("c__echo", {"text": "whole"})) == "whole"
        assert text_of(gateway.call("a__pid")) == a_pid
        assert "still serving the previous configuration" not in gateway.log, gateway.log
        assert config_error(gateway) is None
        assert gateway.stop() == [], "processes outlived the gateway"


def test_a_reload_that_denies_a_tool_takes_it_out_of_the_types_at_once(tmp_path: Path) -> None:
    """An editor's save (a new file renamed over the old) adds a deny rule: the server
    restarts, and the module and get-types leave the tool out before it answers again (here
    it never does: its new entry hangs at `initialize`), not at the rebuild after that."""
    with running_gateway({"mcpServers": {"a": faulty()}}, tmp_path) as gateway:
        assert '"a__echo"' in gateway.client.get("runtime/tools.ts").text
        denying = {"mcpServers": {"a": faulty("--hang-initialize") | {"policy": {"echo": "deny"}}}}
        saved = gateway.config_path.with_name(gateway.config_path.name + ".swp")
        saved.write_text(json.dumps(denying))
        saved.replace(gateway.config_path)
        wait_for(lambda: '"a__echo"' not in gateway.client.get("runtime/tools.ts").text, gateway)
        assert gateway.health()["servers"]["a"]["state"] != "connected"
        assert '"a__pid"' in gateway.client.get("runtime/tools.ts").text
        types = toolscript_cli("get-types", "a", cwd=tmp_path)
        assert "pid(" in types.stdout and "echo(" not in types.stdout, types.stdout
        assert gateway.stop() == [], "processes outlived the gateway"


INTERNAL_V1 = '''def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''

INTERNAL_V2 = (
    INTERNAL_V1
    + '''

def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b
'''
)

EXTERNAL_V1 = '''# /// script
# dependencies = []
# ///
def hello() -> str:
    """Say which version answers."""
    return "v1"


def slow() -> str:
    """Removed in the next version."""
    return "slow"
'''

EXTERNAL_V2 = '''# /// script
# dependencies = []
# ///
def hello() -> str:
    """Say which version answers."""
    return "v2"
'''


def test_edited_tool_files_change_code_and_types_together(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "calc.py").write_text(INTERNAL_V1)
    (tools / "ext.py").write_text(EXTERNAL_V1)
    with running_gateway({"localTools": {"dir": "tools"}}, tmp_path) as gateway:
        assert text_of(gateway.call("calc__add", {"a": 1, "b": 2})) == 3
        assert text_of(gateway.call("ext__hello")) == "v1"
        worker = gateway.client.get("health").json()["servers"]["ext"]["worker"]["pid"]
        assert "slow(" in gateway.client.get("runtime/tools.ts").text

        (tools / "calc.py").write_text(INTERNAL_V2)
        (tools / "ext.py").write_text(EXTERNAL_V2)

        def module() -> str:
            return str(gateway.client.get("runtime/tools.ts").text)

        wait_for(lambda: "multiply(" in module() and "slow(" not in module(), gateway)
        # A new function is there for the types and the calls; a removed one for neither.
        assert text_of(gateway.call("calc__multiply", {"a": 6, "b": 7})) == 42
        assert text_of(gateway.call("calc__add", {"a": 1, "b": 2})) == 3
        assert text_of(gateway.call("ext__hello")) == "v2"
        gone = gateway.call("ext__slow")
        assert gone.status_code == 404, gone.text
        assert "LookupError" not in gone.text
        assert "calc.py reloaded" in gateway.log and "ext.py reloaded" in gateway.log
        wait_for(lambda: not psutil.pid_exists(worker), gateway)  # the old version's worker

        # An edit that does not load keeps the last good version serving, and says so.
        (tools / "calc.py").write_text("def broken(:\n")
        wait_for(lambda: "calc.py was not loaded" in gateway.log, gateway)
        assert text_of(gateway.call("calc__multiply", {"a": 2, "b": 3})) == 6
        health = gateway.client.get("health").json()
        assert any("calc.py was not loaded" in warning for warning in health["warnings"])
        assert gateway.stop() == [], "processes outlived the gateway"
