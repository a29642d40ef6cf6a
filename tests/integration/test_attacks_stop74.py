"""Stop 74's attacks on a real gateway: what stops 72 and 73 left open around secrets and
script size. Each test performs the attack; all share one gateway.

- A script read a token from a tool's result and sent it on in two halves: stop 72's rule
  (a run of a secret in what a script wrote is shown as written, or masking it tells the
  script which of its guesses were runs) showed both halves in the run log, so ``runs show``
  held the whole token in two pieces. Now a run handed a secret (a result holding it whole,
  in any spelling) has every run of it masked in what it wrote; a run never handed it still
  sees its guesses as written (the oracle stays closed).
  Half of a token's base64 showed too: runs of its hex and base64 spellings are masked
  (unit: test_attacks_stop74_received).
- A 30 MB script was read, sent and checked whole (91 s, 3.6 GB) before it ran: a script is
  refused past ``MAX_RUN_SCRIPT_BYTES`` (1 MiB) with exit 2, before it is read (unit:
  test_attacks_stop74_size).
- Unit only: credential-named keys get-types' examples missed (test_attacks_stop74_keys);
  a token as an object key, and text cut before it was masked (test_attacks_stop74_cut).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest

from tests.helpers import GatewayProcess, face_parameters, fixture_server, last_run, toolscript_cli
from toolscript.execution.command import MAX_RUN_SCRIPT_BYTES
from toolscript.gateway.guard import agent_url
from toolscript.plumbing.paths import project_state_dir

SECRET = "ghp_Zq8xR2mK9vT4pL7nW3sY6bH1cJ5dF0gA2eQ"
IMPORT = 'import { tools } from "toolscript";\n'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("stop74")
    fx = fixture_server(env={"FX_TOKEN": SECRET})
    started = GatewayProcess({"mcpServers": {"fx": fx}}, directory)
    try:
        yield started
    finally:
        started.stop()


def test_a_token_a_script_received_does_not_leak_in_pieces(gateway: GatewayProcess) -> None:
    agent = {"TOOLSCRIPT_GATEWAY_URL": agent_url(gateway.url)}
    (gateway.directory / "halves.ts").write_text(
        f"{IMPORT}const token = String(await tools.fx.env({{ name: 'FX_TOKEN' }}));\n"
        "const half = token.length >> 1;\n"
        "await tools.fx.plainText({ text: `a ${token.slice(0, half)} b` });\n"
        "await tools.fx.plainText({ text: `c ${token.slice(half)} d` });\n"
        "await tools.fx.plainText({ text: `e ${btoa(token).slice(0, 30)} f` });\n"
    )
    done = toolscript_cli("exec", "halves.ts", cwd=gateway.directory, env=agent)
    assert done.returncode == 0, done.stderr
    run = last_run(gateway)
    calls = run["calls_made"]
    assert isinstance(calls, list)
    texts = [call["arguments"]["text"] for call in calls[1:]]
    assert texts == ["a *** b", "c *** d", "e *** f"], texts
    half = len(SECRET) // 2
    example = toolscript_cli("get-types", "fx", "plain_text", cwd=gateway.directory, env=agent)
    assert example.returncode == 0, example.stderr
    assert "e *** f" in example.stdout, example.stdout  # the newest call's example
    assert SECRET[:half] not in example.stdout and SECRET[half:] not in example.stdout
    for path in project_state_dir(gateway.directory).rglob("*"):
        if path.is_file():
            held = path.read_bytes()
            assert SECRET[:half].encode() not in held and SECRET[half:].encode() not in held, path

    # a run never handed the token still sees its guesses as written (no oracle)
    guesses = f"ghp_AAAA {SECRET[4:16]} hello123"
    (gateway.directory / "guesses.ts").write_text(
        f"{IMPORT}await tools.fx.plainText({{ text: {json.dumps(guesses)} }});\n"
    )
    done = toolscript_cli("exec", "guesses.ts", cwd=gateway.directory, env=agent)
    assert done.returncode == 0, done.stderr
    calls = last_run(gateway)["calls_made"]
    assert isinstance(calls, list)
    assert calls[0]["arguments"] == {"text": guesses}, calls


def test_a_script_over_the_limit_is_refused_before_it_is_read(gateway: GatewayProcess) -> None:
    """A 30 MB file (sparse: never read), 1 MB and a byte piped, and as much through the MCP
    face's execute: each refused with exit 2 (the face: an error result), none run."""
    big = gateway.directory / "big.ts"
    with big.open("wb") as handle:
        handle.truncate(30 * 1024 * 1024)
    done = toolscript_cli("exec", "big.ts", cwd=gateway.directory)
    assert done.returncode == 2, done.stderr
    assert "a script may be 1 MB at most" in done.stderr and "big.ts is 31457280 bytes" in (
        done.stderr
    ), done.stderr
    code = "// " + "x" * MAX_RUN_SCRIPT_BYTES + "\nconsole.log('ran');\n"
    done = toolscript_cli("exec", "-", cwd=gateway.directory, stdin=code)
    assert done.returncode == 2 and "ran" not in done.stdout, done.stderr
    assert "the script on standard input is over it" in done.stderr, done.stderr

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def execute() -> tuple[bool, str]:
        parameters = face_parameters(gateway)
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("execute", {"code": code})
            text = "\n".join(block.text for block in result.content if block.type == "text")
            return result.is_error, text

    is_error, text = anyio.run(execute)
    assert is_error and "a script may be 1 MB at most" in text and "ran" not in text, text
