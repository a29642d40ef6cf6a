"""Stop 55's attacks by an untrusted script, each made for real (real Deno, a real gateway,
the real MCP face). Four got through and are fixed: WebGPU, which needs no permission and
loaded the machine's graphics drivers into the sandbox; error lines that cost exec (or the
face) quadratic time in their length to rewrite, past the script's own timeout; blank lines
after a faked type error that held the face for minutes; and a long search query that held
the gateway. The others failed and stay here as guards: Deno's node:sqlite, a proxy client,
a listener, a worker's literal import, the cache API, prompts for permissions."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from tests.helpers import (
    GatewayProcess,
    LocalHTTPServer,
    clean_env,
    face_parameters,
    fixture_server,
    running_gateway,
)
from tests.integration.test_spare_sandbox import module_of, run
from toolscript.execution.spare import Spare

SECRET = "toolscript-stop55-canary-41c9"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}
    with running_gateway(config, tmp_path_factory.mktemp("stop55")) as started:
        yield started


def exec_script(
    gateway: GatewayProcess, code: str, cwd: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", *args, code],
        cwd=cwd,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
        capture_output=True,
        text=True,
        timeout=240,
    )


GPU = 'const a = await navigator.gpu.requestAdapter(); console.log(a === null ? "NO GPU" : "GPU");'


def test_a_script_gets_no_gpu_in_a_fresh_deno_or_a_spare(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    # WebGPU asks no permission: the adapter loaded Mesa's drivers (EGL, LLVM) into the
    # sandbox, reading their files past --deny-read, and gave the script the device.
    fresh = exec_script(gateway, GPU, tmp_path, "--no-check")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout == "NO GPU\n"
    spare = Spare(gateway.url, module_of(gateway), 512)
    exit_code, out, err, _ = run(gateway, GPU, spare)
    assert spare.process.poll() is not None  # the spare ran it
    assert (exit_code, out) == (0, "NO GPU\n"), err


# Lines to stderr that exec rewrites (its refusals in toolscript's words, a source excerpt's
# caret, a lock's diff, a position in the script): a lazy ".+?" from each "Requires" to the
# line's end, and two runs of blanks tried at every split, cost seconds of exec's CPU per
# 64 KB line, with the GIL held (three such excerpts and twenty refusal lines, 1.5 MB, kept
# this script past a 60 s timeout); a position of 5,000 digits made int() raise in the pump,
# which stopped reading: the script blocked on its next lines until the timeout.
ERROR_LINES = """
const refusal = "Requires x access to ".repeat(3100).slice(0, 65000);
for (let i = 0; i < 20; i++) console.error(refusal);
for (let i = 0; i < 3; i++) console.error("})();\\n" + " ".repeat(65000) + "x");
console.error("The lockfile is out of date\\n" + " ".repeat(65000) + "x");
console.error("    at <inline>.ts:1:" + "9".repeat(5000));
console.error("9".repeat(5000) + " | x");
for (let i = 0; i < 100; i++) console.error("after " + i + " ".repeat(2000));
console.error("ALL PRINTED");
return 1;
"""


def test_error_lines_a_script_prints_cost_exec_no_more_than_their_length(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    done = exec_script(gateway, ERROR_LINES, tmp_path, "--no-check", "--timeout", "60")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ALL PRINTED" in done.stderr


def test_the_face_answers_a_faked_type_error_and_a_deep_result_itself(
    gateway: GatewayProcess,
) -> None:
    # "error: Type checking failed" on stderr makes the face drop Deno's advice with a
    # multi-line regex whose "^\\s*" crossed lines: 900,000 blank lines after it held the
    # face (and its in-process gateway) for about half an hour. A value nested 5,000 deep
    # made the face's json.loads raise RecursionError: "execute failed", a traceback.
    # (100,000 blank lines: past the face's cap, stderr is cut, its end kept: never stopped)
    fake = 'console.error("error: Type checking failed" + "\\n".repeat(100000) + "x");Deno.exit(1);'
    deep = "let v: unknown = 1; for (let i = 0; i < 5000; i++) v = [v]; return v;"

    async def execute() -> list[tuple[bool, str]]:
        answers = []
        with anyio.fail_after(120):
            async with (
                stdio_client(face_parameters(gateway)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for code in (fake, deep):
                    result = await session.call_tool("execute", {"code": code})
                    text = result.content[0].text  # type: ignore[union-attr]
                    assert isinstance(text, str)
                    answers.append((result.is_error, text))
        return answers

    (fake_failed, fake_text), (deep_failed, deep_text) = anyio.run(execute)
    assert fake_failed and "Type checking failed" in fake_text
    assert "stopped at a limit" not in fake_text
    assert not deep_failed, deep_text
    assert deep_text.startswith("[[[[") and "RecursionError" not in deep_text


def test_output_nested_past_python_s_limit_is_previewed_as_text(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    # The preview of output past --max-output parsed it as JSON: "[" 100,000 deep raised
    # RecursionError, and exec died with a traceback instead of its preview and exit 123.
    code = 'console.log("[".repeat(100000) + "]".repeat(100000));'
    done = exec_script(gateway, code, tmp_path, "--no-check", "--max-output", "1000")
    assert done.returncode == 123, done.stderr[-2000:]
    assert "output cut" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.startswith("[[[[")


def test_a_long_search_query_is_refused_before_it_holds_the_gateway(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    # Splitting a query into needs is quadratic in its length: 16,000 characters of ". "
    # held the gateway's GIL for seconds a request, and a script may send many at once.
    code = """
const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
const long = await fetch(url + "/runtime/search?q=" + ". ".repeat(8000).replaceAll(" ", "+"));
const short = await fetch(url + "/runtime/search?q=echo+some+text");
console.log(long.status, (await long.json()).error, short.status);
"""
    done = exec_script(gateway, code, tmp_path, "--no-check", "--timeout", "60")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "400 usage_error 200\n"


# Attacks that failed; each prints ESCAPED only if it got through.
GUARDS = {
    # node:sqlite opens its own files: a path, ATTACH and VACUUM INTO must be refused.
    "sqlite_open": 'const { DatabaseSync } = await import("node:sqlite");'
    ' new DatabaseSync("{db}").prepare("select v from s").all();',
    "sqlite_attach": 'const { DatabaseSync } = await import("node:sqlite");'
    ' const db = new DatabaseSync(":memory:"); db.exec("ATTACH DATABASE \'{db}\' AS p");'
    ' db.prepare("select v from p.s").all();',
    "sqlite_vacuum_into": 'const { DatabaseSync } = await import("node:sqlite");'
    ' new DatabaseSync(":memory:").exec("CREATE TABLE a(x); VACUUM INTO \'{dir}/copy.db\'");',
    "heap_snapshot": 'const v8 = await import("node:v8"); v8.writeHeapSnapshot("{dir}/heap.out");',
    "require_file": 'const { createRequire } = await import("node:module");'
    ' createRequire(import.meta.url)("{dir}/secret.json");',
    # A proxy is a connection to another host:port, whatever the request's URL names.
    "proxy_client": "const client = Deno.createHttpClient({ proxy: { url: 'http://127.0.0.1:{port}' } });"
    " await (await fetch(Deno.env.get('TOOLSCRIPT_GATEWAY_URL') + '/runtime/hash', { client })).text();",
    "listen": 'Deno.listen({ hostname: "127.0.0.1", port: 0 });',
    # The import map that keeps literal file: imports out holds in workers too.
    "worker_literal_import": "await new Promise((resolve, reject) => {"
    " const w = new Worker(\"data:text/javascript,import t from 'file://{dir}/secret.txt'"
    ' with {type:\'text\'}; postMessage(t)", { type: "module" });'
    " w.onmessage = (m) => resolve(m.data); w.onerror = (e) => { e.preventDefault(); reject(new Error(e.message)); }; });",
    "cache_storage": 'await (await caches.open("keep")).put("http://a/", new Response("state"));',
    "permission_request": 'if ((await Deno.permissions.request({ name: "read" })).state !== "granted")'
    ' throw new Error("denied");',
}


def test_escapes_that_failed_stay_refused(
    gateway: GatewayProcess,
    local_http_server: Callable[[bytes], LocalHTTPServer],
    tmp_path: Path,
) -> None:
    (tmp_path / "secret.txt").write_text(SECRET)
    (tmp_path / "secret.json").write_text(json.dumps({"secret": SECRET}))
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
            " c.execute('create table s(v)'); c.execute('insert into s values (?)', (sys.argv[2],));"
            " c.commit()",
            str(tmp_path / "secret.db"),
            SECRET,
        ],
        check=True,
    )
    port = local_http_server(SECRET.encode()).port
    cases = {
        name: attack.replace("{db}", str(tmp_path / "secret.db"))
        .replace("{dir}", str(tmp_path))
        .replace("{port}", str(port))
        for name, attack in GUARDS.items()
    }
    code = (
        "const seen: Record<string, string> = {};\n"
        + "".join(
            f"try {{ {attack} seen[{json.dumps(name)}] = 'ESCAPED'; }}"
            f" catch (e) {{ seen[{json.dumps(name)}] = String(e); }}\n"
            for name, attack in cases.items()
        )
        + "console.log(JSON.stringify(seen));"
    )
    done = exec_script(gateway, code, tmp_path, "--no-check")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert sorted(seen) == sorted(GUARDS)
    escaped = {name: why for name, why in seen.items() if why == "ESCAPED" or SECRET in why}
    assert escaped == {}, seen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.db", "secret.json", "secret.txt"]


def test_a_run_s_token_reaches_no_route_beyond_its_calls(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    # The warm checker takes paths (a file to write, a module to read), runs/start starts a
    # process: a script's token reaches neither, nor a route through "..", HEAD, or a GET
    # of a tool; a websocket to its own URL is closed.
    code = """
const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!;
const check = JSON.stringify({ code: "x", path: "/tmp/x.ts", module: "/etc/passwd", hash: "x" });
const tries: [string, RequestInit][] = [
  ["/runtime/check", { method: "POST", body: check }],
  ["/runs", { method: "POST", body: "{}" }],
  ["/runs/start", { method: "POST", body: "{}" }],
  ["/scripts", { method: "POST", body: "{}" }],
  ["/runtime/%2e%2e/health", {}],
  ["/runtime/hash", { method: "HEAD" }],
  ["/tools/fx__plain_text", {}],
];
const statuses = [];
for (const [path, init] of tries) {
  const answer = await fetch(url + path, init);
  await answer.body?.cancel();
  statuses.push(answer.status);
}
const socket = await new Promise((resolve) => {
  const ws = new WebSocket(url.replace("http", "ws") + "/runtime/hash");
  ws.onopen = () => resolve("open");
  ws.onerror = () => {};
  ws.onclose = () => resolve("closed");
});
console.log(JSON.stringify([statuses, socket]));
"""
    done = exec_script(gateway, code, tmp_path, "--no-check")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [[401] * 7, "closed"]
