"""The gateway serves the generated client; Deno imports it and calls real tools."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    GatewayProcess,
    deno_bin,
    deno_env,
    fixture_server,
    python_bin,
    running_gateway,
    toolscript_cli,
    wait_until,
)
from tests.integration.test_spare_sandbox import module_of


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    config = {
        "mcpServers": {
            "time": {"command": python_bin("mcp-server-time")},
            "fx": fixture_server(),
        }
    }
    with running_gateway(config, tmp_path_factory.mktemp("runtime")) as started:
        yield started


def run_deno(
    gateway: GatewayProcess, code: str, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    host = gateway.url.split("/")[2]
    script = tmp_path / "script.ts"
    script.write_text(code.replace("MODULE", gateway.url + "/runtime/tools.ts"))
    return subprocess.run(
        [
            deno_bin(),
            "run",
            "--check",
            f"--allow-import={host}",
            f"--allow-net={host}",
            "--no-prompt",
            str(script),
        ],
        env=deno_env(tmp_path / "deno"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_whole_module(gateway: GatewayProcess) -> None:
    response = gateway.client.get("runtime/tools.ts")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/typescript")
    assert "export class ToolError" in response.text
    assert "getCurrentTime(params: TimeGetCurrentTimeParams)" in response.text
    etag = response.headers["etag"]
    again = gateway.client.get("runtime/tools.ts", headers={"If-None-Match": etag})
    assert again.status_code == 304


def test_the_generated_module_type_checks(gateway: GatewayProcess, tmp_path: Path) -> None:
    """The module (the runtime in it) checks under Deno's strict types: the warm checker
    refuses to check scripts against a module that does not, and every script would then
    be checked by a cold `deno check` (a script importing the module by URL checks only
    its own code, so no other test sees it)."""
    done = subprocess.run(
        [deno_bin(), "check", "--quiet", str(module_of(gateway))],
        env=deno_env(tmp_path / "deno"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_filtered_module(gateway: GatewayProcess) -> None:
    server_only = gateway.client.get("runtime/tools.ts", params={"server": "time"}).text
    assert "convertTime(" in server_only and "plainText(" not in server_only
    for name in ("convert_time", "convertTime"):
        one = gateway.client.get("runtime/tools.ts", params={"server": "time", "tool": name}).text
        assert "convertTime(" in one and "getCurrentTime(" not in one
    assert gateway.client.get("runtime/tools.ts", params={"server": "nope"}).status_code == 404
    missing = gateway.client.get("runtime/tools.ts", params={"server": "time", "tool": "convert"})
    assert missing.status_code == 404
    assert gateway.client.get("runtime/tools.ts", params={"tool": "x"}).status_code == 400


def test_client_calls_tools_and_throws_tool_error(gateway: GatewayProcess, tmp_path: Path) -> None:
    code = """
import { describe, tools, ToolError } from "MODULE";
const now = await tools.time.getCurrentTime({ timezone: "UTC" });
console.log(JSON.stringify({ tz: now.timezone }));
console.log(JSON.stringify(await tools.fx.jsonText({ count: 3 })));
console.log(await tools.fx.plainText());
try {
  await tools.fx.fail({ message: "nope" });
} catch (error) {
  if (!(error instanceof ToolError)) throw error;
  console.log(JSON.stringify({ tool: error.tool, kind: error.kind, status: error.status, message: error.message }));
}
try {
  await tools.time.getCurrentTime({ timezone: 3 as unknown as string });
} catch (error) {
  if (error instanceof ToolError) console.log(error.kind, JSON.stringify(error.details.errors));
}
for (const attempt of [
  () => tools.fx.plainText("not an object" as unknown as { text?: string }),
  () => describe("nope", "some_tool"),
]) {
  try {
    await attempt();
  } catch (error) {
    if (error instanceof ToolError) console.log(JSON.stringify({ tool: error.tool, message: error.message }));
  }
}
"""
    result = run_deno(gateway, code, tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert json.loads(lines[0]) == {"tz": "UTC"}
    assert json.loads(lines[1]) == {"count": 3, "items": [0, 1, 2]}
    assert lines[2] == "hello"
    failure = json.loads(lines[3])
    assert failure["tool"] == "fx__fail"
    assert failure["kind"] == "tool_error"
    assert failure["status"] == 422
    assert failure["message"].startswith("fx.fail: ")  # as users write it; .tool is the id
    assert lines[4].startswith("invalid_arguments ")
    assert "/timezone" in lines[4]
    # Messages name a tool as users write it (approve --tool fx.plain_text); .tool keeps
    # the gateway's name, an identifier: the gateway's own message, and the runtime's
    # prefix of one that does not name the tool.
    not_an_object = json.loads(lines[5])
    assert not_an_object == {
        "tool": "fx__plain_text",
        "message": "arguments for fx.plain_text must be a JSON object",
    }
    unknown_server = json.loads(lines[6])
    assert unknown_server["tool"] == "nope__some_tool"
    assert unknown_server["message"].startswith("nope.some_tool: server not found"), lines[6]
    assert "__" not in failure["message"] + not_an_object["message"]


def test_type_errors_are_caught_by_the_generated_types(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    code = 'import { tools } from "MODULE";\nawait tools.time.getCurrentTime({ timezone: 42 });\n'
    result = run_deno(gateway, code, tmp_path)
    assert result.returncode == 1
    assert "TS2322" in result.stderr


def test_tool_list_change_rebuilds_the_module(tmp_path: Path) -> None:
    with running_gateway({"mcpServers": {"fx": fixture_server()}}, tmp_path) as gateway:
        before = gateway.client.get("runtime/tools.ts")
        assert "brandNew(" not in before.text
        gateway.call("fx__add_tool", {"name": "brand_new"})
        wait_until(
            lambda: gateway.client.get("runtime/tools.ts").text,
            lambda module: "brandNew(" in module,
            10,
            "the module rebuilt with brandNew",
        )
        after = gateway.client.get("runtime/tools.ts")
        assert after.headers["etag"] != before.headers["etag"]
        assert (tmp_path / ".toolscript" / "types" / "fx.ts").read_text().count("brandNew(") == 1


def test_no_servers_serves_empty_tools(tmp_path: Path) -> None:
    with running_gateway({}, tmp_path) as gateway:
        assert "export const tools: Tools = {};" in gateway.client.get("runtime/tools.ts").text


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return toolscript_cli(*args, cwd=cwd, timeout=60)


def test_get_types_markdown(gateway: GatewayProcess) -> None:
    result = cli("get-types", "time", "convert_time", cwd=gateway.directory)
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("```")
    types, example = blocks[1], blocks[3]
    assert types.startswith("typescript\n")
    assert "export type TimeConvertTimeParams" in types
    assert "convertTime(params: TimeConvertTimeParams): Promise<TimeConvertTimeResult>;" in types
    assert 'import { tools } from "toolscript";' in example
    assert "await tools.time.convertTime({" in example
    assert "source_timezone:" in example


def test_get_types_whole_server_and_errors(gateway: GatewayProcess) -> None:
    whole = cli("get-types", "fx", cwd=gateway.directory)
    assert whole.returncode == 0
    assert "plainText(" in whole.stdout and "jsonText(" in whole.stdout
    assert "ToolResult = string" in whole.stdout
    unknown_tool = cli("get-types", "fx", "plain_txt", cwd=gateway.directory)
    assert unknown_tool.returncode == 1
    # named as users write it, the close name suggested so too (not the gateway's fx__...)
    assert "tool not found: fx.plain_txt" in unknown_tool.stderr
    assert "did you mean: fx.plain_text" in unknown_tool.stderr
    assert "fx__" not in unknown_tool.stderr
    unknown_server = cli("get-types", "github", cwd=gateway.directory)
    assert unknown_server.returncode == 1
    assert "server not found: 'github'" in unknown_server.stderr


def _answering(
    answers: list[bytes], step: int = 7, steps: dict[int, int] | None = None
) -> tuple[socket.socket, threading.Thread]:
    """A listener that answers each connection's request with the next of ``answers``,
    ``step`` bytes at a time (``steps``: another for the answer at that index), then
    closes it."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        for index, answer in enumerate(answers):
            size = (steps or {}).get(index, step)
            connection, _ = listener.accept()
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(65536)
                head, _, body = request.partition(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                while len(body) < length:
                    body += connection.recv(65536)
                with contextlib.suppress(OSError):  # read (and closed) before its end
                    for start in range(0, len(answer), size):
                        connection.sendall(answer[start : start + size])
                        time.sleep(0.001)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def _answers_read(
    gateway: GatewayProcess,
    tmp_path: Path,
    answers: list[bytes],
    *,
    step: int = 7,
    steps: dict[int, int] | None = None,
    host: str = "127.0.0.1",
    prelude: str = "",
) -> list[str]:
    """What a script calling a tool once per answer prints (the result as JSON, or the
    ToolError's status and message), run with the module as a file and a stand-in gateway
    at ``host`` sending ``answers`` (``_answering``), as the sandbox allows it: that
    gateway's address, the module, the URL's variable. ``prelude`` runs before the calls."""
    module = module_of(gateway)
    listener, thread = _answering(answers, step, steps)
    port = listener.getsockname()[1]
    script = tmp_path / "calls.ts"
    script.write_text(
        f'import {{ tools, ToolError }} from "{module.as_uri()}";\n{prelude}'
        f"for (let i = 0; i < {len(answers)}; i++) {{\n"
        "  try { console.log(JSON.stringify(await tools.fx.plainText({}))); } catch (e) {\n"
        "    console.log((e as ToolError).status, (e as ToolError).message);\n"
        "  }\n"
        "}\n"
    )
    try:
        done = subprocess.run(
            [
                deno_bin(),
                "run",
                "--no-check",
                f"--allow-net={host}:{port}",
                f"--allow-read={module.parent}",
                "--allow-env=TOOLSCRIPT_GATEWAY_URL",
                str(script),
            ],
            env=deno_env(tmp_path / "deno")
            | {"TOOLSCRIPT_GATEWAY_URL": f"http://{host}:{port}/run-token"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        listener.close()
        thread.join(5)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(answers), done.stdout
    return lines


def test_a_call_reads_answers_sent_in_pieces_chunked_plain_or_cut(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """A tool call speaks HTTP/1.1 on a socket of its own (cheaper than Deno's fetch in a
    process that makes a few requests): an answer in pieces, a chunked one, an error status
    with a plain body and a connection closed before any answer read as the gateway meant."""
    chunked = b'{"said": "in pieces", "n": 1}'
    lines = _answers_read(
        gateway,
        tmp_path,
        [
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked"
            b"\r\n\r\n"
            + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (chunked[:9], chunked[9:]))
            + b"0\r\n\r\n",
            b'HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"plain":1}',
            b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 9\r\n\r\nnot json!",
            b"",
            # chunked, closed before its last chunk: an answer ended early, not a shorter one
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            + b"%x\r\n%s\r\n" % (9, chunked[:9]),
            # chunked, closed inside a chunk
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            + b"%x\r\n%s" % (len(chunked), chunked[:9]),
        ],
    )
    assert json.loads(lines[0]) == {"said": "in pieces", "n": 1}
    assert json.loads(lines[1]) == {"plain": 1}
    assert lines[2].startswith("502 ") and "not json!" in lines[2]
    assert lines[3].startswith("0 ") and "the gateway could not be reached" in lines[3]
    for cut in lines[4:6]:
        assert cut.startswith("0 ") and "the gateway's answer ended early" in cut


def test_a_gateway_named_localhost_is_reached_when_its_first_address_refuses(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """`gateway start --host localhost` listens on 127.0.0.1, and a macOS machine resolves
    `localhost` to ::1 first: Deno.connect tries that address only (fetch tries each). This
    machine resolves it to 127.0.0.1 alone, so the refused first address is played by the
    script (the one failure here not caused for real)."""
    lines = _answers_read(
        gateway,
        tmp_path,
        [b'HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{"plain":1}'],
        host="localhost",
        prelude="(Deno as { connect: unknown }).connect = () => {\n"
        '  throw new Deno.errors.ConnectionRefused("::1 refused");\n'
        "};\n",
    )
    assert json.loads(lines[0]) == {"plain": 1}


def test_a_call_reads_any_answer_right_or_says_the_gateway_could_not_be_reached(
    gateway: GatewayProcess, tmp_path: Path
) -> None:
    """The answer's head and body as HTTP/1.1 frames them, whatever the reads: sent a byte at
    a time (its blank line across reads at every boundary), heads past the array they are
    read into at first (one with its blank line across that array's end), a body longer
    than its length, one read to the connection's end, chunks with extensions and trailers. A length that is not one number (two that differ, hex, an exponent, none)
    and a connection closed inside the head or the body are the gateway not reached, never
    a body cut or read past its end."""
    plain = b'{"plain":1}'
    head = b"HTTP/1.1 200 OK\r\n"
    good = [
        head + b"content-length: 11\r\n\r\n" + plain,
        head + b"x-pad: " + b"p" * 100_000 + b"\r\ncontent-length:  11 \r\n\r\n" + plain,
        head + b"content-length: 11\r\n\r\n" + plain + b"and what follows",
        head + b"content-length: 11\r\ncontent-length: 11, 11\r\n\r\n" + plain,
        head + b"\r\n" + plain,
        head + b"transfer-encoding: chunked\r\n\r\n"
        b"4;name=value\r\n" + plain[:4] + b"\r\n7\r\n" + plain[4:] + b"\r\n"
        b"0\r\nx-trailer: t\r\n\r\n",
    ]
    bad = [
        head + b"content-length: 5\r\ncontent-length: 11\r\n\r\n" + plain,
        head + b"content-length: 11, 5\r\n\r\n" + plain,
        head + b"content-length: 0xb\r\n\r\n" + plain,
        head + b"content-length: 1e1\r\n\r\n" + plain,
        head + b"content-length: +11\r\n\r\n" + plain,
        head + b"content-length:\r\n\r\n" + plain,
        head + b"content-length: 99999999999999999999\r\n\r\n" + plain,
        head + b"content-len",
        head + b"content-length: 11\r\n\r",
        head + b"content-length: 11\r\n\r\n",
        head + b"content-length: 11\r\n\r\n" + plain[:5],
    ]
    # a head whose blank line spans the end of the first array it is read into (16 KB)
    seam = b"content-length: 11\r\nx-pad: "
    seam += b"p" * (16 * 1024 - 2 - len(head) - len(seam)) + b"\r\n\r\n" + plain
    good.append(head + seam)
    lines = _answers_read(gateway, tmp_path, good + bad, step=1, steps={1: 4096, len(good) - 1: 64})
    for answer, line in zip(good, lines, strict=False):
        assert json.loads(line) == {"plain": 1}, (answer[:80], line)
    for answer, line in zip(bad, lines[len(good) :], strict=True):
        assert line.startswith("0 ") and "the gateway could not be reached" in line, (
            answer[:80],
            line,
        )
