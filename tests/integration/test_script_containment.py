"""What an untrusted script must not do to the user's machine, each attack made for real
(real Deno, real gateway): grow the gateway's memory with request bodies it never finishes,
write to disk through Deno's module cache, print past --max-output on two streams, drive the
user's terminal with control characters, read what was piped to exec."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import psutil
import pytest

from tests.helpers import GatewayProcess, clean_env, fixture_server, on_a_terminal, running_gateway

MB = 1024 * 1024


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    with running_gateway(
        {"mcpServers": {"fx": fixture_server()}}, tmp_path_factory.mktemp("contain")
    ) as started:
        yield started


def exec_env(gateway: GatewayProcess, home: Path) -> dict[str, str]:
    return clean_env(TOOLSCRIPT_HOME=str(home), TOOLSCRIPT_GATEWAY_URL=gateway.url)


def exec_script(
    gateway: GatewayProcess, home: Path, cwd: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolscript", "exec", *args],
        cwd=cwd,
        env=exec_env(gateway, home),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


# A hundred tool calls, each streaming a body one byte short of the gateway's 8 MB limit and
# never finishing it; the script ends once every body was sent or answered.
UNFINISHED_BODIES = """
const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!;
const size = 8 * 1024 * 1024 - 1;
const piece = new Uint8Array(64 * 1024).fill(120);
let settled = 0;
for (let i = 0; i < 100; i++) {
  let sent = 0;
  const body = new ReadableStream({
    pull(controller) {
      if (sent >= size) return new Promise(() => {});
      const n = Math.min(piece.length, size - sent);
      controller.enqueue(piece.subarray(0, n));
      sent += n;
      if (sent >= size) settled++;
    },
  });
  fetch(`${url}/tools/fx__plain_text`, { method: "POST", body, duplex: "half" } as RequestInit)
    .then((r) => { settled++; return r.body?.cancel(); }, () => { settled++; });
}
while (settled < 100) await new Promise((r) => setTimeout(r, 100));
await new Promise((r) => setTimeout(r, 2000));
console.log("DONE");
Deno.exit(0);
"""


def _established(process: psutil.Process) -> int:
    return sum(1 for c in process.net_connections("tcp") if c.status == psutil.CONN_ESTABLISHED)


def test_unfinished_request_bodies_cannot_grow_the_gateway(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    served = psutil.Process(gateway.process.pid)
    assert gateway.call("fx__plain_text", {"text": "warm"}).json() == "warm"
    connections = _established(served)
    before = served.memory_info().rss
    script = tmp_path / "bodies.ts"
    script.write_text(UNFINISHED_BODIES)
    attack = subprocess.Popen(
        [sys.executable, "-m", "toolscript", "exec", "--no-check", "--timeout", "150", str(script)],
        cwd=tmp_path,
        env=exec_env(gateway, tmp_path / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = before
    try:
        while attack.poll() is None:
            peak = max(peak, served.memory_info().rss)
            time.sleep(0.1)
    finally:
        attack.kill()
        out, err = attack.communicate()
    assert "DONE" in out, err
    # Bounded, it grows by about 50 MB; unbounded it grew by 600 MB to GBs and kept most.
    assert peak - before < 300 * MB, f"the gateway grew by {(peak - before) // MB} MB"
    deadline = time.monotonic() + 30
    while _established(served) > connections and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _established(served) <= connections, "the run's connections stayed open"
    assert served.memory_info().rss - before < 100 * MB, "the memory was kept after the run"
    assert gateway.call("fx__plain_text", {"text": "after"}).json() == "after"
    assert "request bodies arriving at once" in gateway.log


IMPORTS = """
const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!;
let loaded = 0;
for (let i = 0; i < 40; i++) {
  try { await import(`${url}/runtime/tools.ts?i=${i}`); loaded++; } catch { /* refused */ }
  await import(`data:application/typescript,export const n: number = ${i};`);
}
console.log(`LOADED ${loaded}`);
"""


def test_imports_leave_nothing_on_disk(gateway: GatewayProcess, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ran = exec_script(gateway, home, tmp_path, "--no-check", IMPORTS)
    assert ran.returncode == 0, ran.stderr
    assert "LOADED 0" in ran.stdout  # remote imports are refused
    host = gateway.url.split("/")[2]
    kept = [str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()]
    assert not [p for p in kept if "/remote/" in p or "/gen/data/" in p], kept
    assert not [p for p in kept if p.startswith("run/deno-")], "the run's DENO_DIR was left"
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert host.replace(":", "_port_").encode() not in data, path
            assert gateway.url.rsplit("/", 1)[0].encode() not in data, path
    # A check's pass is still kept: a script checked once is not checked again (by the
    # gateway's warm checker, or by Deno itself while that one starts).
    checked = exec_script(gateway, home, tmp_path, "const n: number = 1; return n;")
    assert checked.returncode == 0 and checked.stdout.strip() == "1", checked.stderr
    marks = [p.name for p in (home / "scripts").rglob(".*.checked-*")]
    assert marks, sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())


def test_max_output_caps_both_streams_together(gateway: GatewayProcess, tmp_path: Path) -> None:
    code = (
        'console.log("o".repeat(90006));\n'
        'await Deno.stderr.write(new TextEncoder().encode("e".repeat(90001)));\n'
        'console.log("AFTER");'
    )
    ran = exec_script(
        gateway, tmp_path / "home", tmp_path, "--no-check", "--max-output", "100000", code
    )
    assert ran.returncode == 123, ran.stderr[-300:]
    assert ran.stdout.count("o") + ran.stderr.count("e") <= 100_000
    # Whichever stream came first was printed; the other stopped the script (stderr) or
    # went to the file with a preview printed (stdout).
    assert "printed more than 100000 bytes" in ran.stderr or "output cut:" in ran.stderr


CONTROLS = (
    'const codes = "a\\x1b]52;c;cHduZWQ=\\x07b\\x1b]0;title\\x07c\\x1b[2J\\x9bd\\r\\n";\n'
    "console.log(codes);\n"
    "console.error(codes);\n"
    'return { text: "\\x1b[2J\\u0085" };'
)


def test_control_characters_reach_a_terminal_as_escapes(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    shown = on_a_terminal(
        "exec", "--no-check", CONTROLS, cwd=tmp_path, env=exec_env(gateway, tmp_path / "home")
    )
    text = shown.decode()
    assert (
        text.count("a\\u001b]52;c;cHduZWQ=\\u0007b\\u001b]0;title\\u0007c\\u001b[2J\\u009bd") == 2
    )
    assert not any(c in text for c in "\x1b\x07\x9b"), text
    # stdout's result and stderr's copy reach the terminal in either order
    (returned,) = [line for line in text.splitlines() if line.startswith("{")]
    assert json.loads(returned) == {"text": "\x1b[2J\x85"}  # still valid JSON
    piped = exec_script(gateway, tmp_path / "home", tmp_path, "--no-check", CONTROLS)
    assert piped.stdout.startswith("a\x1b]52;"), "output to a pipe is passed on as it is"


def test_the_mcp_face_shows_control_characters_as_escapes(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolscript", "mcp", "--config", str(gateway.config_path)],
        cwd=str(gateway.directory),
        env=clean_env(TOOLSCRIPT_HOME=str(tmp_path / "home")),
    )

    async def session_work() -> str:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("execute", {"code": CONTROLS})
            return "\n".join(block.text for block in result.content if block.type == "text")

    text = anyio.run(session_work)
    assert "a\\u001b]52;c;cHduZWQ=\\u0007b" in text
    assert not any(c in text for c in "\x1b\x07\x9b\x85"), text


def test_a_script_file_cannot_read_what_is_piped_to_exec(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    script = tmp_path / "reader.ts"
    script.write_text(
        "const buffer = new Uint8Array(100);\n"
        "const n = await Deno.stdin.read(buffer);\n"
        'console.log("READ:" + (n === null ? "nothing" : new TextDecoder().decode(buffer.subarray(0, n))));\n'
    )
    ran = exec_script(
        gateway, tmp_path / "home", tmp_path, "--no-check", str(script), stdin="secret\n"
    )
    assert "secret" not in ran.stdout + ran.stderr
    assert "READ:nothing" in ran.stdout, ran.stderr
    # `exec -` still reads the script itself from stdin
    piped = exec_script(
        gateway, tmp_path / "home", tmp_path, "-", stdin='console.log("from stdin");'
    )
    assert piped.returncode == 0 and piped.stdout == "from stdin\n", piped.stderr
