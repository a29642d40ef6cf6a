"""Stop 68: the script as attacker, the whole catalogue against Deno 2.9 (real Deno, a real
gateway, a spare, the real MCP face; they start Deno differently).

Got through, fixed:

- A script outlived its run when the run ended at the gateway first: the gateway stopped
  (SIGTERM or SIGKILL), or ``runs stop`` ended an exec's run. A stop reaches a script only
  through its next tool call, so one that calls nothing more ran on to its timeout (300 s
  for exec), in exec, a spare and the MCP face alike. It could listen on the gone gateway's
  port (the one address its permissions name) and answer as the gateway: exec's progress
  poll and the agent's requests came to it, tokens in their paths. exec and the face now
  stop the sandbox once the run's gateway says the run ended (a stopping gateway says so
  of every run, at once, while it still holds its port) or is gone (exit 143).

Held, each attempted here through exec (a fresh Deno), a spare and the face's ``execute``
(``CATALOGUE``): Deno.kill and node's process.kill; node:os's user, home, host, interfaces,
CPUs, memory, load and priority; Deno.uid/gid/loadavg/systemMemoryInfo/osUptime/umask;
node:inspector (open, a session); createRequire's fs and child_process, spawnSync, cluster;
worker_threads reading a file or the environment; a web Worker asking for permissions;
blob: and data: modules importing files (also ``file://localhost``, ``file://127.0.0.1``,
``FILE:``); imports by URL of another port; fetch to 127.0.0.2 and to octal, hex, short and
IPv4-mapped forms of 127.0.0.1 (the decimal form of the gateway's own address reaches the
gateway, which is allowed); a proxy and Deno.connect over a Unix socket; connectTls;
listening on the gateway's port; node:net, http, https, http2, tls and dgram to other ports;
DNS (node:dns, Deno.resolveDns); EventSource; Deno.openKv; /dev/fd and /proc; chdir;
SQLite extensions; a run's token on the gateway's /health, /search, /types, /runs. The
timing attacks (a busy ``unload`` listener after ``return``, stdout closed then living on,
``Atomics.wait``, a busy ``finally``) end at the timeout with nothing left running; memory
past the cap through the face is stopped as through exec.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import psutil
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
    wait_until,
)
from tests.integration.test_spare_sandbox import module_of, run
from toolscript.execution.spare import Spare

SECRET = "toolscript-stop68-canary-5be1"
CONFIG = {"mcpServers": {"fx": fixture_server()}, "search": {"semantic": False}}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running_gateway(CONFIG, tmp_path_factory.mktemp("stop68")) as started:
        yield started


def port_of(gateway: GatewayProcess) -> int:
    return int(gateway.url.split(":")[2].split("/")[0])


def exec_script(
    gateway: GatewayProcess, code: str, cwd: Path, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", *args, code],
        cwd=cwd,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url, **extra),
        capture_output=True,
        text=True,
        timeout=240,
    )


def face_execute(
    gateway: GatewayProcess, code: str, timeout: float, *, within: float
) -> tuple[bool, str]:
    """Whether the face's ``execute`` of ``code`` (its ``timeout``) failed, and its text;
    the client gives up after ``within`` seconds."""

    async def execute() -> tuple[bool, str]:
        with anyio.fail_after(within):
            async with (
                stdio_client(face_parameters(gateway)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("execute", {"code": code, "timeout": timeout})
                text = result.content[0].text  # type: ignore[union-attr]
                assert isinstance(text, str)
                return bool(result.is_error), text

    return anyio.run(execute)


def deno_of(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [c for c in process.children(recursive=True) if c.name() == "deno"]
    except psutil.NoSuchProcess:
        return []


# -- a script outlives no run its gateway ended ------------------------------------------

# Calls a tool (the run is under way), then tries, again and again, to listen on the
# gateway's own port and answer whoever comes as the gateway would.
SQUAT = """import {{ tools }} from "toolscript";
await tools.fx.plainText({{ text: "x" }});
console.log("CALLED");
for (;;) {{
  try {{
    const listener = Deno.listen({{ hostname: "127.0.0.1", port: {port} }});
    console.log("SQUATTING");
    for await (const connection of listener) {{
      const bytes = new Uint8Array(4096);
      const n = await connection.read(bytes);
      console.log("GOT", new TextDecoder().decode(bytes.subarray(0, n ?? 0)).split("\\r\\n")[0]);
      connection.close();
    }}
  }} catch {{
    await new Promise((resolve) => setTimeout(resolve, 5));
  }}
}}
"""


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_script_outlives_no_gateway_that_stopped(how: str, tmp_path: Path) -> None:
    """Before: exec's script lived on to its timeout (exit 124), took the port as soon as
    the gateway let it go, and got exec's own progress poll with its token in the path."""
    (tmp_path / "gw").mkdir()
    own = GatewayProcess(CONFIG, tmp_path / "gw")
    try:
        port = port_of(own)
        # (no --no-check: a new script through a running gateway runs in a spare)
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "toolscript", "exec", "--timeout", "120"),
                SQUAT.format(port=port),
            ],
            cwd=tmp_path / "gw",
            env=clean_env(TOOLSCRIPT_GATEWAY_URL=own.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stdout.readline() == "CALLED\n"
        if how == "SIGTERM":
            own.stop()
        else:
            own.process.kill()
            own.process.wait()
        out, err = process.communicate(timeout=150)
    finally:
        own.stop()
    assert process.returncode == 143, err
    assert "gateway stopped while the script ran" in err, err
    assert "GOT" not in out, out
    if how == "SIGTERM":  # the gateway said so while it still held its port
        assert "SQUATTING" not in out, out
    assert deno_of(psutil.Process()) == []


def running_run(cwd: Path) -> str:
    listed = subprocess.run(
        [sys.executable, "-m", "toolscript", "runs", "--json", "-n", "10"],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    runs = [r for r in json.loads(listed.stdout) if r.get("status") == "running"]
    return str(runs[0]["id"]) if runs else ""


def test_runs_stop_stops_an_exec_script_that_calls_nothing_more(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """Before: ``runs stop`` refused the run's further calls, and a script making none ran
    on to its timeout."""
    code = (
        'import { tools } from "toolscript"; await tools.fx.plainText({ text: "stop68" });'
        ' console.log("CALLED"); setInterval(() => {}, 1000);'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", "--no-check", "--timeout", "120", code],
        cwd=gateway.directory,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        assert process.stdout.readline() == "CALLED\n"
        run_id = wait_until(
            lambda: running_run(gateway.directory), bool, 30, "the exec's run, running"
        )
        stopped = httpx.post(f"{gateway.url}/runs/{run_id}/stop", timeout=30)
        assert stopped.status_code == 200, stopped.text
        _, err = process.communicate(timeout=150)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, err
    assert "ended at its gateway" in err


def test_the_face_stops_a_script_whose_gateway_stopped(tmp_path: Path) -> None:
    """Before: the face's script went on after its gateway stopped; execute answered only
    at --yield-after (45 s) that it was still running."""
    (tmp_path / "gw").mkdir()
    own = GatewayProcess(CONFIG, tmp_path / "gw")
    code = (
        'import { tools, progress } from "toolscript"; await tools.fx.plainText({ text: "x" });'
        ' await progress("CALLED"); setInterval(() => {}, 1000); await new Promise(() => {});'
    )

    async def execute() -> tuple[bool, str]:
        async def called(progress: float, total: float | None, message: str | None) -> None:
            if message == "CALLED":
                await anyio.to_thread.run_sync(own.stop)

        with anyio.fail_after(120):
            async with (
                stdio_client(face_parameters(own)) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool(
                    "execute", {"code": code, "timeout": 100}, progress_callback=called
                )
                text = result.content[0].text  # type: ignore[union-attr]
                assert isinstance(text, str)
                return bool(result.is_error), text

    try:
        failed, text = anyio.run(execute)
    finally:
        own.stop()
    assert failed, text
    assert "gateway stopped while the script ran" in text, text


# -- the catalogue: each attempt refused in a fresh Deno, a spare and the face ----------

CATALOGUE: dict[str, str] = {
    "deno_kill": "Deno.kill(Deno.ppid, 'SIGCONT');",
    "node_kill": "const p = (await import('node:process')).default; p.kill(p.ppid, 'SIGCONT');",
    "os_user": "return JSON.stringify((await import('node:os')).userInfo());",
    "os_home": "return (await import('node:os')).homedir();",
    "os_host": "return (await import('node:os')).hostname();",
    "os_tmpdir": "return (await import('node:os')).tmpdir();",
    "os_interfaces": "return JSON.stringify((await import('node:os')).networkInterfaces());",
    "os_cpus": "return (await import('node:os')).cpus().length;",
    "os_memory": "return (await import('node:os')).totalmem();",
    "os_load": "return (await import('node:os')).loadavg();",
    "os_priority": "(await import('node:os')).setPriority(Deno.ppid, 19);",
    "deno_uid": "return Deno.uid();",
    "deno_gid": "return Deno.gid();",
    "deno_memory": "return JSON.stringify(Deno.systemMemoryInfo());",
    "deno_interfaces": "return JSON.stringify(Deno.networkInterfaces());",
    "deno_uptime": "return Deno.osUptime();",
    "deno_umask": "return Deno.umask();",
    "inspector_open": "(await import('node:inspector')).open(0, '127.0.0.1');",
    "inspector_session": "new (await import('node:inspector')).Session().connect();",
    "require_fs": "const { createRequire } = await import('node:module');"
    " return createRequire('file:///x.js')('fs').readFileSync('{secret}', 'utf8');",
    "require_child_process": "const { createRequire } = await import('node:module');"
    " return createRequire('file:///x.js')('child_process').execSync('id').toString();",
    "spawn_sync": "return JSON.stringify((await import('node:child_process')).spawnSync('id'));",
    "cluster_fork": "(await import('node:cluster')).default.fork();",
    "worker_threads_file": "const wt = await import('node:worker_threads');"
    " return await new Promise((ok, no) => { const w = new wt.Worker("
    '\'require("worker_threads").parentPort.postMessage(require("fs").readFileSync("{secret}", "utf8"))\','
    " { eval: true }); w.on('message', ok); w.on('error', no); });",
    "worker_threads_env": "const wt = await import('node:worker_threads');"
    " return await new Promise((ok, no) => { const w = new wt.Worker("
    "'require(\"worker_threads\").parentPort.postMessage(JSON.stringify(process.env))',"
    " { eval: true, env: wt.SHARE_ENV }); w.on('message', ok); w.on('error', no); });",
    "blob_module_file": "const u = URL.createObjectURL(new Blob([\"import t from 'file://{secret}'"
    " with {type:'text'}; export default t;\"], { type: 'text/javascript' }));"
    " return (await import(u)).default;",
    "data_module_file": "return (await import(\"data:text/javascript,import t from 'file://{secret}'"
    " with {type:'text'}; export default t;\")).default;",
    "data_module_localhost": 'return (await import("data:text/javascript,import t from'
    " 'file://localhost{secret}' with {type:'text'}; export default t;\")).default;",
    "import_file_ip_host": "return (await import('file://127.0.0.1{secret}', { with: { type: 'text' } })).default;",
    "import_file_upper": "return (await import('FILE://{secret}', { with: { type: 'text' } })).default;",
    "import_other_port": "return typeof (await import('http://127.0.0.1:{port}/x.js'));",
    "fetch_127_0_0_2": "return await (await fetch('http://127.0.0.2:{gport}/livez')).text();",
    "fetch_octal": "return await (await fetch('http://0177.0.0.1:{port}/')).text();",
    "fetch_hex": "return await (await fetch('http://0x7f000001:{port}/')).text();",
    "fetch_short": "return await (await fetch('http://127.1:{port}/')).text();",
    "fetch_decimal": "return await (await fetch('http://2130706433:{port}/')).text();",
    "fetch_mapped": "return await (await fetch('http://[::ffff:127.0.0.1]:{port}/')).text();",
    "unix_proxy": "const client = Deno.createHttpClient({ proxy: { transport: 'unix', path: '{socket}' } });"
    " return await (await fetch('http://127.0.0.1:{gport}/livez', { client })).text();",
    "unix_connect": "await Deno.connect({ transport: 'unix', path: '{socket}' });",
    "connect_tls": "await Deno.connectTls({ hostname: '127.0.0.1', port: {port} });",
    "listen_gateway_port": "Deno.listen({ hostname: '127.0.0.1', port: {gport} });",
    "serve_gateway_port": "const s = Deno.serve({ hostname: '127.0.0.1', port: {gport}, onListen() {} },"
    " () => new Response('x')); await s.shutdown();",
    "node_listen": "const net = await import('node:net'); await new Promise((ok, no) => {"
    " const s = net.createServer(); s.on('error', no); s.listen({gport}, '127.0.0.1', () => ok(1)); });",
    "node_net": "const net = await import('node:net'); await new Promise((ok, no) => {"
    " net.connect({port}, '127.0.0.1', () => ok(1)).on('error', no); });",
    "node_http": "const http = await import('node:http'); return await new Promise((ok, no) => {"
    " http.get('http://127.0.0.1:{port}/', (r) => { let b = ''; r.on('data', (c) => b += c);"
    " r.on('end', () => ok(b)); }).on('error', no); });",
    "node_https": "const https = await import('node:https'); await new Promise((ok, no) => {"
    " https.get('https://127.0.0.1:{port}/', ok).on('error', no); });",
    "node_http2": "const h2 = await import('node:http2'); await new Promise((ok, no) => {"
    " const c = h2.connect('http://127.0.0.1:{port}'); c.on('error', no); c.on('connect', ok); });",
    "node_tls": "const tls = await import('node:tls'); await new Promise((ok, no) => {"
    " tls.connect({ port: {port}, host: '127.0.0.1' }, () => ok(1)).on('error', no); });",
    "udp_send": "const dgram = await import('node:dgram'); await new Promise((ok, no) => {"
    " const s = dgram.createSocket('udp4'); s.on('error', no);"
    " s.send('{secret}', {port}, '127.0.0.1', (e) => e ? no(e) : ok(1)); });",
    "udp_any": "const dgram = await import('node:dgram'); await new Promise((ok, no) => {"
    " const s = dgram.createSocket('udp4'); s.on('error', no); s.bind(0, '0.0.0.0', () => ok(1)); });",
    "node_dns": "const dns = await import('node:dns'); return await new Promise((ok, no) =>"
    " dns.lookup('example.com', (e, a) => e ? no(e) : ok(a)));",
    "resolve_dns": "return JSON.stringify(await Deno.resolveDns('example.com', 'A'));",
    "event_source": "return await new Promise((ok, no) => { const e = new EventSource("
    "'http://127.0.0.1:{port}/'); e.onopen = () => ok('open'); e.onerror = () => { e.close();"
    " no(new Error('refused')); }; });",
    "open_kv": "await Deno.openKv();",
    "dev_fd": "return Deno.readTextFileSync('/dev/fd/0');",
    "proc_environ": "return Deno.readTextFileSync('/proc/self/environ');",
    "chdir": "Deno.chdir('{dir}'); return Deno.cwd();",
    "process_chdir": "const p = (await import('node:process')).default; p.chdir('{dir}'); return p.cwd();",
    "sqlite_extension": "const { DatabaseSync } = await import('node:sqlite');"
    " new DatabaseSync(':memory:', { allowExtension: true }).loadExtension('{dir}/lib.so');",
    "sqlite_load_extension_sql": "const { DatabaseSync } = await import('node:sqlite');"
    " return JSON.stringify(new DatabaseSync(':memory:').prepare(\"select load_extension('{dir}/lib.so')\").all());",
    "temp_file": "return Deno.makeTempFileSync();",
    "node_write_tmp": "await (await import('node:fs/promises')).writeFile('{dir}/written.txt', 'x');",
    "run_token_health": "const r = await fetch(Deno.env.get('TOOLSCRIPT_GATEWAY_URL') + '/health');"
    " if (r.status !== 200) throw new Error(String(r.status)); return await r.text();",
    "run_token_search": "const r = await fetch(Deno.env.get('TOOLSCRIPT_GATEWAY_URL') + '/search?q=x');"
    " if (r.status !== 200) throw new Error(String(r.status)); return await r.text();",
    "run_token_types": "const r = await fetch(Deno.env.get('TOOLSCRIPT_GATEWAY_URL') + '/types?names=fx');"
    " if (r.status !== 200) throw new Error(String(r.status)); return await r.text();",
    "run_token_runs": "const r = await fetch(Deno.env.get('TOOLSCRIPT_GATEWAY_URL') + '/runs');"
    " if (r.status !== 200) throw new Error(String(r.status)); return await r.text();",
}
# A worker asking for permissions of its own: Deno refuses the option and ends the run.
WORKER_ASKS = (
    "const w = new Worker('data:text/javascript,postMessage(Deno.readTextFileSync(\"{secret}\"))',"
    " { type: 'module', deno: { permissions: { read: true, env: true } } });"
    " console.log('GOT', await new Promise((ok) => { w.onmessage = (m) => ok(m.data); }));"
)


def catalogue_script(values: dict[str, str]) -> str:
    """Every attempt in one script: each caught (an error thrown later, in a callback, is
    the attempt's too), with what it got or why it failed; printed as JSON."""
    lines = [
        "const seen: Record<string, string> = {};",
        "let fail: (e: unknown) => void = () => {};",
        "addEventListener('error', (e) => { e.preventDefault(); fail(e.error ?? e.message); });",
        "addEventListener('unhandledrejection', (e) => { e.preventDefault(); fail(e.reason); });",
        "async function attempt(name: string, body: () => Promise<unknown>) {",
        "  try {",
        "    const got = await new Promise((ok, no) => { fail = no;"
        " setTimeout(() => no(new Error('no answer')), 5000); body().then(ok, no); });",
        "    seen[name] = 'GOT ' + String(got);",
        "  } catch (e) { seen[name] = 'refused: ' + String(e).slice(0, 300); }",
        "}",
    ]
    for name, attack in CATALOGUE.items():
        for key, value in values.items():
            attack = attack.replace("{" + key + "}", value)
        lines.append(f"await attempt({json.dumps(name)}, async () => {{ {attack} }});")
    lines.append("console.log(JSON.stringify(seen));")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def targets(
    tmp_path_factory: pytest.TempPathFactory,
    gateway: GatewayProcess,
    local_http_server: Callable[[bytes], LocalHTTPServer],
) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("targets")
    (folder / "secret.txt").write_text(SECRET)
    path = folder / "u.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()

    def answer() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s"
                    % (len(SECRET), SECRET.encode())
                )

    threading.Thread(target=answer, daemon=True).start()
    try:
        yield {
            "secret": str(folder / "secret.txt"),
            "dir": str(folder),
            "socket": str(path),
            "port": str(local_http_server(SECRET.encode()).port),
            "gport": str(port_of(gateway)),
        }
    finally:
        listener.close()


def assert_all_refused(printed: str, targets: dict[str, str]) -> None:
    # (the face's answer has the script's stderr after what it printed)
    line = [line for line in printed.splitlines() if line.startswith('{"')][-1]
    seen: dict[str, Any] = json.loads(line)
    assert sorted(seen) == sorted(CATALOGUE), seen
    got = {name: why for name, why in seen.items() if not why.startswith("refused")}
    assert got == {}, got
    leaked = {name: why for name, why in seen.items() if SECRET in why}
    assert leaked == {}, leaked
    assert not (Path(targets["dir"]) / "written.txt").exists()


def test_the_catalogue_is_refused_in_a_fresh_deno(
    gateway: GatewayProcess, targets: dict[str, str], tmp_path: Path
) -> None:
    done = exec_script(gateway, catalogue_script(targets), tmp_path, "--no-check")
    assert done.returncode == 0, done.stderr[-3000:]
    assert_all_refused(done.stdout, targets)


def test_a_worker_gets_no_permission_it_asks_for(
    gateway: GatewayProcess, targets: dict[str, str], tmp_path: Path
) -> None:
    done = exec_script(
        gateway, WORKER_ASKS.replace("{secret}", targets["secret"]), tmp_path, "--no-check"
    )
    assert done.returncode != 0
    assert "GOT" not in done.stdout and SECRET not in done.stdout + done.stderr


def test_the_catalogue_is_refused_in_a_spare(
    gateway: GatewayProcess, targets: dict[str, str]
) -> None:
    spare = Spare(gateway.url, module_of(gateway), 512)
    exit_code, out, err, _ = run(gateway, catalogue_script(targets), spare)
    assert spare.process.poll() is not None  # the spare ran it
    assert exit_code == 0, err[-3000:]
    assert_all_refused(out, targets)


def test_the_catalogue_is_refused_through_the_face(
    gateway: GatewayProcess, targets: dict[str, str]
) -> None:
    failed, text = face_execute(gateway, catalogue_script(targets), 200, within=240)
    assert not failed, text
    assert_all_refused(text, targets)


# -- timing: nothing outlives the run's timeout ------------------------------------------

LINGERERS = {
    "stdout_closed_then_lives": "Deno.stdout.close(); Deno.stderr.close(); setInterval(() => {}, 100);",
    "busy_unload_after_return": "addEventListener('unload', () => { for (;;) {} }); return 1;",
    "busy_finally": "try { return 1; } finally { for (;;) {} }",
    "atomics_wait": "Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);",
}


@pytest.mark.parametrize("case", list(LINGERERS))
def test_a_lingering_script_ends_at_its_timeout_with_nothing_left(
    case: str, gateway: GatewayProcess, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "toolscript", "exec", "--no-check", "--timeout", "3"),
            LINGERERS[case],
        ],
        cwd=tmp_path,
        env=clean_env(TOOLSCRIPT_GATEWAY_URL=gateway.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    family: list[psutil.Process] = []
    wait_until(
        lambda: deno_of(psutil.Process(process.pid)) or process.poll() is not None,
        bool,
        60,
        "the script's deno",
    )
    family = deno_of(psutil.Process(process.pid)) if process.poll() is None else []
    _, err = process.communicate(timeout=120)
    assert process.returncode == 124, err
    _, alive = psutil.wait_procs(family, timeout=10)
    assert alive == []


def test_memory_past_the_cap_is_stopped_through_the_face(gateway: GatewayProcess) -> None:
    code = (
        "for (let i = 0; i < 8; i++) new Worker('data:text/javascript,"
        "const a = new Uint8Array(1024 ** 3); a.fill(1); setInterval(() => {}, 1000)',"
        " { type: 'module' }); await new Promise((r) => setTimeout(r, 60000));"
    )
    failed, text = face_execute(gateway, code, 120, within=200)
    assert failed, text
    assert "MB of memory in all" in text, text
