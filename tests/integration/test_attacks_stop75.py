"""Stop 75's attacks on a real gateway (a red-team pass from the outside).

What got through, now closed (each test performs the attack):

- A script's tool calls of 8 MB of ``[{},{},...]`` each (within ``--max-request-mb``)
  decoded to 186 MB apiece in the gateway: a dozen slow ones held 2 GB of it, shared by every
  run, for as long as they ran. A call's arguments are counted in JSON values before they are
  decoded: at most 1,000,000 a call, 2,000,000 under way for a run, 4,000,000 in all (413
  past them; unit: test_attacks_stop75_values).
- The same through the routes whose bodies Litestar decodes whole with any JSON in them (a
  prompt get's ``arguments``, a template read's ``params``), which a script's own URL reaches:
  24 prompt gets of 9.6 MB of ``[{},{},...]`` at once grew the gateway to 5.9 GB (4.7 GB
  kept after). They are counted as tool calls are (0.13 GB at most now).
- A stdio server's answer of millions of JSON values (30 MB of ``{"p0":{},...}`` took the
  gateway 0.58 GB, 128 MB of ``[{},{},...]`` some 8 GB) drops its connection past 4,000,000
  values, as one past 128 MB does.
- A return value of millions of JSON values past ``--max-output`` was parsed whole for its
  preview (60 MB took ``exec``, or the MCP face, 1.5 GB); previewed as text now (unit:
  test_attacks_stop75_preview).
- A server listing a tool named ``then`` (or ``toJSON``, ``toString``, ``valueOf``) had it as
  that member of ``tools.<server>``: ``await tools.h``, a script returning the namespace,
  ``JSON.stringify`` or a string conversion of it called the server's tool, a call the
  script never wrote (the module's guard for these names held only for tools it did not
  list). Such a tool is now ``then2`` (unit: test_attacks_stop75_names).

The other attacks of this pass held; the report lists them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import SERVERS, GatewayProcess, fixture_server, last_run, toolscript_cli

IMPLICIT = ("then", "toJSON", "toString", "valueOf", "toLocaleString")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    """One gateway for the module: a hostile stdio server whose tools are named as the
    members JavaScript calls by itself, beside the fixture server (a slow tool)."""
    directory = tmp_path_factory.mktemp("stop75")
    tools = [
        {"name": name, "description": "answers with its name", "inputSchema": {"type": "object"}}
        for name in (*IMPLICIT, "then2", "plain")
    ]
    spec = Path(directory) / "spec.json"
    spec.write_text(json.dumps({"tools": tools}))
    # a server whose answer to `many` is 6 MB of [{},{},...]: 4.2 million JSON values
    many = Path(directory) / "many.json"
    raw = ['{"content": [], "structuredContent": {"a": [', {"$repeat": "{},", "$times": 2_100_000}]
    listed = [{"name": name, "inputSchema": {"type": "object"}} for name in ("many", "plain")]
    many.write_text(json.dumps({"tools": listed, "raw": {"many": [*raw, "{}]}}"]}}))
    hostile = [str(SERVERS / "hostile_server.py")]
    entry = {"command": sys.executable, "args": [*hostile, str(spec)]}
    servers = {
        "h": entry,
        "fx": fixture_server(),
        "many": {"command": sys.executable, "args": [*hostile, str(many)]},
    }
    gateway = GatewayProcess({"mcpServers": servers, "search": {"semantic": False}}, directory)
    try:
        gateway.wait_for_health(
            lambda h: all(h["servers"][s]["state"] == "connected" for s in servers)
        )
        yield gateway
    finally:
        gateway.stop()


TOUCH = """import { tools } from "toolscript";
const h = tools.h as any;
const awaited = await h;
const seen = [typeof awaited, JSON.stringify(h), String(h), `${h}`, h + "", [h].toLocaleString()];
const members = ["then", "toJSON", "toString", "valueOf", "toLocaleString"].map((m) => typeof h[m]);
return { seen, members, own: Object.keys(h).sort() };
"""


def test_awaiting_printing_or_returning_a_namespace_calls_no_tool(hostile: GatewayProcess) -> None:
    """Before: ``await tools.h`` called the server's ``then`` (the run stopped on its
    answer), ``JSON.stringify`` its ``toJSON``, a string conversion its ``toString``."""
    done = toolscript_cli("exec", "--no-check", TOUCH, cwd=hostile.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["seen"][0] == "object"
    assert answer["members"] == ["undefined", "undefined", "function", "function", "function"]
    assert not set(IMPLICIT) & set(answer["own"]), answer["own"]
    assert {"then2", "then3", "toJSON2", "toString2", "valueOf2", "toLocaleString2"} <= set(
        answer["own"]
    )
    run = last_run(hostile)
    assert run["calls"] == 0, run


def test_the_renamed_tools_call_the_server_s_own(hostile: GatewayProcess) -> None:
    """``then2`` stays the server's ``then2`` (its own name); ``then`` is ``then3``."""
    script = (
        'import { tools } from "toolscript";\n'
        "return [await tools.h.then2({}), await tools.h.then3({}), await tools.h.toJSON2({})];"
    )
    done = toolscript_cli("exec", script, cwd=hostile.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == ["then2", "then", "toJSON"]
    types = toolscript_cli("get-types", "h", "then", cwd=hostile.directory)
    assert types.returncode == 0, types.stderr
    assert "then3(" in types.stdout, types.stdout


def test_a_result_of_millions_of_values_is_previewed_as_text(hostile: GatewayProcess) -> None:
    """Past --max-output, a return value of 3 million empty objects (9 MB, parsed whole for a
    JSON preview: about 25 times its size in exec's memory) is previewed as its first line."""
    done = toolscript_cli(
        "exec", "--no-check", "--max-output", "1000000",
        "return new Array(3_000_000).fill({})", cwd=hostile.directory,
    )  # fmt: skip
    assert done.returncode == 123, done.stderr
    assert "did not fit in 1000000" in done.stderr
    assert done.stdout.startswith("[{},{},{},"), done.stdout[:200]
    assert "…" in done.stdout


BIG = """import { tools } from "toolscript";
const fx = tools.fx as any;
const many = (n: number) => new Array(n).fill({});
const refused = async (p: Promise<unknown>) => p.then(() => "ok", (e: Error) => e.message);
const huge = await refused(fx.sleep({ seconds: 0, extra: many(2_600_000) }));
// two calls of 900,000 values each under way (held until released): a third does not fit
const held = ["a", "b"].map((m) => refused(fx.failWhenReleased({ message: m, extra: many(450_000) })));
const ready = [await fx.waitFor({ held: "a", within: 60 }), await fx.waitFor({ held: "b", within: 60 })];
const third = await refused(fx.sleep({ seconds: 0, extra: many(450_000) }));
await fx.release({});
const released = await Promise.all(held);
const after = await refused(fx.sleep({ seconds: 0, extra: many(450_000) }));
return { huge, ready, third, released, after };
"""


def test_calls_of_millions_of_values_are_refused_and_the_gateway_stays_up(
    hostile: GatewayProcess,
) -> None:
    """Before: each call was decoded whole, the gateway growing by about 23 times its bytes
    for as long as the call ran. Now the one past 1,000,000 values is refused, a run's calls
    under way hold 2,000,000 at most, and what a finished call held is given back."""
    done = toolscript_cli("exec", "--no-check", BIG, cwd=hostile.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert "hold more than 1,000,000 JSON values" in answer["huge"], answer
    assert answer["ready"] == ["yes", "yes"], answer
    assert "more than 2,000,000 JSON values for one run" in answer["third"], answer
    assert [text.rsplit(" ", 1)[-1] for text in answer["released"]] == ["a", "b"], answer
    assert answer["after"] == "ok", answer
    assert hostile.health()["status"] == "ok"


PROMPT_FLOOD = """const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!;
const get = (n: number) =>
  fetch(`${url}/servers/fx/prompts/get`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "nope", arguments: { a: new Array(n).fill({}) } }),
  }).then(async (r) => [r.status, (await r.json()).message]);
const small = await get(1);
const huge = await get(2_400_000);
const many = await Promise.all(Array.from({ length: 8 }, () => get(400_000)));
return { small, huge, many };
"""


def test_prompt_gets_of_millions_of_values_are_counted_as_calls_are(
    hostile: GatewayProcess,
) -> None:
    """A script's own URL reaches a server's prompt gets: before, each body was decoded
    whole by Litestar (24 of 9.6 MB at once: 5.9 GB of the gateway)."""
    done = toolscript_cli("exec", "--no-check", PROMPT_FLOOD, cwd=hostile.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    answer = json.loads(done.stdout)
    assert answer["small"][0] == 400, answer["small"]  # served: no such prompt
    assert answer["huge"][0] == 413, answer["huge"]
    assert "hold more than 1,000,000 JSON values" in answer["huge"][1]
    statuses = [status for status, _ in answer["many"]]
    assert set(statuses) <= {400, 413} and 400 in statuses, answer["many"]
    assert hostile.health()["status"] == "ok"


def test_a_server_s_answer_of_millions_of_values_drops_its_connection(
    hostile: GatewayProcess,
) -> None:
    """Before: decoded and checked whole, some 200 bytes of the gateway's a value. Now the
    call fails at once, the server is started again and answers the next call."""
    script = (
        'import { tools } from "toolscript";\n'
        "const m = tools.many as any;\n"
        "const first = await m.many({}).then(() => 'ok', (e: Error) => e.message);\n"
        "return [first, await m.plain({})];"
    )
    done = toolscript_cli("exec", "--no-check", script, cwd=hostile.directory)
    assert done.returncode == 0, done.stdout + done.stderr
    first, after = json.loads(done.stdout)
    assert first != "ok" and "many" in first, first
    assert after == "plain"
    hostile.wait_for_log("a message of more than 4,000,000 JSON values")
