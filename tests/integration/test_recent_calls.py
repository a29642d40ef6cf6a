"""get-types shows one recent successful call per tool: through a real gateway and the
fixture server, redacted, trimmed, inside a comment Deno's checker reads as one, and off
with the setting that learns result types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import GatewayProcess, deno_check, fixture_server, toolscript_cli, wait_until
from toolscript.gateway.recentcalls import LIMITS

SECRET = "hunter2-secret-4f9a1c7e"
HOSTILE = '*/ const pwned: number = "not a number"; export const evil = 1; /*'


def config(**types: Any) -> dict[str, Any]:
    return {
        "mcpServers": {"fx": fixture_server(env={"FX_TOKEN": SECRET})},
        "search": {"semantic": False},
    } | ({"types": types} if types else {})


def types_of(gateway: GatewayProcess, tool: str) -> dict[str, Any]:
    answer = gateway.client.get("types", params={"server": "fx", "tool": tool})
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_get_types_shows_a_recent_call_redacted_and_trimmed(tmp_path: Path) -> None:
    gateway = GatewayProcess(config(), tmp_path)
    try:
        assert types_of(gateway, "plain_text")["recent"] == [None]
        assert "A recent successful call" not in types_of(gateway, "plain_text")["declarations"]
        # A result that is a secret (the server's own env), and arguments holding one.
        assert gateway.call("fx__env", {"name": "FX_TOKEN"}).json() == SECRET
        shown = types_of(gateway, "env")
        assert shown["recent"][0]["arguments"] == '{"name":"FX_TOKEN"}'
        assert shown["recent"][0]["result"] == '"***"'
        assert 'tools.fx.env({"name":"FX_TOKEN"})' in shown["declarations"]
        assert SECRET not in json.dumps(shown)
        # What the script sent is shown as sent (test_attacks_stop70: masked, it was an oracle)
        # but for a whole secret (stop 72: one cannot be guessed, and none lands in the file).
        gateway.call("fx__plain_text", {"text": f"the key is {SECRET} or {SECRET[:12]}"})
        shown_arguments = types_of(gateway, "plain_text")["recent"][0]["arguments"]
        assert f"the key is *** or {SECRET[:12]}" in shown_arguments, shown_arguments
        # A large result is cut to the cap.
        assert gateway.call("fx__plain_text", {"text": "x" * 100_000}).status_code == 200
        recent = types_of(gateway, "plain_text")["recent"][0]
        assert recent["cut"] and len(recent["result"]) <= LIMITS.result + 1
        assert len(recent["arguments"]) <= LIMITS.arguments + 1
        # The CLI's get-types shows it too, and it is kept for the project on disk.
        done = toolscript_cli("get-types", "fx", "env", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert 'tools.fx.env({"name":"FX_TOKEN"})' in done.stdout and SECRET not in done.stdout
        from toolscript.plumbing.paths import project_state_dir

        kept = project_state_dir(tmp_path) / "recent-calls.json"
        wait_until(lambda: kept.exists() and "fx__env" in kept.read_text(), bool, 20, "saved")
        assert SECRET not in kept.read_text()
    finally:
        gateway.stop()
    again = GatewayProcess(config(), tmp_path)
    try:
        assert types_of(again, "env")["recent"][0]["result"] == '"***"'
    finally:
        again.stop()


def test_a_hostile_result_stays_data_inside_the_comment(tmp_path: Path) -> None:
    gateway = GatewayProcess(config(), tmp_path)
    try:
        assert gateway.call("fx__plain_text", {"text": HOSTILE}).status_code == 200
        declarations = types_of(gateway, "plain_text")["declarations"]
        assert "A recent successful call" in declarations
        module = gateway.client.get("runtime/tools.ts").text
    finally:
        gateway.stop()
    # The declarations as TypeScript beside the module they describe: had the result left
    # its comment, `pwned` would be a type error (and `evil` an export inside a namespace).
    checked = tmp_path / "shown.ts"
    checked.write_text(f"{module}\n\nnamespace Shown {{\n{declarations}\n}}\n")
    done = deno_check([checked], tmp_path / "deno")
    assert done.returncode == 0, done.stderr + done.stdout


def test_the_types_setting_switches_recent_calls_off(tmp_path: Path) -> None:
    gateway = GatewayProcess(config(inferResults=False), tmp_path)
    try:
        assert gateway.call("fx__plain_text", {"text": "hello"}).status_code == 200
        shown = types_of(gateway, "plain_text")
        assert shown["recent"] == [None]
        assert "A recent successful call" not in shown["declarations"]
    finally:
        gateway.stop()
    from toolscript.plumbing.paths import project_state_dir

    assert not (project_state_dir(tmp_path) / "recent-calls.json").exists()
