"""Stop 80's attacks on a real gateway (a red-team pass: the two stop 79 left).

What got through, now closed (each test performs the attack):

- A program answering as a gateway does, in its JSON (another local user's, on the port of
  a session's gateway that ended), at an exported ``TOOLSCRIPT_GATEWAY_URL``: exec sent it
  the agent's token and the script (a password typed into it included), and showed what it
  made up. The CLI (exec, list-servers, search) and the MCP face now ask ``/proof`` first,
  sending a nonce and no token, and go on only when the answer is the nonce's HMAC under
  the URL's token (``guard.gateway_proof``): the impostor gets the nonce, nothing else.
- exec's copy of a script (``~/.cache/toolscript/scripts/<hash>/``, kept so a script run
  again is not checked again) kept a password typed into it for 30 days. The copy is the
  run's own and goes when the run ends; only the check marks, empty files named by hashes,
  stay.
"""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import (
    SERVERS,
    GatewayProcess,
    agent_exec,
    fixture_server,
    inspector_call,
    port_file_server,
    project_gateway,
    toolscript_cli,
)
from toolscript.plumbing.paths import user_cache_dir

IMPORT = 'import { tools } from "toolscript";\n'


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with project_gateway(tmp_path_factory.mktemp("stop80"), {"fx": fixture_server()}) as gateway:
        yield gateway


@contextmanager
def impostor_at(folder: Path) -> Iterator[str]:
    """The URL (an agent's token in it) of a real process answering as a gateway does,
    without the token, its requests logged in ``folder``."""
    impostor = [
        sys.executable,
        str(SERVERS / "impostor_gateway.py"),
        str(folder / "port"),
        str(folder / "impostor.log"),
    ]
    with port_file_server(impostor, folder / "port") as port:
        yield f"http://127.0.0.1:{port}/agent-{secrets.token_urlsafe(24)}"


def assert_sent_only_nonces(folder: Path, url: str) -> None:
    """The impostor of ``folder`` was asked /proof alone, and never sent the token of
    ``url`` nor the script's password."""
    text = (folder / "impostor.log").read_text()
    sent = [json.loads(line) for line in text.splitlines()]
    assert sent and all(request["path"].startswith("/proof?n=") for request in sent), sent
    token = url.rpartition("/")[2]
    assert token not in text and "hunter2" not in text


def test_a_program_answering_as_a_gateway_is_sent_neither_token_nor_script(
    tmp_path: Path,
) -> None:
    """A real process on a port answers /runtime/hash, the module, /servers and POST /runs
    as a gateway does. Before: exec sent it the token in every path and POST /runs with the
    script, then printed the run's output. Now exec, list-servers and search ask /proof
    alone and stop: not a gateway's proof."""
    with impostor_at(tmp_path) as url:
        env = {"TOOLSCRIPT_GATEWAY_URL": url}
        done = toolscript_cli(
            "exec",
            "--no-check",
            IMPORT + 'const pw = "hunter2-typed";\nreturn 1',
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert "does not prove it holds the gateway's token" in done.stderr, done.stderr
        for command in (["list-servers"], ["search", "issues"]):
            done = toolscript_cli(*command, cwd=tmp_path, env=env)
            assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
            assert "another program listens there" in done.stderr, done.stderr
    assert_sent_only_nonces(tmp_path, url)


def test_the_mcp_face_sends_such_a_program_no_script(tmp_path: Path) -> None:
    """The MCP face (through the MCP Inspector's CLI) with TOOLSCRIPT_GATEWAY_URL at the
    impostor: execute answers that it does not prove it holds the token; it was sent
    nothing but the proof's nonce."""
    config = tmp_path / ".toolscript.json"
    config.write_text('{"mcpServers": {}}')
    with impostor_at(tmp_path) as url:
        code = IMPORT + 'const pw = "hunter2-typed";\nreturn 1'
        result = inspector_call(
            tmp_path, config, "execute", f"code={code}", env={"TOOLSCRIPT_GATEWAY_URL": url}
        )
    said = json.dumps(result)
    assert result.get("isError") is True, said
    assert "does not prove it holds the gateway" in said, said
    assert_sent_only_nonces(tmp_path, url)


def test_the_gateway_proves_its_tokens_and_gives_none_of_them(gateway: GatewayProcess) -> None:
    """Held, the other side: the real gateway's /proof (no token asked) answers HMACs only;
    exec through the agent's URL and list-servers through the owner's run as before."""
    from urllib.request import urlopen

    from toolscript.gateway.guard import agent_token, gateway_proof

    base, _, owner = gateway.url.rpartition("/")
    host = base.split("//", 1)[1]
    nonce = secrets.token_hex(16)
    with urlopen(f"{base}/proof?n={nonce}", timeout=30) as answer:
        text = answer.read().decode()
    assert owner not in text and agent_token(owner) not in text
    proofs = json.loads(text)["proof"]
    assert gateway_proof(agent_token(owner), host, nonce) in proofs
    assert gateway_proof(owner, host, nonce) in proofs
    code, stdout, stderr = agent_exec(
        gateway, IMPORT + 'return await tools.fx.plainText({ text: "hi" })'
    )
    assert code == 0 and "hi" in stdout, stderr
    done = toolscript_cli(
        "list-servers", cwd=gateway.directory, env={"TOOLSCRIPT_GATEWAY_URL": gateway.url}
    )
    assert done.returncode == 0 and "fx" in done.stdout, done.stderr


def test_a_password_typed_into_a_script_is_not_kept_in_the_cache(gateway: GatewayProcess) -> None:
    """A script holding a literal password, run twice (checked by the warm checker or Deno,
    then known as checked): nothing under the user's cache holds it afterwards (its copy was
    kept 30 days), and the second run still skips the check (its mark stays)."""
    password = "pw-" + secrets.token_hex(12)
    code = IMPORT + f'const pw = "{password}";\nreturn await tools.fx.plainText({{ text: "ok" }})'
    for _ in range(2):
        done = toolscript_cli(
            "exec", code, cwd=gateway.directory, env={"TOOLSCRIPT_GATEWAY_URL": gateway.url}
        )
        assert done.returncode == 0 and "ok" in done.stdout, done.stderr
    cache = user_cache_dir()
    holding = [
        path
        for folder in (cache / "scripts", cache / "deno" / "gen" / "file")
        if folder.is_dir()
        for path in folder.rglob("*")
        if path.is_file() and password.encode() in path.read_bytes()
    ]
    assert holding == []
    marks = [path for path in (cache / "scripts").rglob(".*.checked-*") if path.is_file()]
    assert marks  # what spares the next run its check
