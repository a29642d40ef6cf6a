"""The libs a script's type check has: Deno's web and ``Deno`` globals, without Node's types
(``plumbing/checkoptions.py``), the same in the warm checker and in ``deno run --check``.

Each script runs twice: through a gateway whose warm checker answers, and through an
ephemeral gateway (no checker: Deno checks it as it starts). Their output must match.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import GatewayProcess, fixture_server, gateway_with_warm_checker, toolscript_cli

CONFIG = {"mcpServers": {"fx": fixture_server()}, "types": {"inferResults": False}}

# Every global a script can use in the sandbox, used once (its output is deterministic).
GLOBALS = """
const timer = setTimeout(() => {}, 10_000);
clearTimeout(timer);
const tick = setInterval(() => {}, 10_000);
clearInterval(tick);
let order = "";
queueMicrotask(() => { order += "micro"; });
await new Promise((done) => setTimeout(done, 1));
const copy = structuredClone({ a: [1, 2] });
const url = new URL("https://example.com/a?b=1");
const params = new URLSearchParams("x=1&y=2");
const bytes = new TextEncoder().encode("hé");
const text = new TextDecoder().decode(bytes);
const id = crypto.randomUUID();
const random = crypto.getRandomValues(new Uint8Array(4));
const digest = await crypto.subtle.digest("SHA-256", bytes);
const controller = new AbortController();
controller.abort();
const elapsed: number = performance.now();
const response: Response = new Response("body", { headers: new Headers({ a: "1" }) });
const request = new Request("https://example.com/");
const target = new EventTarget();
let events = 0;
target.addEventListener("ping", () => { events += 1; });
target.dispatchEvent(new Event("ping"));
target.dispatchEvent(new CustomEvent("ping", { detail: 1 }));
const wasm = typeof WebAssembly.instantiate;
const env: string | undefined = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
console.log([
  order, copy.a.length, url.host, params.get("y"), text, id.length, random.length,
  digest.byteLength, controller.signal.aborted, elapsed >= 0, await response.text(),
  response.headers.get("a"), request.method, events, wasm, env !== undefined,
  atob(btoa("ok")), typeof navigator.userAgent, Temporal !== undefined,
].join(" "));
"""
GLOBALS_OUTPUT = (
    "micro 2 example.com 2 hé 36 4 32 true true body 1 GET 2 function true ok string true\n"
)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("libs-home")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Iterator[GatewayProcess]:
    with gateway_with_warm_checker(CONFIG, tmp_path_factory.mktemp("libs"), home) as started:
        yield started


@pytest.fixture(scope="module")
def cold_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same server in a project with no gateway running: exec starts an ephemeral one.
    Its own deno.json would loosen the check if anything read it."""
    directory = tmp_path_factory.mktemp("libs-cold")
    (directory / ".toolscript.json").write_text(json.dumps(CONFIG))
    loose = {"compilerOptions": {"strict": False, "lib": ["deno.window", "dom"]}}
    (directory / "deno.json").write_text(json.dumps(loose))
    return directory


def run(
    code: str, home: Path, cwd: Path, gateway: GatewayProcess | None = None
) -> subprocess.CompletedProcess[str]:
    env = {"TOOLSCRIPT_HOME": str(home)}
    if gateway is not None:
        env["TOOLSCRIPT_GATEWAY_URL"] = gateway.url
    return toolscript_cli("exec", code, cwd=cwd, env=env, timeout=180)


def both_ways(
    code: str, gateway: GatewayProcess, home: Path, cold_project: Path, tmp_path: Path
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], int]:
    """The script through the warm checker and through Deno's own check, and how many
    checks the warm checker answered for it."""
    code += f"\n// {time.time_ns()}\n"  # never checked before
    before = gateway.checker()["checks"]
    warm = run(code, home, tmp_path, gateway)
    answered = gateway.checker()["checks"] - before
    cold = run(code, home, cold_project)
    return warm, cold, answered


def test_the_sandboxs_globals_check_and_run_both_ways(
    gateway: GatewayProcess, home: Path, cold_project: Path, tmp_path: Path
) -> None:
    warm, cold, answered = both_ways(GLOBALS, gateway, home, cold_project, tmp_path)
    assert answered == 1, "the warm checker did not answer"
    assert (warm.returncode, warm.stdout, warm.stderr) == (0, GLOBALS_OUTPUT, "")
    assert (cold.returncode, cold.stdout, cold.stderr) == (0, GLOBALS_OUTPUT, "")


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (
            "const later: string = queueMicrotask(() => {});",
            "TS2322 [ERROR]: Type 'void' is not assignable to type 'string'.",
        ),
        (
            "const id: number = crypto.randomUUID();",
            "TS2322 [ERROR]: Type '`${string}-${string}-${string}-${string}-${string}`' is not assignable to type 'number'.",
        ),
        (
            "const t: number = setTimeout(() => {}, 1);",
            "TS2322 [ERROR]: Type 'Timeout' is not assignable to type 'number'.",
        ),
        # Node's types declare it, the sandbox has none: the check says so before the run.
        ("console.log(__dirname);", "TS2304 [ERROR]: Cannot find name '__dirname'."),
        # Deno's unstable APIs are not there without their flags, which the sandbox never
        # gives: their types are left out too.
        (
            'Deno.cron("tick", "* * * * *", () => {});',
            "TS2339 [ERROR]: Property 'cron' does not exist on type 'typeof Deno'.",
        ),
    ],
)
def test_an_error_on_a_global_reads_the_same_both_ways(
    gateway: GatewayProcess,
    home: Path,
    cold_project: Path,
    tmp_path: Path,
    code: str,
    error: str,
) -> None:
    warm, cold, answered = both_ways(code, gateway, home, cold_project, tmp_path)
    assert answered == 1, ("the warm checker did not answer", warm, cold)
    assert (warm.returncode, warm.stdout) == (1, ""), warm.stderr
    assert error in warm.stderr and "<inline>.ts:1:" in warm.stderr, warm.stderr
    assert "Type checking failed" in warm.stderr
    assert (cold.returncode, cold.stdout, cold.stderr) == (1, "", warm.stderr)


@pytest.mark.parametrize(
    ("code", "output"),
    [
        # Node's globals run in the sandbox: a script using Node is checked with Node's
        # types, as before, by Deno (the warm checker leaves it).
        (
            "console.log(Buffer.from('hi').toString('base64'), typeof process.env.TOOLSCRIPT_GATEWAY_URL);",
            "aGk= string\n",
        ),
        # After a regular expression holding a quote (which opens no string).
        (
            'const quoted = /"/.test("a"); console.log(quoted, typeof process.pid, "x");',
            "false number x\n",
        ),
        # Named, even when imported.
        (
            'import { Buffer } from "node:buffer";\nconsole.log(Buffer.from("hi").toString("base64"));',
            "aGk=\n",
        ),
        # A `node:` import (Node's timers).
        (
            'import os from "node:os";\nawait new Promise((done) => setTimeout(done, 1));\n'
            "setTimeout((n: number) => n, 1, 2).unref();\nconsole.log(typeof os.platform());",
            "string\n",
        ),
    ],
)
def test_scripts_using_nodes_globals_still_check_and_run(
    gateway: GatewayProcess,
    home: Path,
    cold_project: Path,
    tmp_path: Path,
    code: str,
    output: str,
) -> None:
    warm, cold, answered = both_ways(code, gateway, home, cold_project, tmp_path)
    assert answered == 0
    assert (warm.returncode, warm.stdout, warm.stderr) == (0, output, ""), warm.stderr
    assert (cold.returncode, cold.stdout, cold.stderr) == (0, output, ""), cold.stderr


def test_the_warm_checker_reads_libs_without_nodes_types(
    gateway: GatewayProcess, home: Path
) -> None:
    module = gateway.checker()["module"]
    config = json.loads((home / "checker" / f"deno-{module}.json").read_text())
    libs = config["compilerOptions"]["lib"]
    assert "deno.window" not in libs and "deno.shared_globals" not in libs
    assert {"esnext", "deno.ns", "deno.web", "deno.fetch", "deno.crypto"} <= set(libs)
    (globals_url,) = config["compilerOptions"]["types"]
    globals_text = Path(globals_url.removeprefix("file://")).read_text()
    assert "declare var console: Console;" in globals_text
    assert "declare function setTimeout" in globals_text
    assert '<reference lib="node"' not in globals_text and "<reference" not in globals_text


ENCODE = """import { Buffer } from "node:buffer";

/** Base64 of a text. */
export default async function encode(input: { text: string }): Promise<string> {
  return Buffer.from(input.text).toString("base64");
}
"""


def test_a_saved_script_importing_node_keeps_both_checks_agreeing(
    home: Path, tmp_path: Path
) -> None:
    """Its `node:` import would bring Node's types into the warm checker's program: every
    check against that module has Node's types (Deno's default lib, as before), the
    warm checker's and Deno's alike, even of a script that does not import the module."""
    projects = []
    for name in ("warm", "cold"):
        project = tmp_path / name
        (project / "toolscripts").mkdir(parents=True)
        (project / "toolscripts" / "encode.ts").write_text(ENCODE)
        (project / ".toolscript.json").write_text(json.dumps(CONFIG))
        projects.append(project)
    started = GatewayProcess(CONFIG, projects[0], env={"TOOLSCRIPT_HOME": str(home)})
    # The same module through a gateway without a checker: Deno checks every script.
    unchecked = GatewayProcess(
        CONFIG, projects[1], "--no-warm-checker", env={"TOOLSCRIPT_HOME": str(home)}
    )
    try:
        started.wait_for_health(lambda h: h["checker"]["state"] == "ready", 120, "warm checker")
        call = 'import { scripts } from "toolscript";\n'
        for code, output in [
            (call + 'return await scripts.encode({ text: "hi" });', '"aGk="\n'),
            (call + "const s: string = scripts.encode;", ""),
            ("const here: number = __dirname;", ""),  # Node's types declare it a string
        ]:
            code += f"\n// {time.time_ns()}\n"
            before = started.checker()["checks"]
            warm = run(code, home, projects[0], started)
            assert started.checker()["checks"] == before + 1, "the warm checker did not answer"
            cold = run(code, home, projects[1], unchecked)
            assert warm.stdout == output, warm.stderr
            assert (warm.returncode, warm.stdout, warm.stderr) == (
                cold.returncode,
                cold.stdout,
                cold.stderr,
            )
    finally:
        started.stop()
        unchecked.stop()
