"""Where features meet, seventh pass (the others: test_features_meet.py to _meet6.py): one real
gateway with the fixture server (a `${VAR}` secret in its env, an `ask` rule on a tool named
`then`), the records server (an `ask` rule on write_record) and a folder of local tool
files; the real Deno and real SQLite, the `mcp` SDK's client for the MCP face."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import (
    GatewayProcess,
    fixture_server,
    gateway_cli,
    records_server,
    run_doit,
    wait_until,
)

# A password of words: no digits, separators between its words (a key of it reads as a
# field name, not as a token's data).
SECRET = "correct-horse-battery-staple"

KEYED = '''def keyed(name: str):
    """Answer an object keyed by the name given."""
    return {name: 1, "kind": "keyed"}
'''


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    directory = tmp_path_factory.mktemp("features-meet7")
    (directory / "tools").mkdir()
    (directory / "tools" / "keyed.py").write_text(KEYED)
    config = {
        "mcpServers": {
            "records": records_server(
                env={"RECORDS_JOURNAL": str(directory / "journal.jsonl")},
                policy={"write_record": "ask"},
            ),
            "fx": fixture_server(env={"FX_API_KEY": "${MEET7_API_KEY}"}, policy={"then": "ask"}),
        },
        "localTools": {"dir": "tools"},
        "search": {"semantic": False},
    }
    running = GatewayProcess(config, directory, env={"MEET7_API_KEY": SECRET})
    try:
        yield running
    finally:
        assert running.stop() == []


def secret_free(text: str) -> bool:
    return SECRET not in text and SECRET[:12] not in text


def test_a_type_learned_from_a_result_keyed_by_a_secret_never_names_it(
    gateway: GatewayProcess,
) -> None:
    """Learned result types x secret masking x get-types x doit: a script hands the key it
    received to a tool whose answer is keyed by what it was given. The type the gateway
    learns from that answer, the module it serves, get-types and the files doit leaves
    never name the secret (its recent call shows it masked)."""
    script = (
        'import { tools } from "toolscript";'
        ' const key = String(await tools.fx.env({ name: "FX_API_KEY" }));'
        " const answer = await tools.keyed.keyed({ name: key }) as any;"
        " return Object.keys(answer).length"
    )
    ran = gateway_cli(gateway, "exec", "--no-check", script)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "2"
    served = wait_until(
        lambda: gateway.client.get("runtime/tools.ts").text,
        lambda text: "inferred from 1 result" in text,
        60,
        "keyed's learned type",
    )
    assert secret_free(served), served
    types = gateway_cli(gateway, "get-types", "keyed.keyed")
    assert types.returncode == 0, types.stderr
    assert secret_free(types.stdout), types.stdout
    built = run_doit(gateway.directory, env={"MEET7_API_KEY": SECRET})
    assert built.returncode == 0, built.stdout + built.stderr
    for path in (gateway.directory / ".toolscript").rglob("*"):
        if path.is_file():
            assert secret_free(path.read_text(errors="replace")), path
