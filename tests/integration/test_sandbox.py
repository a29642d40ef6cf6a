"""Real escape attempts from a toolscript; every one must fail without leaking anything."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, LocalHTTPServer, clean_env, running_gateway

SECRET = "toolscript-sandbox-canary-7f3a9"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running_gateway({}, tmp_path_factory.mktemp("sandbox")) as started:
        yield started


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("secret") / "secret.txt"
    path.write_text(SECRET)
    (path.parent / "secret.json").write_text(json.dumps({"secret": SECRET}))
    return path


@pytest.fixture(scope="module")
def other_server(local_http_server: Callable[[bytes], LocalHTTPServer]) -> int:
    """A local HTTP server that is not the gateway; it must stay out of reach."""
    return local_http_server(SECRET.encode()).port


def attempt(
    gateway: GatewayProcess, code: str, tmp_path: Path, home: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", "--no-check", code],
        cwd=tmp_path,
        env=clean_env(
            TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_GATEWAY_URL=gateway.url, SANDBOX_CANARY=SECRET
        ),
        capture_output=True,
        text=True,
        timeout=120,
    )


# Deno's refusals, and exec's own words for them (it has no --allow-* flag to suggest).
REFUSALS = (
    "NotCapable",
    "Requires ",
    "--no-npm",
    "scripts cannot",
    "scripts reach only",
    "scripts import only",
)


def assert_refused(result: subprocess.CompletedProcess[str]) -> None:
    output = result.stdout + result.stderr
    assert any(refusal in result.stderr for refusal in REFUSALS), output
    assert SECRET not in output, output
    assert "root:x:0:0" not in output, output
    assert "ESCAPED" not in result.stdout, output


def escape_cases(secret: Path, port: int, gateway_port: int) -> dict[str, str]:
    s = str(secret)
    url = secret.as_uri()
    return {
        "deno_read": f'console.log("ESCAPED", await Deno.readTextFile("{s}"));',
        "deno_read_sync": 'console.log("ESCAPED", Deno.readTextFileSync("/etc/passwd"));',
        "node_fs": f'import fs from "node:fs"; console.log("ESCAPED", fs.readFileSync("{s}", "utf8"));',
        "fetch_file": f'console.log("ESCAPED", await (await fetch("{url}")).text());',
        "static_import_text": f'import text from "{s}" with {{ type: "text" }}; console.log("ESCAPED", text);',
        "static_import_passwd": 'import text from "/etc/passwd" with { type: "text" }; console.log("ESCAPED", text);',
        "dynamic_import_text": f'const m = await import("{url}", {{ with: {{ type: "text" }} }}); console.log("ESCAPED", m.default);',
        "dynamic_import_json": f'const m = await import("{secret.with_suffix(".json").as_uri()}", {{ with: {{ type: "json" }} }}); console.log("ESCAPED", JSON.stringify(m.default));',
        "dynamic_import_code": f'await import("{url}"); console.log("ESCAPED");',
        "dynamic_import_absolute": f'const m = await import("{s}", {{ with: {{ type: "text" }} }}); console.log("ESCAPED", m.default);',
        "dynamic_import_relative": f'const m = await import("../../../../../../../../..{s}", {{ with: {{ type: "text" }} }}); console.log("ESCAPED", m.default);',
        "import_meta_resolve": f'const m = await import(import.meta.resolve("{url}"), {{ with: {{ type: "text" }} }}); console.log("ESCAPED", m.default);',
        "computed_import": f'const p = ["file://", "{s}"].join(""); const m = await import(p, {{ with: {{ type: "text" }} }}); console.log("ESCAPED", m.default);',
        "worker_file": f'const w = new Worker("{url}", {{ type: "module" }}); await new Promise((r, j) => {{ w.onerror = (e) => {{ e.preventDefault(); j(e.message); }}; w.onmessage = r; }});',
        "worker_data_read": f'const w = new Worker("data:text/javascript,postMessage(Deno.readTextFileSync(\\"{s}\\"))", {{ type: "module" }}); const got = await new Promise((r, j) => {{ w.onerror = (e) => {{ e.preventDefault(); j(new Error(e.message)); }}; w.onmessage = (m) => r(m.data); }}); console.log("ESCAPED", got);',
        "write_file": f'await Deno.writeTextFile("{secret.parent}/written.txt", "x"); console.log("ESCAPED");',
        "env_home": 'console.log("ESCAPED", Deno.env.get("HOME"));',
        "env_canary": 'console.log("ESCAPED", Deno.env.get("SANDBOX_CANARY"));',
        "env_all": 'console.log("ESCAPED", JSON.stringify(Deno.env.toObject()));',
        "process_env": 'import process from "node:process"; console.log("ESCAPED", JSON.stringify(process.env));',
        "other_port": f'console.log("ESCAPED", await (await fetch("http://127.0.0.1:{port}/")).text());',
        "localhost_alias": f'console.log("ESCAPED", await (await fetch("http://localhost:{gateway_port}/livez")).text());',
        "ipv6_alias": f'console.log("ESCAPED", await (await fetch("http://[::1]:{gateway_port}/livez")).text());',
        "zero_alias": f'console.log("ESCAPED", await (await fetch("http://0.0.0.0:{port}/")).text());',
        "websocket_other_port": f'new WebSocket("ws://127.0.0.1:{port}/"); await new Promise((r) => setTimeout(r, 200)); console.log("ESCAPED");',
        "tcp_connect": f'const c = await Deno.connect({{ hostname: "127.0.0.1", port: {port} }}); console.log("ESCAPED");',
        "npm_import": 'const m = await import("npm:left-pad"); console.log("ESCAPED", typeof m);',
        "jsr_import": 'const m = await import("jsr:@std/path"); console.log("ESCAPED", typeof m);',
        "gateway_module_by_url": 'const m = await import(Deno.env.get("TOOLSCRIPT_GATEWAY_URL") + "/runtime/tools.ts"); console.log("ESCAPED", typeof m);',
        "https_import": 'const m = await import("https://deno.land/std/path/mod.ts"); console.log("ESCAPED", typeof m);',
        "subprocess": 'const out = await new Deno.Command("/bin/cat", { args: ["/etc/passwd"] }).output(); console.log("ESCAPED", new TextDecoder().decode(out.stdout));',
        "node_child_process": 'import { execSync } from "node:child_process"; console.log("ESCAPED", execSync("cat /etc/passwd").toString());',
        "dlopen": 'const lib = Deno.dlopen("libc.so.6", { getpid: { parameters: [], result: "i32" } }); console.log("ESCAPED", lib.symbols.getpid());',
        "system_info": 'console.log("ESCAPED", Deno.hostname(), Deno.osRelease());',
    }


CASES = list(escape_cases(Path("/x"), 1, 1))


@pytest.mark.parametrize("case", CASES)
def test_escape_attempt_fails(
    case: str,
    gateway: GatewayProcess,
    secret_file: Path,
    other_server: int,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    gateway_port = int(gateway.url.split(":")[2].split("/")[0])
    code = escape_cases(secret_file, other_server, gateway_port)[case]
    result = attempt(gateway, code, tmp_path, tmp_path_factory.getbasetemp() / "home")
    assert result.returncode != 0, result.stdout + result.stderr
    assert_refused(result)
    if case == "write_file":
        assert not (secret_file.parent / "written.txt").exists()


def test_the_gateway_itself_stays_reachable(
    gateway: GatewayProcess, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A script's URL is its run's: tool calls and the module, nothing else of the gateway.
    code = (
        'const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");'
        'const a = await fetch(url + "/runtime/hash"); await a.body?.cancel();'
        'const b = await fetch(url + "/health"); await b.body?.cancel();'
        "console.log(a.status, b.status);"
    )
    result = attempt(gateway, code, tmp_path, tmp_path_factory.getbasetemp() / "home")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "200 401\n"
